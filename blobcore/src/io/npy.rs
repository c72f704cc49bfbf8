//! NumPy `.npy` files (format versions 1.0, 2.0 and 3.0).
//!
//! Dtypes: float32, int32, float64, int64, uint8, int8 and float16, in
//! either byte order (`<`, `>`, `=` or `|`); big-endian data is swapped on
//! load. Fortran-order files are converted to row-major on load. Other
//! NumPy dtypes (bool, complex, structured, ...) are a DType error naming
//! them; bfloat16 blobs cannot be saved because NumPy has no bfloat16.
//!
//! The header is parsed here rather than with a crate: the crates that
//! read `.npy` allocate the header length a file claims (up to 4 GiB) and
//! multiply its dims without overflow checks, and hostile input is exactly
//! what this decoder must survive. The parser accepts the Python dict
//! literal NumPy writes (any key order, either quote style, whitespace,
//! trailing commas, `L` suffixes of Python 2 files) and nothing else.

use crate::blob::Blob;
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::io::{byte_order, file_shape, io_err, read_file, to_vec_sized, write_file, Cursor};
use crate::mapped::{FileMap, MapMode};
use std::io::Write;
use std::path::Path;

const FORMAT: &str = ".npy";
const MAGIC: &[u8] = b"\x93NUMPY";
/// NumPy aligns the data to 64 bytes.
const ALIGN: usize = 64;

/// What a header says about the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The element type.
    pub dtype: DType,
    /// True when the data is big-endian.
    pub big_endian: bool,
    /// True when the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<usize>,
}

/// Reads the header, leaving the cursor at the first data byte.
fn read_header(c: &mut Cursor<'_>) -> Result<Header> {
    let magic = c.take(MAGIC.len(), "the magic string")?;
    if magic != MAGIC {
        return Err(err!(Format, "{FORMAT}: not a .npy file (the magic string \\x93NUMPY is missing)"));
    }
    let (major, minor) = (c.u8("the version")?, c.u8("the version")?);
    let len = match major {
        1 => usize::from(c.u16_le("the header length")?),
        2 | 3 => c.u32_le("the header length")? as usize,
        _ => return Err(err!(Format, "{FORMAT}: unknown format version {major}.{minor}")),
    };
    let text = c.take(len, "the header")?;
    let text = std::str::from_utf8(text).map_err(|_| err!(Format, "{FORMAT}: the header is not UTF-8 text"))?;
    parse_header(text)
}

/// Parses the header dict.
fn parse_header(text: &str) -> Result<Header> {
    let mut p = Parser { s: text.as_bytes(), i: 0 };
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    p.expect(b'{')?;
    loop {
        p.ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.ws();
        p.expect(b':')?;
        p.ws();
        let slot_taken = match key.as_str() {
            "descr" => descr.replace(p.string()?).is_some(),
            "fortran_order" => fortran.replace(p.boolean()?).is_some(),
            "shape" => shape.replace(p.tuple()?).is_some(),
            other => return Err(err!(Format, "{FORMAT}: unexpected header key '{other}'")),
        };
        if slot_taken {
            return Err(err!(Format, "{FORMAT}: header key '{key}' appears twice"));
        }
        p.ws();
        if !p.eat(b',') {
            p.ws();
            p.expect(b'}')?;
            break;
        }
    }
    p.ws();
    if p.i != p.s.len() {
        return Err(err!(Format, "{FORMAT}: unexpected text after the header dict"));
    }
    let missing = |k: &str| err!(Format, "{FORMAT}: the header has no '{k}' key");
    let descr = descr.ok_or_else(|| missing("descr"))?;
    let (dtype, big_endian) = parse_descr(&descr)?;
    Ok(Header {
        dtype,
        big_endian,
        fortran_order: fortran.ok_or_else(|| missing("fortran_order"))?,
        shape: shape.ok_or_else(|| missing("shape"))?,
    })
}

