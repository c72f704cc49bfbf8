//! Caffe `BlobProto` / `BlobProtoVector` files (`.binaryproto`, the blobs
//! inside `.caffemodel`), encoded with prost derives on the message
//! definitions of `caffe.proto` — no `protoc` at build time.
//!
//! Reading follows Caffe's `Blob::FromProto`: when any legacy
//! `num`/`channels`/`height`/`width` field is present the shape is
//! `[num, channels, height, width]` (an absent one reads 0), otherwise
//! `shape.dim`; `double_data` wins over `data`, and the number of values
//! must equal the shape's element count; a diff is optional and, when
//! present, must have the same count. Both packed and unpacked repeated
//! fields are accepted, as protobuf requires. Unknown fields are skipped,
//! as every protobuf runtime does.
//!
//! Writing follows `Blob::ToProto`: the `shape` form (never the legacy
//! fields), `data` for f32 blobs and `double_data` for f64 blobs, and the
//! diff on request. Other dtypes have no Caffe encoding and are refused.

use crate::blob::Blob;
use crate::dtype::{DType, Element};
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::io::{encoded, file_shape, io_err, read_file, write_file};
use crate::shape::Shape;
use prost::Message;
use std::io::Write;
use std::path::Path;

/// `message BlobShape { repeated int64 dim = 1 [packed = true]; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct BlobShape {
    /// The dims, outermost first.
    #[prost(int64, repeated, packed = "true", tag = "1")]
    pub dim: Vec<i64>,
}

/// `message BlobProto` of `caffe.proto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BlobProto {
    /// The shape form (field 7).
    #[prost(message, optional, tag = "7")]
    pub shape: Option<BlobShape>,
    /// Float data (field 5, packed).
    #[prost(float, repeated, packed = "true", tag = "5")]
    pub data: Vec<f32>,
    /// Float diff (field 6, packed).
    #[prost(float, repeated, packed = "true", tag = "6")]
    pub diff: Vec<f32>,
    /// Double data (field 8, packed); wins over `data` when present.
    #[prost(double, repeated, packed = "true", tag = "8")]
    pub double_data: Vec<f64>,
    /// Double diff (field 9, packed); wins over `diff` when present.
    #[prost(double, repeated, packed = "true", tag = "9")]
    pub double_diff: Vec<f64>,
    /// Legacy 4-D shape: num (field 1).
    #[prost(int32, optional, tag = "1")]
    pub num: Option<i32>,
    /// Legacy 4-D shape: channels (field 2).
    #[prost(int32, optional, tag = "2")]
    pub channels: Option<i32>,
    /// Legacy 4-D shape: height (field 3).
    #[prost(int32, optional, tag = "3")]
    pub height: Option<i32>,
    /// Legacy 4-D shape: width (field 4).
    #[prost(int32, optional, tag = "4")]
    pub width: Option<i32>,
}

/// `message BlobProtoVector { repeated BlobProto blobs = 1; }`
#[derive(Clone, PartialEq, prost::Message)]
pub struct BlobProtoVector {
    /// The blobs, in file order.
    #[prost(message, repeated, tag = "1")]
    pub blobs: Vec<BlobProto>,
}

const FORMAT: &str = "Caffe BlobProto";

/// Caffe blobs are `Blob<float>` or `Blob<double>`: other dtypes are a DType error.
fn check_caffe_dtype(dtype: DType) -> Result<()> {
    match dtype {
        DType::F32 | DType::F64 => Ok(()),
        other => Err(err!(DType, "Caffe blobs hold float32 or float64 values, not {other}")),
    }
}

impl BlobProto {
    /// Decodes a serialized `BlobProto`; malformed protobuf is a Format error.
    pub fn decode_bytes(bytes: &[u8]) -> Result<BlobProto> {
        BlobProto::decode(bytes).map_err(|e| err!(Format, "{FORMAT}: not a valid message: {e}"))
    }

