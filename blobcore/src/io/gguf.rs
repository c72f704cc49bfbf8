//! GGUF files (llama.cpp's format for model weights), versions 2 and 3,
//! little-endian. Facts from the GGUF specification and gguf-py:
//!
//! - header: magic `GGUF`, a u32 version, u64 tensor and key/value counts;
//! - key/value pairs: a string key (u64 length + UTF-8 bytes), a u32 value
//!   type (0 u8, 1 i8, 2 u16, 3 i16, 4 u32, 5 i32, 6 f32, 7 bool,
//!   8 string, 9 array, 10 u64, 11 i64, 12 f64) and the value; an array
//!   is a u32 element type, a u64 count and the elements;
//! - tensor infos: name, u32 n_dims, n_dims u64 dims (innermost first,
//!   ggml's `ne`), a u32 ggml type and a u64 offset from the data start,
//!   a multiple of the alignment;
//! - the data starts at the end of the infos rounded up to the alignment
//!   (`general.alignment`, a u32 power of two, default 32); tensors lie in
//!   file order, each at the aligned end of the one before (llama.cpp
//!   refuses any other layout, and so does blobcore: no overlaps).
//!
//! Every count and length is checked against the bytes left before
//! anything is allocated, so a hostile header is a Format error at once.
//! Tensors load in file order as gguf-py's `GGUFReader` gives
//! `tensor.data`: dims reversed into NumPy axis order; F32, F16, BF16, F64
//! and the integer types as typed blobs; block-quantized types as u8 blobs
//! whose last axis holds the row's blocks (`ne0 / block * type_size`
//! bytes), the shape gguf-py's `quant_shape_to_byte_shape` gives.

use crate::blob::Blob;
use crate::blob_map::BlobMap;
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::io::eager::{report_done, Progress, ReadPlan};
use crate::io::{in_file, Cursor};
use crate::mapped::{FileMap, MapMode};
use crate::shape::Shape;
use std::path::Path;

const FORMAT: &str = "gguf";
/// The default data alignment.
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// Deepest nesting of arrays read (arrays of arrays are allowed).
const MAX_DEPTH: usize = 8;
/// The most dims a tensor may have (blobcore's largest rank).
const MAX_DIMS: u32 = 32;

/// A ggml tensor type: its id, name, and block (elements, bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GgmlType {
    /// The id stored in the file.
    pub id: u32,
    /// The name gguf-py gives it (`"Q4_0"`).
    pub name: &'static str,
    /// Elements per block (1 for plain types).
    pub block: u64,
    /// Bytes per block.
    pub type_size: u64,
}

macro_rules! ggml {
    ($($id:literal $name:ident $block:literal $size:literal),* $(,)?) => {
        /// Every ggml type gguf-py knows (ids, names and block sizes from
        /// its `GGML_QUANT_SIZES`).
        pub const GGML_TYPES: &[GgmlType] = &[$(GgmlType { id: $id, name: stringify!($name), block: $block, type_size: $size }),*];
    };
}

ggml! {
    0 F32 1 4, 1 F16 1 2, 2 Q4_0 32 18, 3 Q4_1 32 20, 6 Q5_0 32 22, 7 Q5_1 32 24,
    8 Q8_0 32 34, 9 Q8_1 32 40, 10 Q2_K 256 84, 11 Q3_K 256 110, 12 Q4_K 256 144,
    13 Q5_K 256 176, 14 Q6_K 256 210, 15 Q8_K 256 292, 16 IQ2_XXS 256 66,
    17 IQ2_XS 256 74, 18 IQ3_XXS 256 98, 19 IQ1_S 256 50, 20 IQ4_NL 32 18,
    21 IQ3_S 256 110, 22 IQ2_S 256 82, 23 IQ4_XS 256 136, 24 I8 1 1, 25 I16 1 2,
    26 I32 1 4, 27 I64 1 8, 28 F64 1 8, 29 IQ1_M 256 56, 30 BF16 1 2,
    34 TQ1_0 256 54, 35 TQ2_0 256 66, 39 MXFP4 32 17, 40 NVFP4 64 36, 41 Q1_0 128 18,
}

impl GgmlType {
    /// The type with this id.
    pub fn from_id(id: u32) -> Option<GgmlType> {
        GGML_TYPES.iter().copied().find(|t| t.id == id)
    }

    /// The type with this name (`"Q8_0"`).
    pub fn from_name(name: &str) -> Option<GgmlType> {
        GGML_TYPES.iter().copied().find(|t| t.name == name)
    }

    /// The blobcore dtype of an unquantized type (None for block types).
    pub fn dtype(self) -> Option<DType> {
        Some(match self.name {
            "F32" => DType::F32,
            "F16" => DType::F16,
            "BF16" => DType::BF16,
            "F64" => DType::F64,
            "I8" => DType::I8,
            "I16" => DType::I16,
            "I32" => DType::I32,
            "I64" => DType::I64,
            _ => return None,
        })
    }

    /// The ggml type of a blobcore dtype, where GGUF has one.
    pub fn of_dtype(d: DType) -> Option<GgmlType> {
        GGML_TYPES.iter().copied().find(|t| t.dtype() == Some(d))
    }
}

/// A metadata value, typed as in the file.
#[derive(Clone, Debug, PartialEq)]
pub enum GgufValue {
    /// Type 0.
    U8(u8),
    /// Type 1.
    I8(i8),
    /// Type 2.
    U16(u16),
    /// Type 3.
    I16(i16),
    /// Type 4.
    U32(u32),
    /// Type 5.
    I32(i32),
    /// Type 6.
    F32(f32),
    /// Type 7.
    Bool(bool),
    /// Type 8.
    String(String),
    /// Type 9.
    Array(GgufArray),
    /// Type 10.
    U64(u64),
    /// Type 11.
    I64(i64),
    /// Type 12.
    F64(f64),
}