/// Maps a NumPy type string (`'<f4'`) to a dtype and byte order.
fn parse_descr(d: &str) -> Result<(DType, bool)> {
    let (order, ty) = match d.as_bytes().first() {
        Some(b'<' | b'>' | b'|' | b'=') => (d.as_bytes()[0], &d[1..]),
        _ => (b'=', d),
    };
    let dtype = match ty {
        "f4" => DType::F32,
        "i4" => DType::I32,
        "f8" => DType::F64,
        "i8" => DType::I64,
        "u1" => DType::U8,
        "i1" => DType::I8,
        "f2" => DType::F16,
        "b1" => DType::Bool,
        "i2" => DType::I16,
        "u2" => DType::U16,
        "u4" => DType::U32,
        "u8" => DType::U64,
        "f16" | "c8" | "c16" | "c32" => {
            return Err(err!(DType, "{FORMAT}: NumPy dtype '{d}' has no blobcore dtype"))
        }
        _ => {
            return Err(err!(
                DType,
                "{FORMAT}: dtype '{d}' is not supported (only plain numeric dtypes are; structured, string and object arrays are not)"
            ))
        }
    };
    let big = match order {
        b'>' => true,
        b'<' => false,
        b'|' if dtype.size() == 1 => false,
        b'|' => return Err(err!(Format, "{FORMAT}: dtype '{d}' needs a byte order")),
        _ => cfg!(target_endian = "big"),
    };
    Ok((dtype, big))
}

/// A tiny recursive-descent reader over the header text; it never
/// recurses, so no input can exhaust the stack.
struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|b| b.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, b: u8) -> Result<()> {
        if self.eat(b) {
            Ok(())
        } else {
            Err(err!(Format, "{FORMAT}: malformed header: expected '{}' at offset {}", b as char, self.i))
        }
    }

    fn string(&mut self) -> Result<String> {
        let q = match self.s.get(self.i) {
            Some(&q @ (b'\'' | b'"')) => q,
            _ => return Err(err!(Format, "{FORMAT}: malformed header: expected a string at offset {}", self.i)),
        };
        let start = self.i + 1;
        let end = self.s[start..]
            .iter()
            .position(|&b| b == q || b == b'\\')
            .map(|n| start + n)
            .filter(|&n| self.s[n] == q)
            .ok_or_else(|| err!(Format, "{FORMAT}: malformed header: unterminated string"))?;
        self.i = end + 1;
        Ok(String::from_utf8_lossy(&self.s[start..end]).into_owned())
    }

    fn boolean(&mut self) -> Result<bool> {
        for (word, v) in [(&b"True"[..], true), (&b"False"[..], false)] {
            if self.s[self.i..].starts_with(word) {
                self.i += word.len();
                return Ok(v);
            }
        }
        Err(err!(Format, "{FORMAT}: malformed header: fortran_order must be True or False"))
    }

    /// `(a, b, ...)` or `[a, b, ...]` of non-negative integers.
    fn tuple(&mut self) -> Result<Vec<usize>> {
        let close = if self.eat(b'(') {
            b')'
        } else if self.eat(b'[') {
            b']'
        } else {
            return Err(err!(Format, "{FORMAT}: malformed header: the shape must be a tuple"));
        };
        let mut dims = Vec::new();
        loop {
            self.ws();
            if self.eat(close) {
                return Ok(dims);
            }
            if dims.len() >= crate::shape::MAX_RANK {
                return Err(err!(Format, "{FORMAT}: the shape has more than {} dims", crate::shape::MAX_RANK));
            }
            dims.push(self.integer()?);
            self.ws();
            if !self.eat(b',') {
                self.ws();
                self.expect(close)?;
                return Ok(dims);
            }
        }
    }

    fn integer(&mut self) -> Result<usize> {
        let start = self.i;
        let mut v: usize = 0;
        while let Some(&b) = self.s.get(self.i).filter(|b| b.is_ascii_digit()) {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(usize::from(b - b'0')))
                .ok_or_else(|| err!(Format, "{FORMAT}: a dim in the shape is too large"))?;
            self.i += 1;
        }
        if self.i == start {
            return Err(err!(Format, "{FORMAT}: malformed header: expected a non-negative integer at offset {start}"));
        }
        self.eat(b'L');
        Ok(v)
    }
}

