//! Caffe `.caffemodel` weights: a serialized `NetParameter` whose layers
//! carry their learned blobs (`BlobProto`s: weights, then bias, ...).
//!
//! Reading uses prost derives on lean, hand-declared messages with the
//! field numbers of `caffe.proto`: `NetParameter` (`layer` = 100 of
//! `LayerParameter`, the legacy `layers` = 2 of `V1LayerParameter`, whose
//! own legacy `layer` = 1 is a `V0LayerParameter`), and of each layer only
//! its name, type and blobs. Every other field is skipped unparsed, and the
//! blobs' packed values are taken as byte slices of the input (no decoded
//! copy): the file is memory-mapped to decode the messages' framing, and
//! each blob's values are then read once into its new blob with all cores
//! at once ([`crate::io::eager`]), so loading holds one copy of the weights. Blob shapes follow Caffe's `FromProto`
//! (legacy num/channels/height/width blobs load as 4-D); values are f32, or
//! f64 for `double_data`; a diff is loaded when present.
//!
//! The result is a [`BlobMap`] of layer name -> blobs in file order, with
//! each layer's type (V1 enum types under their current names, as Caffe's
//! upgrade gives them); layers without blobs are left out, as pycaffe's
//! `net.params` does. Writing produces a `NetParameter` with only the
//! `layer` field (name, type, blobs), which Caffe's `CopyTrainedLayersFrom`
//! accepts.

use crate::blob::Blob;
use crate::blob_map::BlobMap;
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::io::caffe::{BlobProto, BlobShape};
use crate::io::eager::{Progress, ReadPlan};
use crate::io::{byte_order, in_file, io_err, room, to_vec, write_file};
use crate::mapped::{FileMap, MapMode};
use bytes::Bytes;
use prost::Message;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

const FORMAT: &str = "Caffe NetParameter";

/// `NetParameter`: only the name and the two layer lists.
#[derive(Clone, PartialEq, prost::Message)]
struct NetParameter {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(message, repeated, tag = "100")]
    layer: Vec<LayerParameter>,
    #[prost(message, repeated, tag = "2")]
    layers: Vec<V1LayerParameter>,
}

/// `LayerParameter`: name (1), type (2), blobs (7, kept encoded).
#[derive(Clone, PartialEq, prost::Message)]
struct LayerParameter {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
    #[prost(bytes = "bytes", repeated, tag = "7")]
    blobs: Vec<Bytes>,
}

/// `V1LayerParameter`: name (4), type enum (5), blobs (6), and the V0
/// layer it may wrap (1).
#[derive(Clone, PartialEq, prost::Message)]
struct V1LayerParameter {
    #[prost(string, optional, tag = "4")]
    name: Option<String>,
    #[prost(int32, optional, tag = "5")]
    kind: Option<i32>,
    #[prost(bytes = "bytes", repeated, tag = "6")]
    blobs: Vec<Bytes>,
    #[prost(message, optional, tag = "1")]
    layer: Option<V0LayerParameter>,
}

/// `V0LayerParameter`: name (1), type string (2), blobs (50).
#[derive(Clone, PartialEq, prost::Message)]
struct V0LayerParameter {
    #[prost(string, optional, tag = "1")]
    name: Option<String>,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
    #[prost(bytes = "bytes", repeated, tag = "50")]
    blobs: Vec<Bytes>,
}

/// `BlobProto` with its packed value fields kept as byte slices. A blob
/// whose values are not packed (one key per value, as very old writers
/// did) does not decode this way and is decoded as a full [`BlobProto`].
#[derive(Clone, PartialEq, prost::Message)]
struct PackedBlob {
    #[prost(message, optional, tag = "7")]
    shape: Option<BlobShape>,
    #[prost(bytes = "bytes", repeated, tag = "5")]
    data: Vec<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "6")]
    diff: Vec<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "8")]
    double_data: Vec<Bytes>,
    #[prost(bytes = "bytes", repeated, tag = "9")]
    double_diff: Vec<Bytes>,
    #[prost(int32, optional, tag = "1")]
    num: Option<i32>,
    #[prost(int32, optional, tag = "2")]
    channels: Option<i32>,
    #[prost(int32, optional, tag = "3")]
    height: Option<i32>,
    #[prost(int32, optional, tag = "4")]
    width: Option<i32>,
}