/// An array value: elements of one type, held compactly.
#[derive(Clone, Debug, PartialEq)]
pub enum GgufArray {
    /// Of type 0.
    U8(Vec<u8>),
    /// Of type 1.
    I8(Vec<i8>),
    /// Of type 2.
    U16(Vec<u16>),
    /// Of type 3.
    I16(Vec<i16>),
    /// Of type 4.
    U32(Vec<u32>),
    /// Of type 5.
    I32(Vec<i32>),
    /// Of type 6.
    F32(Vec<f32>),
    /// Of type 7.
    Bool(Vec<bool>),
    /// Of type 8.
    String(Vec<String>),
    /// Of type 9: arrays.
    Array(Vec<GgufArray>),
    /// Of type 10.
    U64(Vec<u64>),
    /// Of type 11.
    I64(Vec<i64>),
    /// Of type 12.
    F64(Vec<f64>),
}

impl GgufValue {
    /// The value type id.
    pub fn type_id(&self) -> u32 {
        match self {
            GgufValue::U8(_) => 0,
            GgufValue::I8(_) => 1,
            GgufValue::U16(_) => 2,
            GgufValue::I16(_) => 3,
            GgufValue::U32(_) => 4,
            GgufValue::I32(_) => 5,
            GgufValue::F32(_) => 6,
            GgufValue::Bool(_) => 7,
            GgufValue::String(_) => 8,
            GgufValue::Array(_) => 9,
            GgufValue::U64(_) => 10,
            GgufValue::I64(_) => 11,
            GgufValue::F64(_) => 12,
        }
    }
}

/// One tensor's entry in the header.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufTensorInfo {
    /// The tensor's name.
    pub name: String,
    /// Its ggml type.
    pub ggml_type: GgmlType,
    /// Dims as stored (innermost first: ggml's `ne`).
    pub ne: Vec<u64>,
    /// Absolute byte offset of its data in the file.
    pub offset: u64,
    /// Bytes of data.
    pub n_bytes: u64,
}

impl GgufTensorInfo {
    /// The logical shape in NumPy axis order (`ne` reversed).
    pub fn logical_dims(&self) -> Vec<usize> {
        self.ne.iter().rev().map(|&d| d as usize).collect()
    }

    /// The blob this tensor loads as without dequantizing: its dtype and
    /// dims (u8 with the row's block bytes last for block types).
    pub fn stored(&self) -> (DType, Vec<usize>) {
        let mut dims = self.logical_dims();
        match self.ggml_type.dtype() {
            Some(d) => (d, dims),
            None => {
                if let Some(last) = dims.last_mut() {
                    *last = (*last as u64 / self.ggml_type.block * self.ggml_type.type_size) as usize;
                }
                (DType::U8, dims)
            }
        }
    }
}

/// A parsed, checked GGUF header.
#[derive(Clone, Debug, PartialEq)]
pub struct GgufHeader {
    /// 2 or 3.
    pub version: u32,
    /// The data alignment.
    pub alignment: u64,
    /// Every key/value pair, in file order.
    pub metadata: Vec<(String, GgufValue)>,
    /// Every tensor, in file order.
    pub tensors: Vec<GgufTensorInfo>,
    /// Absolute offset of the data section.
    pub data_start: u64,
}

/// gguf-py's name of a value type id (`GGUFValueType`).
fn value_type_name(id: u32) -> &'static str {
    const NAMES: [&str; 13] = ["UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64"];
    NAMES.get(id as usize).copied().unwrap_or("UNKNOWN")
}

/// A float as JSON: a number, or for values JSON cannot hold the strings
/// `"NaN"`, `"Infinity"`, `"-Infinity"`.
fn float_json(x: f64) -> serde_json::Value {
    match serde_json::Number::from_f64(x) {
        Some(n) => serde_json::Value::Number(n),
        None if x.is_nan() => "NaN".into(),
        None if x > 0.0 => "Infinity".into(),
        None => "-Infinity".into(),
    }
}

impl GgufArray {
    /// The element type id.
    fn type_id(&self) -> u32 {
        match self {
            GgufArray::U8(_) => 0,
            GgufArray::I8(_) => 1,
            GgufArray::U16(_) => 2,
            GgufArray::I16(_) => 3,
            GgufArray::U32(_) => 4,
            GgufArray::I32(_) => 5,
            GgufArray::F32(_) => 6,
            GgufArray::Bool(_) => 7,
            GgufArray::String(_) => 8,
            GgufArray::Array(_) => 9,
            GgufArray::U64(_) => 10,
            GgufArray::I64(_) => 11,
            GgufArray::F64(_) => 12,
        }
    }

    /// `{"type": element type name, "value": [...]}`; nested arrays nest.
    fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        let value: Vec<Value> = match self {
            GgufArray::U8(v) => v.iter().map(|&x| x.into()).collect(),
            GgufArray::I8(v) => v.iter().map(|&x| x.into()).collect(),
            GgufArray::U16(v) => v.iter().map(|&x| x.into()).collect(),
            GgufArray::I16(v) => v.iter().map(|&x| x.into()).collect(),
            GgufArray::U32(v) => v.iter().map(|&x| x.into()).collect(),
            GgufArray::I32(v) => v.iter().map(|&x| x.into()).collect(),
            GgufArray::F32(v) => v.iter().map(|&x| float_json(x as f64)).collect(),
            GgufArray::Bool(v) => v.iter().map(|&x| x.into()).collect(),
            GgufArray::String(v) => v.iter().map(|x| x.as_str().into()).collect(),
            GgufArray::Array(v) => v.iter().map(GgufArray::to_json).collect(),
            GgufArray::U64(v) => v.iter().map(|&x| x.into()).collect(),
            GgufArray::I64(v) => v.iter().map(|&x| x.into()).collect(),
            GgufArray::F64(v) => v.iter().map(|&x| float_json(x)).collect(),
        };
        serde_json::json!({"type": value_type_name(self.type_id()), "value": value})
    }
}