/// Decodes a `.npy` file held in memory. The data must be exactly as long
/// as the header's shape and dtype say.
pub fn decode(engine: &Engine, bytes: &[u8]) -> Result<Blob> {
    let mut c = Cursor::new(bytes, FORMAT);
    let h = read_header(&mut c)?;
    let dims: Vec<i64> = h.shape.iter().map(|&d| i64::try_from(d).unwrap_or(-1)).collect();
    let shape = file_shape(FORMAT, &dims)?;
    // NumPy's rule: the bytes of the non-zero dims must be addressable,
    // even when a zero dim leaves the array empty.
    let es = h.dtype.size();
    let need = shape.byte_size(h.dtype).map_err(|_| err!(Format, "{FORMAT}: the shape {dims:?} is too large"))?;
    let data = c.take(need, "the data")?;
    c.finish()?;
    let data = byte_order(data, es, h.big_endian != cfg!(target_endian = "big"));
    let blob = Blob::new(engine, h.dtype, shape)?;
    if h.fortran_order && blob.rank() > 1 {
        let mut strides = Vec::with_capacity(h.shape.len());
        let mut s = 1isize;
        for &d in &h.shape {
            strides.push(s);
            s = s.saturating_mul(d as isize);
        }
        // SAFETY: `data` holds count * es bytes (checked above); every
        // index within the dims maps under column-major strides to an
        // element offset below count, so every read is inside `data`.
        unsafe { blob.copy_from_strided(data.as_ptr(), &strides)? };
    } else {
        blob.copy_from_bytes(&data)?;
    }
    Ok(blob)
}

/// Reads just the header of a `.npy` file held in memory.
pub fn header(bytes: &[u8]) -> Result<Header> {
    read_header(&mut Cursor::new(bytes, FORMAT))
}

/// Where the data of the `.npy` file in `bytes` begins (after the header).
pub fn data_offset(bytes: &[u8]) -> Result<usize> {
    let mut c = Cursor::new(bytes, FORMAT);
    read_header(&mut c)?;
    Ok(c.position())
}

/// Encodes a blob as a C-order `.npy` file (version 1.0, or 2.0 when the
/// header needs more than 64 KiB).
pub fn encode(blob: &Blob, w: &mut dyn Write) -> Result<()> {
    let ty = match blob.dtype() {
        DType::F32 => "f4",
        DType::I32 => "i4",
        DType::F64 => "f8",
        DType::I64 => "i8",
        DType::U8 => "u1",
        DType::I8 => "i1",
        DType::F16 => "f2",
        DType::Bool => "b1",
        DType::I16 => "i2",
        DType::U16 => "u2",
        DType::U32 => "u4",
        DType::U64 => "u8",
        d @ (DType::BF16 | DType::F8E4M3Fn | DType::F8E5M2 | DType::F8E8M0Fnu) => {
            return Err(err!(
                DType,
                "{FORMAT}: NumPy has no {d} dtype, so .npy cannot hold it (it holds bool, int8..int64, uint8..uint64, float16, float32 and float64); convert the blob first (astype(numpy.float32))"
            ))
        }
    };
    let order = if blob.dtype().size() == 1 {
        '|'
    } else if cfg!(target_endian = "big") {
        '>'
    } else {
        '<'
    };
    // A view of the whole blob: its dims cannot change under the header
    // and the data (another thread may reshape the blob itself between
    // two looks, which wrote a header that did not match the data).
    let view = blob.slice(&[])?;
    let blob = &view;
    let dims = blob.dims();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    };
    let mut dict = format!("{{'descr': '{order}{ty}', 'fortran_order': False, 'shape': {shape}, }}");
    let v1 = dict.len() + 11 < 65536 - ALIGN;
    let prefix = if v1 { 10 } else { 12 };
    let total = (prefix + dict.len() + 1).div_ceil(ALIGN) * ALIGN;
    dict.extend(std::iter::repeat_n(' ', total - prefix - dict.len() - 1));
    dict.push('\n');
    let mut head = Vec::with_capacity(total);
    head.extend_from_slice(MAGIC);
    if v1 {
        head.extend_from_slice(&[1, 0]);
        head.extend_from_slice(&(dict.len() as u16).to_le_bytes());
    } else {
        head.extend_from_slice(&[2, 0]);
        head.extend_from_slice(&(dict.len() as u32).to_le_bytes());
    }
    head.extend_from_slice(dict.as_bytes());
    w.write_all(&head).map_err(io_err)?;
    blob.for_each_chunk(|piece| w.write_all(piece).map_err(io_err))
}

impl Blob {
    /// Loads a NumPy `.npy` file (see the module docs for the dtypes).
    pub fn load_npy(engine: &Engine, path: impl AsRef<Path>) -> Result<Blob> {
        decode(engine, &read_file(path.as_ref())?)
    }

    /// Decodes a `.npy` file held in memory, as [`Blob::load_npy`].
    pub fn from_npy_bytes(engine: &Engine, bytes: &[u8]) -> Result<Blob> {
        decode(engine, bytes)
    }