    /// True when any legacy `num`/`channels`/`height`/`width` field is set.
    pub fn has_legacy_shape(&self) -> bool {
        self.num.is_some() || self.channels.is_some() || self.height.is_some() || self.width.is_some()
    }

    /// The blob shape this message describes, by Caffe's `FromProto` rule.
    pub fn blob_shape(&self) -> Result<Shape> {
        if self.has_legacy_shape() {
            let f = |v: Option<i32>| i64::from(v.unwrap_or(0));
            file_shape(FORMAT, &[f(self.num), f(self.channels), f(self.height), f(self.width)])
        } else {
            file_shape(FORMAT, self.shape.as_ref().map_or(&[][..], |s| &s.dim))
        }
    }

    /// Caffe's `ShapeEquals`: with legacy fields the blob must have rank
    /// <= 4 and its legacy shape (padded with 1s on the left) must match;
    /// otherwise the dims must be equal.
    pub fn shape_equals(&self, dims: &[usize]) -> bool {
        if self.has_legacy_shape() {
            if dims.len() > 4 {
                return false;
            }
            let legacy = |i: usize| -> i64 {
                // LegacyShape(i - 4): axes before the blob's first read as 1.
                let pad = 4 - dims.len();
                if i < pad { 1 } else { dims[i - pad] as i64 }
            };
            let f = |v: Option<i32>| i64::from(v.unwrap_or(0));
            [self.num, self.channels, self.height, self.width]
                .iter()
                .enumerate()
                .all(|(i, &v)| legacy(i) == f(v))
        } else {
            let want = self.shape.as_ref().map_or(&[][..], |s| &s.dim);
            want.len() == dims.len() && want.iter().zip(dims).all(|(&a, &b)| a == b as i64)
        }
    }