impl GgufValue {
    /// `{"type": gguf-py's value type name, "value": ...}`: integers and
    /// bools as JSON numbers and booleans (exact, also past 2^53), floats
    /// as numbers (f32 widened exactly; non-finite ones as the strings
    /// `"NaN"`, `"Infinity"`, `"-Infinity"`), strings as strings, arrays as
    /// `{"type": element type, "value": [...]}`.
    pub fn to_json(&self) -> serde_json::Value {
        let value: serde_json::Value = match self {
            GgufValue::U8(x) => (*x).into(),
            GgufValue::I8(x) => (*x).into(),
            GgufValue::U16(x) => (*x).into(),
            GgufValue::I16(x) => (*x).into(),
            GgufValue::U32(x) => (*x).into(),
            GgufValue::I32(x) => (*x).into(),
            GgufValue::F32(x) => float_json(*x as f64),
            GgufValue::Bool(x) => (*x).into(),
            GgufValue::String(x) => x.as_str().into(),
            GgufValue::Array(a) => a.to_json(),
            GgufValue::U64(x) => (*x).into(),
            GgufValue::I64(x) => (*x).into(),
            GgufValue::F64(x) => float_json(*x),
        };
        serde_json::json!({"type": value_type_name(self.type_id()), "value": value})
    }
}

impl GgufHeader {
    /// The header as JSON text, for callers without the typed structs (C):
    /// `{"version", "alignment", "metadata": [{"key", "type", "value"}...]
    /// in file order (values as [`GgufValue::to_json`]), "tensors":
    /// [{"name", "type" (ggml type name), "shape" (logical, NumPy order),
    /// "offset" (absolute), "n_bytes"}...]}`.
    pub fn to_json(&self) -> String {
        let metadata: Vec<serde_json::Value> = self
            .metadata
            .iter()
            .map(|(k, v)| {
                let mut o = v.to_json();
                if let Some(m) = o.as_object_mut() {
                    m.shift_insert(0, "key".to_string(), k.as_str().into());
                }
                o
            })
            .collect();
        let tensors: Vec<serde_json::Value> = self
            .tensors
            .iter()
            .map(|t| serde_json::json!({"name": t.name, "type": t.ggml_type.name, "shape": t.logical_dims(), "offset": t.offset, "n_bytes": t.n_bytes}))
            .collect();
        serde_json::json!({"version": self.version, "alignment": self.alignment, "metadata": metadata, "tensors": tensors}).to_string()
    }
}

fn u64_le(c: &mut Cursor<'_>, what: &str) -> Result<u64> {
    Ok(u64::from_le_bytes(c.array(what)?))
}

fn string(c: &mut Cursor<'_>, what: &str) -> Result<String> {
    let n = u64_le(c, what)?;
    if n > c.remaining() as u64 {
        return Err(err!(Format, "{FORMAT}: {what}: a string of {n} bytes at offset {} but only {} remain", c.position(), c.remaining()));
    }
    let b = c.take(n as usize, what)?;
    String::from_utf8(b.to_vec()).map_err(|_| err!(Format, "{FORMAT}: {what} is not UTF-8"))
}

/// The smallest encoding of a value of type `t` (to bound array counts).
fn min_size(t: u32) -> Result<u64> {
    Ok(match t {
        0 | 1 | 7 => 1,
        2 | 3 => 2,
        4..=6 => 4,
        8 => 8,
        9 => 12,
        10..=12 => 8,
        _ => return Err(err!(Format, "{FORMAT}: unknown value type {t}")),
    })
}

fn value(c: &mut Cursor<'_>, t: u32, what: &str) -> Result<GgufValue> {
    Ok(match t {
        0 => GgufValue::U8(c.u8(what)?),
        1 => GgufValue::I8(c.u8(what)? as i8),
        2 => GgufValue::U16(c.u16_le(what)?),
        3 => GgufValue::I16(c.u16_le(what)? as i16),
        4 => GgufValue::U32(c.u32_le(what)?),
        5 => GgufValue::I32(c.i32_le(what)?),
        6 => GgufValue::F32(f32::from_le_bytes(c.array(what)?)),
        7 => match c.u8(what)? {
            0 => GgufValue::Bool(false),
            1 => GgufValue::Bool(true),
            b => return Err(err!(Format, "{FORMAT}: {what}: bool byte {b}")),
        },
        8 => GgufValue::String(string(c, what)?),
        9 => GgufValue::Array(array(c, what, 0)?),
        10 => GgufValue::U64(u64_le(c, what)?),
        11 => GgufValue::I64(u64_le(c, what)? as i64),
        12 => GgufValue::F64(f64::from_le_bytes(c.array(what)?)),
        _ => return Err(err!(Format, "{FORMAT}: {what}: unknown value type {t}")),
    })
}