/// A layer written back: name, type and blobs, the blobs' values as the
/// packed bytes they are on the wire.
#[derive(Clone, PartialEq, prost::Message)]
struct LayerOut {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, optional, tag = "2")]
    kind: Option<String>,
    #[prost(message, repeated, tag = "7")]
    blobs: Vec<BlobOut>,
}

/// `BlobProto` in the shape form, values as packed little-endian bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct BlobOut {
    #[prost(message, optional, tag = "7")]
    shape: Option<BlobShape>,
    #[prost(bytes = "vec", optional, tag = "5")]
    data: Option<Vec<u8>>,
    #[prost(bytes = "vec", optional, tag = "8")]
    double_data: Option<Vec<u8>>,
}

/// The current type name of a V1 `LayerType` (Caffe's `UpgradeV1LayerType`).
fn v1_type_name(t: i32) -> String {
    let name = match t {
        35 => "AbsVal",
        1 => "Accuracy",
        30 => "ArgMax",
        2 => "BNLL",
        3 => "Concat",
        37 => "ContrastiveLoss",
        4 => "Convolution",
        39 => "Deconvolution",
        5 => "Data",
        6 => "Dropout",
        32 => "DummyData",
        7 => "EuclideanLoss",
        25 => "Eltwise",
        38 => "Exp",
        8 => "Flatten",
        9 => "HDF5Data",
        10 => "HDF5Output",
        28 => "HingeLoss",
        11 => "Im2col",
        12 => "ImageData",
        13 => "InfogainLoss",
        14 => "InnerProduct",
        15 => "LRN",
        29 => "MemoryData",
        16 => "MultinomialLogisticLoss",
        34 => "MVN",
        17 => "Pooling",
        26 => "Power",
        18 => "ReLU",
        19 => "Sigmoid",
        27 => "SigmoidCrossEntropyLoss",
        36 => "Silence",
        20 => "Softmax",
        21 => "SoftmaxWithLoss",
        22 => "Split",
        33 => "Slice",
        23 => "TanH",
        24 => "WindowData",
        31 => "Threshold",
        _ => "",
    };
    name.to_string()
}

/// Holds the map for `Bytes::from_owner`.
struct MapBytes(Arc<FileMap>);

impl AsRef<[u8]> for MapBytes {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes()
    }
}

/// Total length of a packed field's chunks.
fn total(chunks: &[Bytes]) -> usize {
    chunks.iter().map(Bytes::len).sum()
}

/// Where a blob's packed values come from.
enum Fill<'p> {
    /// Copied out of the decoded bytes at once.
    Copy,
    /// Read from the file by `plan` (an eager load): `file` is the file's
    /// number in the plan, `base` the address of its first byte in the
    /// map the bytes are slices of.
    Plan { plan: &'p mut ReadPlan, file: usize, base: usize },
}

/// Copies packed little-endian values into `blob` (whose byte size the
/// caller checked), converting the byte order on big-endian hosts — now,
/// or by the plan of an eager load.
fn store(blob: &Blob, chunks: &[Bytes], fill: &mut Fill<'_>) -> Result<()> {
    let es = blob.dtype().size();
    let mut w = blob.snapshot().into_write()?;
    if let Fill::Plan { plan, file, base } = fill {
        let mut pieces = Vec::with_capacity(chunks.len());
        let mut at = 0usize;
        for c in chunks.iter().filter(|c| !c.is_empty()) {
            // Every non-empty chunk is a slice of the mapped file.
            let off = (c.as_ptr() as usize).checked_sub(*base).ok_or_else(|| err!(Internal, "{FORMAT}: packed values outside the mapped file"))?;
            pieces.push((off as u64, at, c.len()));
            at += c.len();
        }
        return plan.read_pieces(*file, w, pieces, es);
    }
    let mut dst = w.bytes_mut();
    for c in chunks {
        let (head, rest) = dst.split_at_mut(c.len());
        head.copy_from_slice(&byte_order(c, es, cfg!(target_endian = "big")));
        dst = rest;
    }
    Ok(())
}