    /// The data values as f64 (`double_data`) or f32 (`data`), checked
    /// against `count`.
    fn values(&self, count: usize, diff: bool) -> Result<Values<'_>> {
        let (doubles, floats, what) = if diff {
            (&self.double_diff, &self.diff, "diff")
        } else {
            (&self.double_data, &self.data, "data")
        };
        let v = if !doubles.is_empty() { Values::F64(doubles) } else { Values::F32(floats) };
        if v.len() != count {
            return Err(err!(
                Format,
                "{FORMAT}: holds {} {what} values but its shape needs {count}",
                v.len()
            ));
        }
        Ok(v)
    }

    /// A new blob holding this message's data (and diff, when present):
    /// f64 when the message has `double_data`, else f32.
    pub fn to_blob(&self, engine: &Engine) -> Result<Blob> {
        let shape = self.blob_shape()?;
        let data = self.values(shape.count(), false)?;
        let dtype = match data {
            Values::F64(_) => DType::F64,
            Values::F32(_) => DType::F32,
        };
        let blob = Blob::new(engine, dtype, shape)?;
        self.fill(&blob)?;
        Ok(blob)
    }

    /// Caffe's `FromProto(proto, reshape)` into an existing f32 or f64
    /// blob: with `reshape` the blob takes the message's shape (Caffe's
    /// capacity rule), otherwise the shapes must agree by `ShapeEquals`.
    /// Values are converted to the blob's dtype. On error the blob is
    /// unchanged.
    pub fn load_into(&self, blob: &Blob, reshape: bool) -> Result<()> {
        check_caffe_dtype(blob.dtype())?;
        let shape = self.blob_shape()?;
        // Validate everything before changing the blob.
        self.values(shape.count(), false)?;
        if !self.diff.is_empty() || !self.double_diff.is_empty() {
            self.values(shape.count(), true)?;
        }
        if reshape {
            blob.reshape(shape.dims())?;
        } else if !self.shape_equals(&blob.dims()) {
            return Err(err!(
                Shape,
                "the blob's dims {:?} differ from the file's shape {shape} and reshape is false",
                blob.dims()
            ));
        }
        self.fill(blob)
    }

    /// Writes data and the optional diff into a blob of the right count.
    fn fill(&self, blob: &Blob) -> Result<()> {
        let count = blob.count();
        self.values(count, false)?.store(blob)?;
        if !self.diff.is_empty() || !self.double_diff.is_empty() {
            self.values(count, true)?.store(&blob.diff()?)?;
        }
        Ok(())
    }

    /// Caffe's `ToProto`: the shape form with `data` (f32) or
    /// `double_data` (f64), and the diff when `write_diff` (zeros when the
    /// blob never had one). Other dtypes are a DType error.
    pub fn from_blob(blob: &Blob, write_diff: bool) -> Result<BlobProto> {
        let mut p = BlobProto {
            shape: Some(BlobShape { dim: blob.dims().iter().map(|&d| d as i64).collect() }),
            ..BlobProto::default()
        };
        let diff = || -> Result<Option<Blob>> { Ok(if write_diff { Some(diff_or_zeros(blob)?) } else { None }) };
        match blob.dtype() {
            DType::F32 => {
                p.data = blob.to_vec()?;
                if let Some(d) = diff()? {
                    p.diff = d.to_vec()?;
                }
            }
            DType::F64 => {
                p.double_data = blob.to_vec()?;
                if let Some(d) = diff()? {
                    p.double_diff = d.to_vec()?;
                }
            }
            other => {
                return Err(err!(
                    DType,
                    "Caffe files hold float32 or float64 data; convert the {other} blob first"
                ))
            }
        }
        // The dims, data and diff are three looks: another thread may
        // have reshaped the blob between them. Same counts mean the same
        // memory read under the dims of the first look (a reinterpret
        // leaves the data as it is); otherwise nothing is written.
        let count: usize = p.shape.as_ref().map_or(0, |s| s.dim.iter().map(|&d| d as usize).product());
        let lens = [p.data.len() + p.double_data.len(), if write_diff { p.diff.len() + p.double_diff.len() } else { count }];
        if lens.iter().any(|&n| n != count) {
            return Err(err!(Busy, "the blob was reshaped by another thread while it was being saved; nothing was written"));
        }
        Ok(p)
    }
}

/// The blob's diff, or a zero blob of its shape when it never had one
/// (so saving does not create a diff as a side effect).
fn diff_or_zeros(blob: &Blob) -> Result<Blob> {
    match blob.diff_if_created() {
        Some(d) => Ok(d),
        None => blob.clone_zeroed(),
    }
}

/// Decoded values of one repeated field.
enum Values<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
}

impl Values<'_> {
    fn len(&self) -> usize {
        match self {
            Values::F32(v) => v.len(),
            Values::F64(v) => v.len(),
        }
    }

    /// Stores the values into an f32 or f64 blob, converting as Caffe does.
    fn store(&self, blob: &Blob) -> Result<()> {
        match (self, blob.dtype()) {
            (Values::F32(v), DType::F32) => blob.copy_from_slice(v),
            (Values::F64(v), DType::F64) => blob.copy_from_slice(v),
            (Values::F32(v), DType::F64) => blob.copy_from_slice(&convert::<f32, f64>(v)),
            (Values::F64(v), DType::F32) => blob.copy_from_slice(&convert::<f64, f32>(v)),
            (_, other) => check_caffe_dtype(other),
        }
    }
}

fn convert<S: Element, D: Element>(v: &[S]) -> Vec<D> {
    v.iter().map(|&x| D::round_from_f64(x.to_f64())).collect()
}

impl BlobProtoVector {
    /// Decodes a serialized `BlobProtoVector`.
    pub fn decode_bytes(bytes: &[u8]) -> Result<BlobProtoVector> {
        BlobProtoVector::decode(bytes).map_err(|e| err!(Format, "Caffe BlobProtoVector: not a valid message: {e}"))
    }
}