/// Reads `n` elements with `read` into a vector grown as they arrive
/// (never reserved from the count alone).
fn elements<T>(n: u64, mut read: impl FnMut() -> Result<T>) -> Result<Vec<T>> {
    let mut v = Vec::with_capacity(n.min(4096) as usize);
    for _ in 0..n {
        v.push(read()?);
    }
    Ok(v)
}

/// An array: element type, count (checked against the bytes left), elements.
fn array(c: &mut Cursor<'_>, what: &str, depth: usize) -> Result<GgufArray> {
    if depth >= MAX_DEPTH {
        return Err(err!(Format, "{FORMAT}: {what}: arrays nested deeper than {MAX_DEPTH}"));
    }
    let et = c.u32_le(what)?;
    let n = u64_le(c, what)?;
    let least = min_size(et)?;
    if n.checked_mul(least).is_none_or(|b| b > c.remaining() as u64) {
        return Err(err!(Format, "{FORMAT}: {what}: an array of {n} elements of type {et} cannot fit in the {} bytes left", c.remaining()));
    }
    Ok(match et {
        0 => GgufArray::U8(elements(n, || c.u8(what))?),
        1 => GgufArray::I8(elements(n, || Ok(c.u8(what)? as i8))?),
        2 => GgufArray::U16(elements(n, || c.u16_le(what))?),
        3 => GgufArray::I16(elements(n, || Ok(c.u16_le(what)? as i16))?),
        4 => GgufArray::U32(elements(n, || c.u32_le(what))?),
        5 => GgufArray::I32(elements(n, || c.i32_le(what))?),
        6 => GgufArray::F32(elements(n, || Ok(f32::from_le_bytes(c.array(what)?)))?),
        7 => GgufArray::Bool(elements(n, || match c.u8(what)? {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(err!(Format, "{FORMAT}: {what}: bool byte {b}")),
        })?),
        8 => GgufArray::String(elements(n, || string(c, what))?),
        9 => GgufArray::Array(elements(n, || array(c, what, depth + 1))?),
        10 => GgufArray::U64(elements(n, || u64_le(c, what))?),
        11 => GgufArray::I64(elements(n, || Ok(u64_le(c, what)? as i64))?),
        12 => GgufArray::F64(elements(n, || Ok(f64::from_le_bytes(c.array(what)?)))?),
        _ => return Err(err!(Format, "{FORMAT}: {what}: unknown array element type {et}")),
    })
}

/// Parses and checks the header of a whole file held in `bytes`.
pub fn parse_header(bytes: &[u8]) -> Result<GgufHeader> {
    parse_in(&mut Cursor::new(bytes, FORMAT))
}

/// [`parse_header`] from a cursor over the file or a prefix of it.
fn parse_in(c: &mut Cursor<'_>) -> Result<GgufHeader> {
    let c = &mut *c;
    let magic = c.array::<4>("the magic")?;
    if &magic != b"GGUF" {
        return Err(err!(Format, "{FORMAT}: the file does not start with GGUF (found {magic:?})"));
    }
    let version = c.u32_le("the version")?;
    if version.swap_bytes() == 2 || version.swap_bytes() == 3 {
        return Err(err!(Unsupported, "{FORMAT}: a big-endian file (version {}); blobcore reads little-endian GGUF", version.swap_bytes()));
    }
    if version != 2 && version != 3 {
        return Err(err!(Unsupported, "{FORMAT}: version {version}; blobcore reads versions 2 and 3"));
    }
    let n_tensors = u64_le(c, "the tensor count")?;
    let n_kv = u64_le(c, "the key/value count")?;
    // Each pair takes at least 8 (key length) + 4 (type) + 1 bytes, each
    // tensor info 8 + 4 + 4 + 8.
    if n_kv.checked_mul(13).is_none_or(|b| b > c.remaining() as u64) {
        return Err(err!(Format, "{FORMAT}: {n_kv} key/value pairs cannot fit in the {} bytes left", c.remaining()));
    }
    if n_tensors.checked_mul(24).is_none_or(|b| b > c.remaining() as u64) {
        return Err(err!(Format, "{FORMAT}: {n_tensors} tensors cannot fit in the {} bytes left", c.remaining()));
    }
    let mut metadata: Vec<(String, GgufValue)> = Vec::with_capacity(n_kv.min(1024) as usize);
    let mut keys = std::collections::HashSet::new();
    for i in 0..n_kv {
        let key = string(c, &format!("key {i}"))?;
        let t = c.u32_le("a value type")?;
        let v = value(c, t, &format!("key {key:?}"))?;
        if !keys.insert(key.clone()) {
            return Err(err!(Format, "{FORMAT}: key {key:?} appears twice"));
        }
        metadata.push((key, v));
    }
    let alignment = match metadata.iter().find(|(k, _)| k == "general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some((_, GgufValue::U32(a))) if *a != 0 && a.is_power_of_two() => *a as u64,
        Some((_, v)) => return Err(err!(Format, "{FORMAT}: general.alignment is {v:?}; it must be a u32 power of two")),
    };
    let mut infos = Vec::with_capacity(n_tensors.min(1024) as usize);
    let mut names = std::collections::HashSet::new();
    for i in 0..n_tensors {
        let name = string(c, &format!("tensor {i}'s name"))?;
        let n_dims = c.u32_le("n_dims")?;
        if n_dims > MAX_DIMS {
            return Err(err!(Format, "{FORMAT}: tensor {name:?} has {n_dims} dims (at most {MAX_DIMS})"));
        }
        let mut ne = Vec::with_capacity(n_dims as usize); // at most MAX_DIMS
        for _ in 0..n_dims {
            ne.push(u64_le(c, "a dim")?);
        }
        let id = c.u32_le("a ggml type")?;
        let ggml_type = GgmlType::from_id(id).ok_or_else(|| err!(Format, "{FORMAT}: tensor {name:?} has unknown ggml type {id}"))?;
        let offset = u64_le(c, "an offset")?;
        if !names.insert(name.clone()) {
            return Err(err!(Format, "{FORMAT}: tensor {name:?} appears twice"));
        }
        if offset % alignment != 0 {
            return Err(err!(Format, "{FORMAT}: tensor {name:?} starts at data offset {offset}, not a multiple of the alignment {alignment}"));
        }
        let count = ne.iter().try_fold(1u64, |a, &d| a.checked_mul(d)).ok_or_else(|| err!(Format, "{FORMAT}: tensor {name:?}: dims {ne:?} overflow"))?;
        if ne.first().is_some_and(|&r| r % ggml_type.block != 0) || (ne.is_empty() && ggml_type.block != 1) {
            return Err(err!(Format, "{FORMAT}: tensor {name:?}: rows of {:?} elements are not whole {} blocks of {}", ne.first(), ggml_type.name, ggml_type.block));
        }
        let n_bytes = (count / ggml_type.block)
            .checked_mul(ggml_type.type_size)
            .ok_or_else(|| err!(Format, "{FORMAT}: tensor {name:?}: dims {ne:?} of {} overflow a byte count", ggml_type.name))?;
        infos.push((name, ggml_type, ne, offset, n_bytes));
    }
    let end = c.position() as u64;
    let data_start = end.div_ceil(alignment) * alignment;
    let file_len = c.total() as u64;
    let mut tensors = Vec::with_capacity(infos.len());
    // As llama.cpp requires: tensors lie in file order, each starting at
    // the aligned end of the one before (so none overlap).
    let mut expected = 0u64;
    for (name, ggml_type, ne, offset, n_bytes) in infos {
        if offset != expected {
            return Err(err!(Format, "{FORMAT}: tensor {name:?} starts at data offset {offset}; the tensors before it end at {expected} (tensors lie in order, each aligned to {alignment})"));
        }
        expected = n_bytes.div_ceil(alignment).checked_mul(alignment).and_then(|n| n.checked_add(offset)).unwrap_or(u64::MAX);
        let start = data_start.checked_add(offset);
        if start.and_then(|s| s.checked_add(n_bytes)).is_none_or(|e| e > file_len) {
            return Err(err!(Format, "{FORMAT}: tensor {name:?} needs {n_bytes} bytes at data offset {offset} but the file holds {file_len}"));
        }
        let shape_ok = Shape::new(&ne.iter().map(|&d| d as usize).collect::<Vec<_>>()).is_ok();
        if !shape_ok {
            return Err(err!(Format, "{FORMAT}: tensor {name:?}: bad dims {ne:?}"));
        }
        tensors.push(GgufTensorInfo { name, ggml_type, ne, offset: data_start + offset, n_bytes });
    }
    Ok(GgufHeader { version, alignment, metadata, tensors, data_start })
}