impl PackedBlob {
    /// The blob this message describes; Format errors as for BlobProto.
    fn to_blob(&self, engine: &Engine, fill: &mut Fill<'_>) -> Result<Blob> {
        let shape = BlobProto {
            shape: self.shape.clone(),
            num: self.num,
            channels: self.channels,
            height: self.height,
            width: self.width,
            ..BlobProto::default()
        }
        .blob_shape()?;
        let count = shape.count();
        let (dtype, data, diff) = if total(&self.double_data) > 0 {
            (DType::F64, &self.double_data, if total(&self.double_diff) > 0 { &self.double_diff } else { &self.diff })
        } else {
            (DType::F32, &self.data, if total(&self.double_diff) > 0 { &self.double_diff } else { &self.diff })
        };
        let check = |chunks: &[Bytes], es: usize, what: &str| -> Result<()> {
            let n = total(chunks);
            if !n.is_multiple_of(es) || n / es != count {
                return Err(err!(Format, "Caffe BlobProto: holds {n} bytes of {what} values but its shape needs {count} values of {es} bytes"));
            }
            Ok(())
        };
        check(data, dtype.size(), "data")?;
        let diff_es = if std::ptr::eq(diff, &self.double_diff) { 8 } else { 4 };
        let has_diff = total(diff) > 0;
        if has_diff {
            check(diff, diff_es, "diff")?;
        }
        let blob = Blob::new(engine, dtype, shape)?;
        store(&blob, data, fill)?;
        if has_diff {
            if diff_es == dtype.size() {
                store(&blob.diff()?, diff, fill)?;
            } else {
                // A diff in the other precision: convert through a blob of
                // its own, filled now.
                let d = Blob::new(engine, if diff_es == 8 { DType::F64 } else { DType::F32 }, blob.shape())?;
                store(&d, diff, &mut Fill::Copy)?;
                blob.diff()?.copy_from(&d.cast(dtype)?)?;
            }
        }
        Ok(blob)
    }
}

/// Decodes one layer blob: packed (zero-copy) or, failing that, as a full
/// `BlobProto` (unpacked values).
fn decode_blob(engine: &Engine, bytes: &Bytes, fill: &mut Fill<'_>) -> Result<Blob> {
    match PackedBlob::decode(bytes.clone()) {
        Ok(p) => p.to_blob(engine, fill),
        Err(_) => BlobProto::decode_bytes(bytes)?.to_blob(engine),
    }
}

/// The layers of a decoded net: (name, type, encoded blobs) in file order.
fn layers(net: NetParameter) -> Result<Vec<(String, String, Vec<Bytes>)>> {
    if !net.layer.is_empty() && !net.layers.is_empty() {
        return Err(err!(Format, "{FORMAT}: has both 'layer' and legacy 'layers' fields (Caffe refuses such nets too)"));
    }
    let mut out = Vec::with_capacity(net.layer.len() + net.layers.len());
    for l in net.layer {
        out.push((l.name.unwrap_or_default(), l.kind.unwrap_or_default(), l.blobs));
    }
    for l in net.layers {
        let v0 = l.layer.unwrap_or_default();
        let name = l.name.or(v0.name).unwrap_or_default();
        let kind = match l.kind {
            Some(t) => v1_type_name(t),
            None => v0.kind.unwrap_or_default(),
        };
        let blobs = if l.blobs.is_empty() { v0.blobs } else { l.blobs };
        out.push((name, kind, blobs));
    }
    Ok(out)
}

/// Decodes a net held in `bytes` into blobs, filled as `fill` says.
fn decode_net(engine: &Engine, bytes: Bytes, fill: &mut Fill<'_>) -> Result<BlobMap> {
    let net = NetParameter::decode(bytes).map_err(|e| err!(Format, "{FORMAT}: not a valid message: {e}"))?;
    let mut map = BlobMap::new();
    for (name, kind, blobs) in layers(net)? {
        if blobs.is_empty() {
            continue;
        }
        if map.position(&name).is_some() {
            return Err(err!(Format, "{FORMAT}: two layers with blobs are named {name:?}"));
        }
        let mut decoded = Vec::with_capacity(blobs.len());
        for (i, b) in blobs.iter().enumerate() {
            decoded.push(decode_blob(engine, b, fill).map_err(|e| err!(Format, "layer {name:?}, blob {i}: {}", e.message()))?);
        }
        map.insert_all(name, kind, decoded);
    }
    Ok(map)
}