impl Blob {
    /// Loads a Caffe `BlobProto` file (`.binaryproto`) as a new f32 blob
    /// (f64 when the file holds `double_data`), with its diff when the file
    /// has one.
    pub fn load_caffe(engine: &Engine, path: impl AsRef<Path>) -> Result<Blob> {
        Blob::from_caffe_bytes(engine, &read_file(path.as_ref())?)
    }

    /// Decodes a serialized `BlobProto`, as [`Blob::load_caffe`].
    pub fn from_caffe_bytes(engine: &Engine, bytes: &[u8]) -> Result<Blob> {
        BlobProto::decode_bytes(bytes)?.to_blob(engine)
    }

    /// Caffe `ShapeEquals(proto)` for a serialized `BlobProto`: with the
    /// legacy num/channels/height/width fields the blob's legacy shape must
    /// match (rank <= 4, padded with 1s on the left), else the dims must be
    /// equal. Malformed bytes are a `Format` error.
    pub fn shape_equals_caffe(&self, bytes: &[u8]) -> Result<bool> {
        Ok(BlobProto::decode_bytes(bytes)?.shape_equals(&self.dims()))
    }

    /// Caffe `FromProto(proto, reshape)`: reads a serialized `BlobProto`
    /// into this f32 or f64 blob (see [`BlobProto::load_into`]).
    pub fn copy_from_caffe_bytes(&self, bytes: &[u8], reshape: bool) -> Result<()> {
        BlobProto::decode_bytes(bytes)?.load_into(self, reshape)
    }

    /// Caffe `FromProto(proto, reshape)` from a `BlobProto` file into this
    /// f32 or f64 blob (see [`BlobProto::load_into`]).
    pub fn load_caffe_into(&self, path: impl AsRef<Path>, reshape: bool) -> Result<()> {
        check_caffe_dtype(self.dtype())?;
        self.copy_from_caffe_bytes(&read_file(path.as_ref())?, reshape)
    }

    /// Saves the blob as a Caffe `BlobProto` file (shape form; the diff too
    /// when `write_diff`). Only f32 and f64 blobs can be saved.
    pub fn save_caffe(&self, path: impl AsRef<Path>, write_diff: bool) -> Result<()> {
        let bytes = self.to_caffe_bytes(write_diff)?;
        write_file(path.as_ref(), |w| w.write_all(&bytes).map_err(io_err))
    }

    /// The blob serialized as a `BlobProto`.
    pub fn to_caffe_bytes(&self, write_diff: bool) -> Result<Vec<u8>> {
        encoded(&BlobProto::from_blob(self, write_diff)?)
    }

    /// Writes the blob as a `BlobProto` to `w`.
    pub fn write_caffe(&self, w: &mut impl Write, write_diff: bool) -> Result<()> {
        w.write_all(&self.to_caffe_bytes(write_diff)?).map_err(io_err)
    }

    /// Loads a Caffe `BlobProtoVector` file as a list of blobs.
    pub fn load_caffe_vector(engine: &Engine, path: impl AsRef<Path>) -> Result<Vec<Blob>> {
        Blob::caffe_vector_from_bytes(engine, &read_file(path.as_ref())?)
    }

    /// Decodes a serialized `BlobProtoVector`. Any bad blob fails the whole
    /// call, naming its index.
    pub fn caffe_vector_from_bytes(engine: &Engine, bytes: &[u8]) -> Result<Vec<Blob>> {
        BlobProtoVector::decode_bytes(bytes)?
            .blobs
            .iter()
            .enumerate()
            .map(|(i, p)| p.to_blob(engine).map_err(|e| err!(Format, "blob {i} of the BlobProtoVector: {e}")))
            .collect()
    }