    /// Saves the blob as a C-order `.npy` file that `numpy.load` reads.
    pub fn save_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        // Encode straight into the (temporary) file: no extra copy.
        write_file(path.as_ref(), |w| encode(self, w))
    }

    /// The blob serialized as a `.npy` file.
    pub fn to_npy_bytes(&self) -> Result<Vec<u8>> {
        to_vec_sized(self.byte_size().saturating_add(128), |w| encode(self, w))
    }

    /// Writes the blob as a `.npy` file to `w`.
    pub fn write_npy(&self, w: &mut impl Write) -> Result<()> {
        encode(self, w)
    }

    /// `numpy.load(path, mmap_mode=...)`: a `.npy` file whose data the
    /// blob shares through a memory map (O(1), nothing read until
    /// touched). Fortran-order files and data in the other byte order
    /// cannot be viewed as a row-major blob: they are read and converted
    /// into fresh memory instead, as without a map.
    pub fn load_npy_mapped(engine: &Engine, path: impl AsRef<Path>, mode: MapMode) -> Result<Blob> {
        let map = FileMap::open(path.as_ref(), mode)?;
        let bytes = map.bytes();
        let h = header(bytes)?;
        let foreign_order = h.big_endian != cfg!(target_endian = "big") && h.dtype.size() > 1;
        if (h.fortran_order && h.shape.len() > 1) || foreign_order {
            return Blob::from_npy_bytes(engine, bytes);
        }
        let data_at = data_offset(bytes)?;
        let dims: Vec<i64> = h.shape.iter().map(|&d| i64::try_from(d).unwrap_or(-1)).collect();
        let shape = file_shape("NumPy .npy", &dims)?;
        let need = shape.byte_size(h.dtype).map_err(|_| err!(Format, "NumPy .npy: the shape {dims:?} is too large"))?;
        if data_at.checked_add(need) != Some(bytes.len()) {
            return Err(err!(
                Format,
                "NumPy .npy: the header promises {need} data bytes but the file holds {}",
                bytes.len().saturating_sub(data_at)
            ));
        }
        map.blob(engine, h.dtype, shape, data_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn e() -> Engine {
        Engine::cpu()
    }

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&[1, 0]);
        v.extend_from_slice(&(header.len() as u16).to_le_bytes());
        v.extend_from_slice(header.as_bytes());
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn header_is_aligned_and_readable() {
        let b = Blob::from_slice(&e(), &[3], &[1f32, 2., 3.]).unwrap();
        let v = b.to_npy_bytes().unwrap();
        assert_eq!((v.len() - 12) % ALIGN, 0);
        let text = std::str::from_utf8(&v[10..v.len() - 12]).unwrap();
        assert_eq!(text.trim_end(), "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }");
        assert!(text.ends_with('\n'));
        let c = Blob::from_npy_bytes(&e(), &v).unwrap();
        assert_eq!(c.to_vec::<f32>().unwrap(), [1., 2., 3.]);
        // Rank 0 writes "()".
        let s = Blob::tensor(&e(), DType::U8, &[]).unwrap();
        let v = s.to_npy_bytes().unwrap();
        assert!(std::str::from_utf8(&v[10..]).unwrap().starts_with("{'descr': '|u1', 'fortran_order': False, 'shape': (), }"));
        assert_eq!(Blob::from_npy_bytes(&e(), &v).unwrap().rank(), 0);
    }

    #[test]
    fn tolerant_header_syntax() {
        let data: Vec<u8> = [1i32, 2, 3, 4, 5, 6].iter().flat_map(|x| x.to_le_bytes()).collect();
        for h in [
            "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }",
            "{\"shape\":[2,3],\"fortran_order\":False,\"descr\":\"<i4\"}\n",
            "{'descr':'<i4','fortran_order':False,'shape':(2L, 3L)}   \n",
        ] {
            let b = Blob::from_npy_bytes(&e(), &file(h, &data)).unwrap_or_else(|e| panic!("{h}: {e}"));
            assert_eq!(b.dims(), [2, 3]);
            assert_eq!(b.to_vec::<i32>().unwrap(), [1, 2, 3, 4, 5, 6]);
        }
    }

    #[test]
    fn fortran_order_and_big_endian_are_converted() {
        // numpy: np.asfortranarray(np.arange(6).reshape(2, 3)) stores 0 3 1 4 2 5.
        let data: Vec<u8> = [0i32, 3, 1, 4, 2, 5].iter().flat_map(|x| x.to_le_bytes()).collect();
        let b = Blob::from_npy_bytes(&e(), &file("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", &data))
            .unwrap();
        assert_eq!(b.to_vec::<i32>().unwrap(), [0, 1, 2, 3, 4, 5]);
        let data: Vec<u8> = [1.5f64, -2.].iter().flat_map(|x| x.to_be_bytes()).collect();
        let b = Blob::from_npy_bytes(&e(), &file("{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", &data))
            .unwrap();
        assert_eq!(b.to_vec::<f64>().unwrap(), [1.5, -2.]);
    }

    #[test]
    fn bad_headers_and_sizes() {
        let fmt = |v: &[u8]| match Blob::from_npy_bytes(&e(), v) {
            Err(Error::Format(m)) => m,
            other => panic!("{other:?}"),
        };
        let h = |shape: &str| format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        assert!(fmt(&file(&h("(1099511627776,)"), &[])).contains("truncated"));
        assert!(fmt(&file(&h("(1099511627776, 1099511627776)"), &[])).contains("bad shape"));
        assert!(fmt(&file(&h("(99999999999999999999999,)"), &[])).contains("too large"));
        // NumPy's rule over the non-zero dims, whatever their order (numpy.load refuses these too).
        assert!(fmt(&file(&h("(4611686018427387904, 0)"), &[])).contains("too large"));
        assert!(fmt(&file(&h("(0, 9223372036854775807, 9223372036854775807)"), &[])).contains("bad shape"));
        assert!(fmt(&file(&h("(-1,)"), &[])).contains("non-negative integer"));
        assert!(fmt(&file(&h("(1,)"), &[0; 5])).contains("trailing"));
        assert!(fmt(&file(&h("(2,)"), &[0; 7])).contains("truncated"));
        assert!(fmt(&file(&h(&format!("({})", "1,".repeat(33))), &[0; 4])).contains("more than 32"));
        assert!(fmt(b"\x93NUMPY\x01\x00\xff\xff{").contains("truncated"));
        assert!(fmt(b"\x93NUMPY\x02\x00\xff\xff\xff\xff").contains("truncated"));
        assert!(fmt(b"\x93NUMPY\x09\x00").contains("version 9.0"));
        assert!(fmt(b"PK\x03\x04").contains("magic"));
        assert!(fmt(&file("{'descr': '<f4', 'shape': (1,), }", &[0; 4])).contains("no 'fortran_order'"));
        assert!(fmt(&file("{'descr': '<f4', 'descr': '<f4', }", &[])).contains("twice"));
        assert!(fmt(&file("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,) }", &[0; 4])).contains("True or False"));
        assert!(fmt(&file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,) } x", &[0; 4])).contains("after"));
        let d = |descr: &str| Blob::from_npy_bytes(&e(), &file(&format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (), }}"), &[0; 16]));
        assert!(matches!(d("<f16"), Err(Error::DType(m)) if m.contains("'<f16'")));
        assert!(matches!(d("<c16"), Err(Error::DType(_))));
        assert!(matches!(d("<U4"), Err(Error::DType(m)) if m.contains("structured")));
    }

    #[test]
    fn bf16_and_float8_cannot_be_saved() {
        for d in [DType::BF16, DType::F8E4M3Fn, DType::F8E5M2, DType::F8E8M0Fnu] {
            let b = Blob::tensor(&e(), d, &[2]).unwrap();
            assert!(matches!(b.to_npy_bytes(), Err(Error::DType(m)) if m.contains(d.name())));
        }
    }

    #[test]
    fn numpy_descrs_of_bool_and_the_new_integers_round_trip() {
        for (d, descr) in [(DType::Bool, "'|b1'"), (DType::I16, "'<i2'"), (DType::U16, "'<u2'"), (DType::U32, "'<u4'"), (DType::U64, "'<u8'")] {
            let b = Blob::full(&e(), d, &[3], 1.0).unwrap();
            let bytes = b.to_npy_bytes().unwrap();
            assert!(String::from_utf8_lossy(&bytes).contains(descr), "{d}");
            let back = Blob::from_npy_bytes(&e(), &bytes).unwrap();
            assert_eq!(back.dtype(), d);
            assert_eq!(back.cast(DType::F64).unwrap().to_vec::<f64>().unwrap(), [1.0; 3]);
        }
    }
}