/// Reads only the header of the file at `path` (with `pread`, as much of
/// the file's start as the header takes; the data is not touched).
pub fn read_header(path: impl AsRef<Path>) -> Result<GgufHeader> {
    Ok(read_header_len(path.as_ref())?.0)
}

/// [`read_header`] and the file's length.
fn read_header_len(path: &Path) -> Result<(GgufHeader, u64)> {
    crate::io::read_prefix_header(path, FORMAT, parse_in)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_array(out: &mut Vec<u8>, a: &GgufArray) {
    macro_rules! each {
        ($t:expr, $v:expr, |$o:ident, $x:ident| $put:expr) => {{
            out.extend_from_slice(&($t as u32).to_le_bytes());
            out.extend_from_slice(&($v.len() as u64).to_le_bytes());
            for $x in $v {
                let $o = &mut *out;
                $put;
            }
        }};
    }
    match a {
        GgufArray::U8(v) => each!(0, v, |o, x| o.push(*x)),
        GgufArray::I8(v) => each!(1, v, |o, x| o.push(*x as u8)),
        GgufArray::U16(v) => each!(2, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        GgufArray::I16(v) => each!(3, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        GgufArray::U32(v) => each!(4, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        GgufArray::I32(v) => each!(5, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        GgufArray::F32(v) => each!(6, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        GgufArray::Bool(v) => each!(7, v, |o, x| o.push(u8::from(*x))),
        GgufArray::String(v) => each!(8, v, |o, x| put_str(o, x)),
        GgufArray::Array(v) => each!(9, v, |o, x| put_array(o, x)),
        GgufArray::U64(v) => each!(10, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        GgufArray::I64(v) => each!(11, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
        GgufArray::F64(v) => each!(12, v, |o, x| o.extend_from_slice(&x.to_le_bytes())),
    }
}

fn put_value(out: &mut Vec<u8>, v: &GgufValue) {
    out.extend_from_slice(&v.type_id().to_le_bytes());
    match v {
        GgufValue::U8(x) => out.push(*x),
        GgufValue::I8(x) => out.push(*x as u8),
        GgufValue::U16(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::I16(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::U32(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::I32(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::F32(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::Bool(x) => out.push(u8::from(*x)),
        GgufValue::String(x) => put_str(out, x),
        GgufValue::Array(a) => put_array(out, a),
        GgufValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
        GgufValue::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
    }
}

impl BlobMap {
    /// Decodes a GGUF file held in memory into fresh writable blobs (as
    /// [`BlobMap::load_gguf`] without a map).
    pub fn from_gguf_bytes(engine: &Engine, bytes: &[u8]) -> Result<BlobMap> {
        let h = parse_header(bytes)?;
        let mut out = BlobMap::new();
        for t in &h.tensors {
            let (dtype, dims) = t.stored();
            let b = Blob::new(engine, dtype, Shape::new(&dims)?)?;
            let at = t.offset as usize;
            b.copy_from_bytes(&bytes[at..at + t.n_bytes as usize])?;
            out.insert(t.name.clone(), b);
        }
        Ok(out)
    }

    /// The map as a GGUF v3 file: each entry one blob of an unquantized
    /// GGUF type (F32, F16, BF16, F64, I8, I16, I32, I64), dims written
    /// reversed (ggml's `ne`), data aligned to `general.alignment` when
    /// `metadata` sets it (a u32 power of two), else 32; `metadata` then
    /// the map's own string metadata as key/value pairs, in order.
    pub fn to_gguf_bytes(&self, metadata: &[(String, GgufValue)]) -> Result<Vec<u8>> {
        let mut kv: Vec<(String, GgufValue)> = metadata.to_vec();
        for (k, v) in self.metadata() {
            if !kv.iter().any(|(q, _)| q == k) {
                kv.push((k.clone(), GgufValue::String(v.clone())));
            }
        }
        let mut seen = std::collections::HashSet::new();
        for (k, _) in &kv {
            if !seen.insert(k.as_str()) {
                return Err(err!(InvalidArgument, "{FORMAT}: metadata key {k:?} is given twice"));
            }
        }
        let alignment = match kv.iter().find(|(k, _)| k == "general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some((_, GgufValue::U32(a))) if *a != 0 && a.is_power_of_two() => *a as u64,
            Some((_, v)) => return Err(err!(InvalidArgument, "{FORMAT}: general.alignment is {v:?}; it must be a u32 power of two")),
        };
        let mut tensors = Vec::with_capacity(self.len());
        for e in self.entries() {
            let b = match e.blobs() {
                [b] => b,
                other => return Err(err!(InvalidArgument, "{FORMAT}: {:?} holds {} blobs; a tensor is one blob", e.name(), other.len())),
            };
            let t = GgmlType::of_dtype(b.dtype()).ok_or_else(|| {
                err!(DType, "{FORMAT}: tensor {:?} holds {}; GGUF stores float32, float16, bfloat16, float64, int8, int16, int32 and int64", e.name(), b.dtype())
            })?;
            // A view (or a copy): dims that no other thread can change
            // between the header and the bytes.
            let dense = if b.is_dense() { b.slice(&[])? } else { b.copy()? };
            tensors.push((e.name(), t, dense));
        }
        // The header first (small), then room for the whole file at once:
        // memory the system refuses is an error, not an abort, and the
        // tensors' bytes never move once written.
        let mut out = Vec::new();
        out.extend_from_slice(b"GGUF");
        out.extend_from_slice(&3u32.to_le_bytes());
        out.extend_from_slice(&(tensors.len() as u64).to_le_bytes());
        out.extend_from_slice(&(kv.len() as u64).to_le_bytes());
        for (k, v) in &kv {
            put_str(&mut out, k);
            put_value(&mut out, v);
        }
        let mut offset = 0u64;
        for (name, t, b) in &tensors {
            put_str(&mut out, name);
            let dims = b.dims();
            out.extend_from_slice(&(dims.len() as u32).to_le_bytes());
            for d in dims.iter().rev() {
                out.extend_from_slice(&(*d as u64).to_le_bytes());
            }
            out.extend_from_slice(&t.id.to_le_bytes());
            out.extend_from_slice(&offset.to_le_bytes());
            offset += (b.byte_size() as u64).div_ceil(alignment) * alignment;
        }
        let data_start = (out.len() as u64).div_ceil(alignment) * alignment;
        let total = data_start
            .checked_add(offset)
            .and_then(|t| usize::try_from(t).ok())
            .ok_or_else(|| err!(OutOfMemory, "{FORMAT}: the file would be {data_start} + {offset} bytes"))?;
        let mut file = crate::io::room(total, "the GGUF file")?;
        file.extend_from_slice(&out);
        drop(out);
        let pad = |out: &mut Vec<u8>| out.resize((out.len() as u64).div_ceil(alignment) as usize * alignment as usize, 0);
        pad(&mut file);
        for (_, _, b) in &tensors {
            file.extend_from_slice(b.snapshot().into_read()?.bytes());
            pad(&mut file);
        }
        debug_assert_eq!(file.len(), total);
        Ok(file)
    }

    /// Saves the map as a GGUF file (see [`BlobMap::to_gguf_bytes`]),
    /// atomically.
    pub fn save_gguf(&self, path: impl AsRef<Path>, metadata: &[(String, GgufValue)]) -> Result<()> {
        let bytes = self.to_gguf_bytes(metadata)?;
        crate::io::write_file(path.as_ref(), |w| w.write_all(&bytes).map_err(crate::io::io_err))
    }

    /// Loads a GGUF file's tensors in file order, each as gguf-py's
    /// `GGUFReader` gives `tensor.data` (see [`crate::io::gguf`]). With
    /// `mmap` the file is mapped in O(1) and the blobs are read-only views
    /// of it; without, each is read into a fresh writable blob. With
    /// `dequantize`, block-quantized tensors (Q4_0, Q4_1, Q5_0, Q5_1,
    /// Q8_0, Q2_K-Q6_K) become writable f32 blobs of their logical shape,
    /// equal to gguf-py's `gguf.quants.dequantize`; any other block type
    /// is an Unsupported error naming it, raised before anything is made.
    pub fn load_gguf(engine: &Engine, path: impl AsRef<Path>, mmap: bool, dequantize: bool) -> Result<BlobMap> {
        Self::load_gguf_with_progress(engine, path, mmap, dequantize, None)
    }

    /// [`BlobMap::load_gguf`] telling `progress` the bytes read so far and
    /// in all (see [`crate::io::eager`]); returning `false` cancels the
    /// load (an Io error). An eager load reads the tensors with all cores
    /// at once; dequantized tensors are decoded from the mapped file first
    /// and not counted; a mapped load reports `(total, total)` once.
    pub fn load_gguf_with_progress(engine: &Engine, path: impl AsRef<Path>, mmap: bool, dequantize: bool, progress: Option<Progress<'_>>) -> Result<BlobMap> {
        let path = path.as_ref();
        let (h, len) = read_header_len(path)?;
        let map = FileMap::open(path, MapMode::ReadOnly)?;
        if map.bytes().len() as u64 != len {
            return Err(err!(Io, "{}: the file changed while it was opened", path.display()));
        }
        if dequantize {
            if let Some(t) = h.tensors.iter().find(|t| t.ggml_type.dtype().is_none() && !super::ggml_quants::can_dequantize(t.ggml_type)) {
                return Err(err!(
                    Unsupported,
                    "{}: gguf: tensor {:?} is {}, which blobcore cannot dequantize (it dequantizes Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q2_K-Q6_K); load with dequantize=false for its blocks",
                    path.display(),
                    t.name,
                    t.ggml_type.name
                ));
            }
        }
        let mut out = BlobMap::new();
        let mut plan = ReadPlan::new();
        let file = if mmap { 0 } else { plan.open(path)?.0 };
        for t in &h.tensors {
            let bytes = &map.bytes()[t.offset as usize..(t.offset + t.n_bytes) as usize];
            let b = if dequantize && t.ggml_type.dtype().is_none() {
                dequantized(engine, t, bytes)?
            } else {
                let (dtype, dims) = t.stored();
                let shape = Shape::new(&dims).map_err(|e| in_file(err!(Format, "tensor {:?}: {}", t.name, e.message()), path))?;
                if mmap {
                    map.blob(engine, dtype, shape, t.offset as usize)?
                } else {
                    let b = Blob::new(engine, dtype, shape)?;
                    plan.read_blob(file, t.offset, &b)?;
                    b
                }
            };
            out.insert(t.name.clone(), b);
        }
        if mmap {
            report_done(progress, h.tensors.iter().map(|t| t.n_bytes).sum())?;
        } else {
            plan.run(progress)?;
        }
        Ok(out)
    }
}

/// A block-quantized tensor as a fresh f32 blob of its logical shape.
fn dequantized(engine: &Engine, t: &GgufTensorInfo, bytes: &[u8]) -> Result<Blob> {
    let b = Blob::new(engine, DType::F32, Shape::new(&t.logical_dims())?)?;
    {
        let mut w = b.snapshot().into_write()?;
        let out = w.bytes_mut();
        // No unsafe: bytemuck checks the f32 view's alignment and length
        // (blob memory is aligned for its dtype).
        let out: &mut [f32] = bytemuck::try_cast_slice_mut(out).map_err(|e| err!(Internal, "gguf: f32 view of a new blob: {e}"))?;
        super::ggml_quants::dequantize(t.ggml_type, bytes, out)?;
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> BlobMap {
        let e = Engine::cpu();
        let mut m = BlobMap::new();
        m.insert("w", Blob::from_slice(&e, &[2, 3], &[1f32, 2., 3., 4., 5., 6.]).unwrap());
        m.insert("ids", Blob::from_slice(&e, &[3], &[7i64, -8, 9]).unwrap());
        m.insert("h", Blob::from_slice(&e, &[], &[half::f16::from_f32(1.5)]).unwrap());
        m
    }

    #[test]
    fn written_files_read_back_with_their_metadata() {
        let meta = vec![
            ("general.alignment".to_string(), GgufValue::U32(64)),
            ("a".to_string(), GgufValue::Array(GgufArray::Array(vec![GgufArray::String(vec!["x".into(), String::new()]), GgufArray::Bool(vec![true])]))),
            ("f".to_string(), GgufValue::F64(0.25)),
        ];
        let bytes = sample().to_gguf_bytes(&meta).unwrap();
        let h = parse_header(&bytes).unwrap();
        assert_eq!((h.version, h.alignment), (3, 64));
        assert_eq!(h.metadata, meta);
        assert!(h.tensors.iter().all(|t| t.offset % 64 == 0));
        assert_eq!(h.tensors[0].ne, [3, 2]);
        let back = BlobMap::from_gguf_bytes(&Engine::cpu(), &bytes).unwrap();
        assert_eq!(back.get("w").unwrap().to_vec::<f32>().unwrap(), [1., 2., 3., 4., 5., 6.]);
        assert_eq!(back.get("w").unwrap().dims(), [2, 3]);
        assert_eq!(back.get("ids").unwrap().to_vec::<i64>().unwrap(), [7, -8, 9]);
        assert_eq!(back.get("h").unwrap().dims(), Vec::<usize>::new());
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = sample().to_gguf_bytes(&[]).unwrap();
        // The padding after the last tensor's data is optional.
        let h = parse_header(&bytes).unwrap();
        let end = h.tensors.iter().map(|t| t.offset + t.n_bytes).max().unwrap() as usize;
        assert!(end < bytes.len());
        for cut in 0..end {
            assert!(BlobMap::from_gguf_bytes(&Engine::cpu(), &bytes[..cut]).is_err(), "cut {cut}");
        }
    }

    /// A file whose header is larger than the first prefix read (256
    /// KiB): a long string array plus a long string.
    fn big_header_file() -> Vec<u8> {
        let words: Vec<String> = (0..40_000).map(|i| format!("tok{i}")).collect();
        let meta = vec![
            ("tokenizer.ggml.tokens".to_string(), GgufValue::Array(GgufArray::String(words))),
            ("x".to_string(), GgufValue::String("y".repeat(200_000))),
        ];
        sample().to_gguf_bytes(&meta).unwrap()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, rng_seed: proptest::test_runner::RngSeed::Fixed(30), ..Default::default() })]
        /// Reading the header from the file through growing prefixes gives
        /// exactly what parsing the whole file in memory gives, for valid
        /// files and for files with bytes of the header changed or cut.
        #[test]
        fn prefix_reads_equal_whole_parses(edits in proptest::collection::vec((0usize..700_000, proptest::prelude::any::<u8>()), 0..3), cut in proptest::option::of(0usize..700_000)) {
            let mut bytes = big_header_file();
            let h = parse_header(&bytes).unwrap();
            proptest::prop_assert!(h.data_start > 256 << 10);
            for (at, v) in edits {
                let at = at % h.data_start as usize;
                bytes[at] = v;
            }
            if let Some(c) = cut {
                bytes.truncate(c);
            }
            let f = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(f.path(), &bytes).unwrap();
            let from_file = read_header(f.path());
            let in_memory = parse_header(&bytes);
            match (&from_file, &in_memory) {
                (Ok(a), Ok(b)) => proptest::prop_assert_eq!(a, b),
                (Err(a), Err(b)) => proptest::prop_assert_eq!(a.code(), b.code()),
                _ => proptest::prop_assert!(false, "file {:?} vs memory {:?}", from_file.as_ref().map(|_| ()), in_memory.as_ref().map(|_| ())),
            }
        }
    }

    #[test]
    fn the_json_header_keeps_types_values_and_order() {
        let meta = vec![
            ("u8".to_string(), GgufValue::U8(255)),
            ("i8".to_string(), GgufValue::I8(-128)),
            ("u16".to_string(), GgufValue::U16(65535)),
            ("i16".to_string(), GgufValue::I16(-2)),
            ("u32".to_string(), GgufValue::U32(4096)),
            ("i32".to_string(), GgufValue::I32(-7)),
            ("f32".to_string(), GgufValue::F32(0.1)),
            ("nan".to_string(), GgufValue::F32(f32::NAN)),
            ("b".to_string(), GgufValue::Bool(true)),
            ("s".to_string(), GgufValue::String("llama \"q\"".into())),
            ("u64".to_string(), GgufValue::U64(u64::MAX)),
            ("i64".to_string(), GgufValue::I64(i64::MIN)),
            ("f64".to_string(), GgufValue::F64(f64::NEG_INFINITY)),
            ("a".to_string(), GgufValue::Array(GgufArray::Array(vec![GgufArray::String(vec!["x".into()]), GgufArray::F32(vec![1.5])]))),
        ];
        let h = parse_header(&sample().to_gguf_bytes(&meta).unwrap()).unwrap();
        let j: serde_json::Value = serde_json::from_str(&h.to_json()).unwrap();
        assert_eq!((j["version"].as_u64(), j["alignment"].as_u64()), (Some(3), Some(32)));
        let m = j["metadata"].as_array().unwrap();
        let keys: Vec<&str> = m.iter().map(|e| e["key"].as_str().unwrap()).collect();
        assert_eq!(keys, meta.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>());
        let types: Vec<&str> = m.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "FLOAT32", "BOOL", "STRING", "UINT64", "INT64", "FLOAT64", "ARRAY"]);
        assert_eq!(m[0]["value"], 255);
        assert_eq!(m[1]["value"], -128);
        assert_eq!(m[6]["value"].as_f64(), Some(0.1f32 as f64));
        assert_eq!(m[7]["value"], "NaN");
        assert_eq!(m[8]["value"], true);
        assert_eq!(m[9]["value"], "llama \"q\"");
        assert_eq!(m[10]["value"].as_u64(), Some(u64::MAX));
        assert_eq!(m[11]["value"].as_i64(), Some(i64::MIN));
        assert_eq!(m[12]["value"], "-Infinity");
        assert_eq!(m[13]["value"]["type"], "ARRAY");
        assert_eq!(m[13]["value"]["value"][0], serde_json::json!({"type": "STRING", "value": ["x"]}));
        assert_eq!(m[13]["value"]["value"][1], serde_json::json!({"type": "FLOAT32", "value": [1.5]}));
        let t = j["tensors"].as_array().unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0], serde_json::json!({"name": "w", "type": "F32", "shape": [2, 3], "offset": h.tensors[0].offset, "n_bytes": 24}));
    }

    #[test]
    fn bad_saves_are_refused() {
        let mut m = sample();
        m.insert("u", Blob::from_slice(&Engine::cpu(), &[1], &[1u32]).unwrap());
        assert!(matches!(m.to_gguf_bytes(&[]), Err(crate::Error::DType(s)) if s.contains("\"u\"")));
        let bad = [("general.alignment".to_string(), GgufValue::U32(3))];
        assert!(matches!(sample().to_gguf_bytes(&bad), Err(crate::Error::InvalidArgument(_))));
        let twice = [("k".to_string(), GgufValue::U8(1)), ("k".to_string(), GgufValue::U8(2))];
        assert!(matches!(sample().to_gguf_bytes(&twice), Err(crate::Error::InvalidArgument(_))));
    }
}