impl BlobMap {
    /// Loads the learned blobs of a Caffe `.caffemodel` (see the module
    /// docs): layer name -> [weights, bias, ...], in file order, layers
    /// without blobs left out. The file is mapped to decode its messages
    /// (only their framing is touched), and the values are then read into
    /// the new blobs with all cores at once (see [`crate::io::eager`]), so
    /// loading holds one copy of the weights.
    pub fn load_caffemodel(engine: &Engine, path: impl AsRef<Path>) -> Result<BlobMap> {
        Self::load_caffemodel_with_progress(engine, path, None)
    }

    /// [`BlobMap::load_caffemodel`] telling `progress` the bytes read so
    /// far and in all; returning `false` cancels the load (an Io error).
    pub fn load_caffemodel_with_progress(engine: &Engine, path: impl AsRef<Path>, progress: Option<Progress<'_>>) -> Result<BlobMap> {
        let path = path.as_ref();
        let map = FileMap::open(path, MapMode::ReadOnly)?;
        let base = map.bytes().as_ptr() as usize;
        let bytes = Bytes::from_owner(MapBytes(map));
        let mut plan = ReadPlan::new();
        let (file, _) = plan.open(path)?;
        let m = decode_net(engine, bytes, &mut Fill::Plan { plan: &mut plan, file, base }).map_err(|e| in_file(e, path))?;
        plan.run(progress)?;
        Ok(m)
    }

    /// Decodes a `.caffemodel` held in memory.
    pub fn from_caffemodel_bytes(engine: &Engine, bytes: &[u8]) -> Result<BlobMap> {
        decode_net(engine, Bytes::copy_from_slice(bytes), &mut Fill::Copy)
    }

    /// Writes the map as a `.caffemodel`: a `NetParameter` whose `layer`
    /// entries carry each entry's name, type (when known) and blobs (shape
    /// form; `data` for f32, `double_data` for f64 blobs; no diffs). Other
    /// dtypes are a DType error naming the layer. Written atomically, one
    /// layer at a time.
    pub fn save_caffemodel(&self, path: impl AsRef<Path>) -> Result<()> {
        write_file(path.as_ref(), |w| self.write_caffemodel(w))
    }

    /// The map encoded as a `.caffemodel` in memory.
    pub fn to_caffemodel_bytes(&self) -> Result<Vec<u8>> {
        to_vec(|w| self.write_caffemodel(w))
    }