    /// Saves blobs as a Caffe `BlobProtoVector` file.
    pub fn save_caffe_vector(blobs: &[&Blob], path: impl AsRef<Path>, write_diff: bool) -> Result<()> {
        let bytes = Blob::caffe_vector_to_bytes(blobs, write_diff)?;
        write_file(path.as_ref(), |w| w.write_all(&bytes).map_err(io_err))
    }

    /// Blobs serialized as a `BlobProtoVector`.
    pub fn caffe_vector_to_bytes(blobs: &[&Blob], write_diff: bool) -> Result<Vec<u8>> {
        let blobs = blobs
            .iter()
            .map(|b| BlobProto::from_blob(b, write_diff))
            .collect::<Result<Vec<_>>>()?;
        encoded(&BlobProtoVector { blobs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn e() -> Engine {
        Engine::cpu()
    }

    /// Hand-encoded legacy message: num=1 channels=2 height=1 width=2,
    /// data unpacked (one key per value), as old Caffe writers did.
    fn legacy_unpacked() -> Vec<u8> {
        let mut v = vec![0x08, 1, 0x10, 2, 0x18, 1, 0x20, 2];
        for x in [1f32, 2., 3., 4.] {
            v.push(0x2d); // field 5, wire type 5 (fixed32)
            v.extend_from_slice(&x.to_le_bytes());
        }
        v
    }

    #[test]
    fn legacy_unpacked_fields_decode() {
        let b = Blob::from_caffe_bytes(&e(), &legacy_unpacked()).unwrap();
        assert_eq!(b.dims(), [1, 2, 1, 2]);
        assert_eq!(b.to_vec::<f32>().unwrap(), [1., 2., 3., 4.]);
        assert!(b.diff_if_created().is_none());
    }

    #[test]
    fn absent_legacy_fields_read_zero() {
        // Only num=3 set: shape [3, 0, 0, 0], no data needed.
        let b = Blob::from_caffe_bytes(&e(), &[0x08, 3]).unwrap();
        assert_eq!(b.dims(), [3, 0, 0, 0]);
    }

    #[test]
    fn double_data_wins_and_diff_round_trips() {
        let b = Blob::from_slice(&e(), &[2, 2], &[1f64, 2., 3., 4.5]).unwrap();
        b.diff().unwrap().copy_from_slice(&[0.5f64, 0., -1., 2.]).unwrap();
        let bytes = b.to_caffe_bytes(true).unwrap();
        let p = BlobProto::decode_bytes(&bytes).unwrap();
        assert!(p.data.is_empty() && p.num.is_none());
        assert_eq!(p.shape.as_ref().unwrap().dim, [2, 2]);
        let c = Blob::from_caffe_bytes(&e(), &bytes).unwrap();
        assert_eq!(c.dtype(), DType::F64);
        assert_eq!(c.to_vec::<f64>().unwrap(), [1., 2., 3., 4.5]);
        assert_eq!(c.diff().unwrap().to_vec::<f64>().unwrap(), [0.5, 0., -1., 2.]);
        // Both data and double_data: double wins.
        let mut q = p.clone();
        q.data = vec![9.; 4];
        assert_eq!(q.to_blob(&e()).unwrap().to_vec::<f64>().unwrap(), [1., 2., 3., 4.5]);
    }

    #[test]
    fn write_diff_without_a_diff_writes_zeros_and_creates_none() {
        let b = Blob::from_slice(&e(), &[3], &[1f32, 2., 3.]).unwrap();
        let p = BlobProto::decode_bytes(&b.to_caffe_bytes(true).unwrap()).unwrap();
        assert_eq!(p.diff, [0., 0., 0.]);
        assert!(b.diff_if_created().is_none());
    }

    #[test]
    fn count_mismatch_and_bad_shapes_are_format_errors() {
        let mut p = BlobProto { shape: Some(BlobShape { dim: vec![2, 3] }), data: vec![1.; 5], ..Default::default() };
        let msg = |p: &BlobProto| match p.to_blob(&e()) {
            Err(Error::Format(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(msg(&p).contains("holds 5 data values but its shape needs 6"));
        p.shape = Some(BlobShape { dim: vec![1 << 40, 1 << 40] });
        assert!(msg(&p).contains("bad shape"));
        p.shape = Some(BlobShape { dim: vec![-1] });
        assert!(msg(&p).contains("negative"));
        p.shape = Some(BlobShape { dim: vec![1; 33] });
        assert!(msg(&p).contains("rank 33"));
        p.shape = Some(BlobShape { dim: vec![5] });
        p.diff = vec![1.; 4];
        assert!(msg(&p).contains("4 diff values"));
    }

    #[test]
    fn from_proto_rules_into_an_existing_blob() {
        let bytes = legacy_unpacked();
        // ShapeEquals pads the blob's shape with 1s on the left.
        let b = Blob::tensor(&e(), DType::F64, &[2, 1, 2]).unwrap();
        b.copy_from_caffe_bytes(&bytes, false).unwrap();
        assert_eq!(b.to_vec::<f64>().unwrap(), [1., 2., 3., 4.]);
        // A shape mismatch without reshape changes nothing.
        let c = Blob::from_slice(&e(), &[4], &[7f32; 4]).unwrap();
        assert!(matches!(c.copy_from_caffe_bytes(&bytes, false), Err(Error::Shape(_))));
        assert_eq!(c.to_vec::<f32>().unwrap(), [7.; 4]);
        c.copy_from_caffe_bytes(&bytes, true).unwrap();
        assert_eq!(c.dims(), [1, 2, 1, 2]);
        // Rank > 4 never equals a legacy shape.
        let d = Blob::tensor(&e(), DType::F32, &[1, 1, 2, 1, 2]).unwrap();
        assert!(matches!(d.copy_from_caffe_bytes(&bytes, false), Err(Error::Shape(_))));
        let i = Blob::tensor(&e(), DType::I32, &[1, 2, 1, 2]).unwrap();
        assert!(matches!(i.copy_from_caffe_bytes(&bytes, false), Err(Error::DType(_))));
    }

    #[test]
    fn other_dtypes_are_refused_on_save() {
        let b = Blob::from_slice(&e(), &[2], &[1i32, 2]).unwrap();
        assert!(matches!(b.to_caffe_bytes(false), Err(Error::DType(m)) if m.contains("int32")));
    }

    #[test]
    fn vectors_round_trip() {
        let a = Blob::from_slice(&e(), &[2], &[1f32, 2.]).unwrap();
        let b = Blob::from_slice(&e(), &[1, 3], &[3f64, 4., 5.]).unwrap();
        let bytes = Blob::caffe_vector_to_bytes(&[&a, &b], false).unwrap();
        let v = Blob::caffe_vector_from_bytes(&e(), &bytes).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].to_vec::<f32>().unwrap(), [1., 2.]);
        assert_eq!(v[1].dims(), [1, 3]);
        assert_eq!(v[1].to_vec::<f64>().unwrap(), [3., 4., 5.]);
        // A single BlobProto is not a vector, and vice versa.
        assert!(matches!(Blob::from_caffe_bytes(&e(), &bytes), Err(Error::Format(_))));
    }

    #[test]
    fn truncated_and_garbage_input_is_a_format_error() {
        let b = Blob::from_slice(&e(), &[4], &[1f32, 2., 3., 4.]).unwrap();
        let bytes = b.to_caffe_bytes(false).unwrap();
        for cut in 1..bytes.len() {
            // Every cut either fails to parse or leaves too few values.
            assert!(matches!(Blob::from_caffe_bytes(&e(), &bytes[..cut]), Err(Error::Format(_))), "cut {cut}");
        }
        let mut g = bytes.clone();
        g.extend_from_slice(&[0xff, 0xff]);
        assert!(matches!(Blob::from_caffe_bytes(&e(), &g), Err(Error::Format(_))));
    }
}