    fn write_caffemodel(&self, w: &mut dyn Write) -> Result<()> {
        for e in self.entries() {
            let mut blobs = Vec::with_capacity(e.blobs().len());
            for (i, b) in e.blobs().iter().enumerate() {
                // A view of the whole blob: its dims cannot change between
                // the shape and the data (another thread may reshape it).
                let b = &b.slice(&[])?;
                // Room first (refused memory is an error, not an abort),
                // then the elements in row-major order, piece by piece.
                let mut bytes = room(b.byte_size(), "a blob's bytes")?;
                b.for_each_chunk(|piece| {
                    bytes.try_reserve(piece.len()).map_err(|_| err!(OutOfMemory, "cannot allocate the bytes of layer {:?}", e.name()))?;
                    bytes.extend_from_slice(piece);
                    Ok(())
                })?;
                // Little-endian already (every target but big-endian
                // ones): the copy itself, not a second one.
                let bytes = match byte_order(&bytes, b.dtype().size(), cfg!(target_endian = "big")) {
                    std::borrow::Cow::Owned(swapped) => swapped,
                    std::borrow::Cow::Borrowed(_) => bytes,
                };
                let shape = Some(BlobShape { dim: b.dims().iter().map(|&d| d as i64).collect() });
                blobs.push(match b.dtype() {
                    DType::F32 => BlobOut { shape, data: Some(bytes), double_data: None },
                    DType::F64 => BlobOut { shape, data: None, double_data: Some(bytes) },
                    other => {
                        return Err(err!(
                            DType,
                            "layer {:?}, blob {i}: Caffe weights are float32 or float64, not {other}",
                            e.name()
                        ))
                    }
                });
            }
            let layer = LayerOut { name: e.name().to_string(), kind: (!e.kind().is_empty()).then(|| e.kind().to_string()), blobs };
            // Room for the whole record first: prost then never grows
            // the vector (which would abort where the system refuses).
            let mut buf = room(layer.encoded_len().saturating_add(16), "a layer's record")?;
            prost::encoding::message::encode(100, &layer, &mut buf);
            w.write_all(&buf).map_err(io_err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    fn e() -> Engine {
        Engine::cpu()
    }

    fn blob_bytes(b: &Blob) -> Bytes {
        Bytes::from(b.to_caffe_bytes(false).unwrap())
    }

    #[test]
    fn new_and_legacy_layers_decode() {
        let w = Blob::from_slice(&e(), &[2, 3], &[1f32, 2., 3., 4., 5., 6.]).unwrap();
        let b = Blob::from_slice(&e(), &[2], &[0.5f64, -1.]).unwrap();
        let net = NetParameter {
            name: Some("n".into()),
            layer: vec![
                LayerParameter { name: Some("data".into()), kind: Some("Input".into()), blobs: vec![] },
                LayerParameter { name: Some("ip".into()), kind: Some("InnerProduct".into()), blobs: vec![blob_bytes(&w), blob_bytes(&b)] },
            ],
            layers: vec![],
        };
        let m = BlobMap::from_caffemodel_bytes(&e(), &net.encode_to_vec()).unwrap();
        assert_eq!(m.names().collect::<Vec<_>>(), ["ip"]);
        assert_eq!(m.entry(0).unwrap().kind(), "InnerProduct");
        let ip = m.blobs("ip").unwrap();
        assert_eq!(ip[0].to_vec::<f32>().unwrap(), [1., 2., 3., 4., 5., 6.]);
        assert_eq!(ip[1].to_vec::<f64>().unwrap(), [0.5, -1.]);
        // Legacy: V1 with a 4-D legacy blob, unpacked values.
        let mut legacy = vec![0x08, 1, 0x10, 1, 0x18, 1, 0x20, 2];
        for x in [7f32, 8.] {
            legacy.push(0x2d);
            legacy.extend_from_slice(&x.to_le_bytes());
        }
        let v1 = NetParameter {
            name: None,
            layer: vec![],
            layers: vec![V1LayerParameter { name: Some("conv".into()), kind: Some(4), blobs: vec![Bytes::from(legacy)], layer: None }],
        };
        let m = BlobMap::from_caffemodel_bytes(&e(), &v1.encode_to_vec()).unwrap();
        assert_eq!(m.entry(0).unwrap().kind(), "Convolution");
        let c = &m.blobs("conv").unwrap()[0];
        assert_eq!((c.dims(), c.to_vec::<f32>().unwrap()), (vec![1, 1, 1, 2], vec![7., 8.]));
        // Written back and read again: the same.
        let again = BlobMap::from_caffemodel_bytes(&e(), &m.to_caffemodel_bytes().unwrap()).unwrap();
        assert_eq!(again.blobs("conv").unwrap()[0].to_vec::<f32>().unwrap(), [7., 8.]);
        assert_eq!(again.entry(0).unwrap().kind(), "Convolution");
    }

    #[test]
    fn bad_nets_are_format_errors() {
        let w = Blob::from_slice(&e(), &[3], &[1f32, 2., 3.]).unwrap();
        let mut bad = w.to_caffe_bytes(false).unwrap();
        bad.truncate(bad.len() - 4);
        let net = NetParameter {
            name: None,
            layer: vec![LayerParameter { name: Some("x".into()), kind: None, blobs: vec![Bytes::from(bad)] }],
            layers: vec![],
        };
        let r = BlobMap::from_caffemodel_bytes(&e(), &net.encode_to_vec());
        assert!(matches!(r, Err(Error::Format(ref m)) if m.contains("layer \"x\", blob 0")), "{:?}", r.err());
        let both = NetParameter {
            name: None,
            layer: vec![LayerParameter { name: Some("a".into()), kind: None, blobs: vec![] }],
            layers: vec![V1LayerParameter { name: Some("b".into()), ..Default::default() }],
        };
        assert!(matches!(BlobMap::from_caffemodel_bytes(&e(), &both.encode_to_vec()), Err(Error::Format(_))));
        let i = Blob::from_slice(&e(), &[1], &[1i32]).unwrap();
        let mut m = BlobMap::new();
        m.insert("i", i);
        assert!(matches!(m.to_caffemodel_bytes(), Err(Error::DType(s)) if s.contains("\"i\"")));
    }
}
