//! safetensors files (Hugging Face): an 8-byte little-endian header
//! length, a JSON header naming each tensor's dtype, shape and byte range,
//! then the tensors' bytes, row-major and little-endian. The header and the
//! layout rules come from the maintained `safetensors` crate (its
//! `Metadata` validates that the byte ranges tile the data exactly, and its
//! writer lays tensors out aligned); this module maps them to blobs.
//!
//! Loading gives a [`BlobMap`] in file order (by byte offset). With a map
//! ([`BlobMap::load_safetensors`] with `mmap`), opening costs O(1): the
//! blobs are read-only views of the file's pages, touched only when read;
//! without, each tensor is read straight into a fresh writable blob.
//! Every dtype of the format but the sub-byte, complex and "fnuz" ones
//! (`F4`, `F6_*`, `C64`, `F8_E4M3FNUZ`, `F8_E5M2FNUZ`) has a blobcore dtype:
//! `F8_E4M3` is float8_e4m3fn (PyTorch's `float8_e4m3fn`), `F8_E8M0` is
//! float8_e8m0fnu. The others are a DType error naming the tensor, raised
//! before any blob is made.
//!
//! Saving writes each entry's single blob, with the metadata as
//! `__metadata__`, laid out as the crate's writer does (tensors by
//! descending alignment, then name), through blobcore's atomic file writer
//! (a temporary file renamed into place, with the usual permissions).

use crate::blob::Blob;
use crate::blob_map::BlobMap;
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{err, Error, Result};
use crate::io::eager::{report_done, Progress, ReadPlan};
use crate::io::{file_shape, in_file, io_err, to_vec, write_file};
use crate::mapped::{FileMap, MapMode};
use crate::shape::Shape;
use ::safetensors::tensor::{Dtype, Metadata, TensorInfo};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::Path;

const FORMAT: &str = "safetensors";
/// The shard size a sharded save uses when none is given: 5 GB, as
/// transformers and huggingface_hub (`"5GB"`, decimal).
pub const DEFAULT_SHARD_SIZE: u64 = 5_000_000_000;
/// The largest header the `safetensors` crate accepts (100 MB).
const MAX_HEADER: u64 = 100_000_000;

/// Every blobcore dtype with its safetensors dtype (each has one).
const DTYPES: [(DType, Dtype); 16] = [
    (DType::F32, Dtype::F32),
    (DType::I32, Dtype::I32),
    (DType::F64, Dtype::F64),
    (DType::I64, Dtype::I64),
    (DType::U8, Dtype::U8),
    (DType::I8, Dtype::I8),
    (DType::F16, Dtype::F16),
    (DType::BF16, Dtype::BF16),
    (DType::Bool, Dtype::BOOL),
    (DType::I16, Dtype::I16),
    (DType::U16, Dtype::U16),
    (DType::U32, Dtype::U32),
    (DType::U64, Dtype::U64),
    (DType::F8E4M3Fn, Dtype::F8_E4M3),
    (DType::F8E5M2, Dtype::F8_E5M2),
    (DType::F8E8M0Fnu, Dtype::F8_E8M0),
];

/// The blobcore dtype of a safetensors dtype, or a DType error naming the tensor.
fn dtype_of(name: &str, d: Dtype) -> Result<DType> {
    DTYPES.iter().find(|p| p.1 == d).map(|p| p.0).ok_or_else(|| {
        err!(
            DType,
            "{FORMAT}: tensor {name:?} has dtype {d}, which blobcore does not have \
             (it has BOOL, U8, U16, U32, U64, I8, I16, I32, I64, F8_E4M3, F8_E5M2, F8_E8M0, F16, BF16, F32 and F64)"
        )
    })
}

/// The safetensors dtype of a blobcore dtype (every one has one).
fn st_dtype(d: DType) -> Dtype {
    DTYPES.iter().find(|p| p.0 == d).map_or(Dtype::U8, |p| p.1)
}

/// One tensor of a parsed header: name, dtype, shape, and its byte range
/// from the start of the file.
struct Tensor {
    name: String,
    dtype: DType,
    shape: Shape,
    start: usize,
    len: usize,
}

/// A parsed, validated header.
struct Header {
    tensors: Vec<Tensor>,
    metadata: Vec<(String, String)>,
}

/// The header length field of a file of `file_len` bytes, checked against
/// the file before anything is allocated.
fn header_len(first: [u8; 8], file_len: u64) -> Result<usize> {
    let n = u64::from_le_bytes(first);
    if n > MAX_HEADER {
        return Err(err!(Format, "{FORMAT}: the header claims {n} bytes (the limit is {MAX_HEADER})"));
    }
    if n > file_len - 8 {
        return Err(err!(Format, "{FORMAT}: the header claims {n} bytes but the file holds {} after the length", file_len - 8));
    }
    usize::try_from(n).map_err(|_| err!(Format, "{FORMAT}: header of {n} bytes"))
}

/// Parses and validates the JSON header of a file of `file_len` bytes.
fn parse(json: &[u8], file_len: u64) -> Result<Header> {
    let bad = |e: &dyn std::fmt::Display| err!(Format, "{FORMAT}: bad header: {e}");
    let meta: Metadata = serde_json::from_slice(json).map_err(|e| bad(&e))?;
    let data_start = 8 + json.len();
    if (data_start as u64).checked_add(meta.data_len() as u64) != Some(file_len) {
        return Err(err!(
            Format,
            "{FORMAT}: the header describes {} data bytes but the file holds {}",
            meta.data_len(),
            file_len - data_start as u64
        ));
    }
    // File order: by offset, then (empty tensors share offsets, and the
    // crate breaks such ties in hash order) by length and name, so the
    // order is the same on every load.
    let mut keys = meta.offset_keys();
    keys.sort_by_cached_key(|k| (meta.info(k).map(|i| i.data_offsets), k.clone()));
    let mut tensors = Vec::new();
    for name in keys {
        let info = meta.info(&name).ok_or_else(|| err!(Internal, "{FORMAT}: {name:?} vanished from its header"))?;
        let dtype = dtype_of(&name, info.dtype)?;
        let dims: Vec<i64> = info.shape.iter().map(|&d| i64::try_from(d).unwrap_or(-1)).collect();
        let shape = file_shape(FORMAT, &dims).map_err(|e| err!(Format, "tensor {name:?}: {}", e.message()))?;
        let (s, e) = info.data_offsets;
        tensors.push(Tensor { name, dtype, shape, start: data_start + s, len: e - s });
    }
    let mut metadata: Vec<(String, String)> = meta.metadata().clone().unwrap_or_default().into_iter().collect();
    metadata.sort();
    Ok(Header { tensors, metadata })
}

/// Reads and parses the header of the file at `path` (the length field,
/// checked against the file, then the JSON), and the file's length.
fn read_header_file(path: &Path) -> Result<(Header, u64)> {
    let io = |e: std::io::Error| err!(Io, "cannot read {}: {e}", path.display());
    let mut r = std::fs::File::open(path).map_err(io)?;
    let file_len = r.metadata().map_err(io)?.len();
    if file_len < 8 {
        return Err(in_file(err!(Format, "{FORMAT}: {file_len} bytes is too short for the header length"), path));
    }
    let mut first = [0u8; 8];
    r.read_exact(&mut first).map_err(io)?;
    let n = header_len(first, file_len).map_err(|e| in_file(e, path))?;
    let mut json = vec![0u8; n];
    r.read_exact(&mut json).map_err(io)?;
    Ok((parse(&json, file_len).map_err(|e| in_file(e, path))?, file_len))
}

/// Parses the header at the start of `bytes`, a whole file.
fn parse_bytes(bytes: &[u8]) -> Result<Header> {
    let first: [u8; 8] = bytes
        .get(..8)
        .and_then(|s| s.try_into().ok())
        .ok_or_else(|| err!(Format, "{FORMAT}: {} bytes is too short for the header length", bytes.len()))?;
    let n = header_len(first, bytes.len() as u64)?;
    parse(&bytes[8..8 + n], bytes.len() as u64)
}

fn new_map(h: &Header) -> BlobMap {
    let mut m = BlobMap::new();
    for (k, v) in &h.metadata {
        m.set_metadata(k, v);
    }
    m
}

/// A blob being written: the bytes of a dense blob, held by a read guard.
struct Out {
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: crate::blob::HostRef,
}

/// The `__metadata__` as the crate takes it.
type HeaderMetadata = Option<HashMap<String, String>>;

fn st_error(e: ::safetensors::SafeTensorError) -> Error {
    err!(InvalidArgument, "{FORMAT}: {e}")
}

impl BlobMap {
    /// Loads a safetensors file. With `mmap` the file is memory-mapped
    /// read-only in O(1) and the blobs are read-only views of it (a
    /// tensor at an offset misaligned for its dtype is copied, still
    /// read-only); without, every tensor is read into a fresh writable
    /// blob. Entries are in file order; the header's `__metadata__` is the
    /// map's metadata (sorted by key).
    ///
    /// A sharded checkpoint loads the same way: `path` naming its index
    /// (`model.safetensors.index.json`, any name ending in `.json`) or the
    /// directory holding it (else the directory's `model.safetensors`);
    /// see [`crate::io::safetensors_index`].
    pub fn load_safetensors(engine: &Engine, path: impl AsRef<Path>, mmap: bool) -> Result<BlobMap> {
        Self::load_safetensors_with_progress(engine, path, mmap, None)
    }

    /// [`BlobMap::load_safetensors`] telling `progress` the bytes read so
    /// far and in all, from the calling thread (see [`crate::io::eager`]);
    /// returning `false` cancels the load (an Io error). An eager load
    /// reads the tensors with all cores at once (of every shard of a
    /// sharded checkpoint together); a mapped one reads nothing and
    /// reports `(total, total)` once.
    pub fn load_safetensors_with_progress(engine: &Engine, path: impl AsRef<Path>, mmap: bool, progress: Option<Progress<'_>>) -> Result<BlobMap> {
        let path = path.as_ref();
        match super::safetensors_index::resolve(path)? {
            super::safetensors_index::Source::Index(index) => super::safetensors_index::load(engine, &index, mmap, progress),
            super::safetensors_index::Source::File(file) => {
                if mmap {
                    let m = Self::map_safetensors_file(engine, &file)?;
                    report_done(progress, m.entries().iter().flat_map(|e| e.blobs()).map(|b| b.byte_size() as u64).sum())?;
                    return Ok(m);
                }
                let mut plan = ReadPlan::new();
                let m = Self::plan_safetensors_file(engine, &file, &mut plan)?;
                plan.run(progress)?;
                Ok(m)
            }
        }
    }

    /// Maps one safetensors file (not an index): blobs are read-only views.
    /// The header is read with `pread`, not through the map, so opening
    /// touches none of the mapped pages.
    pub(crate) fn map_safetensors_file(engine: &Engine, path: &Path) -> Result<BlobMap> {
        let (h, len) = read_header_file(path)?;
        let map = FileMap::open(path, MapMode::ReadOnly)?;
        if map.bytes().len() as u64 != len {
            return Err(err!(Io, "{}: the file changed while it was opened", path.display()));
        }
        let mut m = new_map(&h);
        for t in h.tensors {
            let b = map.blob(engine, t.dtype, t.shape, t.start)?;
            m.insert(t.name, b);
        }
        Ok(m)
    }

    /// Reads one safetensors file's header (not an index) and plans reading
    /// its tensors into fresh blobs: the map returned holds them, filled
    /// once `plan` has run.
    pub(crate) fn plan_safetensors_file(engine: &Engine, path: &Path, plan: &mut ReadPlan) -> Result<BlobMap> {
        let (fi, _) = plan.open(path)?;
        let (h, _) = read_header_file(path)?;
        let mut m = new_map(&h);
        for t in h.tensors {
            let b = Blob::new(engine, t.dtype, t.shape)?;
            plan.read_blob(fi, t.start as u64, &b)?;
            m.insert(t.name, b);
        }
        Ok(m)
    }

    /// Decodes a safetensors file held in memory into fresh writable blobs.
    pub fn from_safetensors_bytes(engine: &Engine, bytes: &[u8]) -> Result<BlobMap> {
        let h = parse_bytes(bytes)?;
        let mut m = new_map(&h);
        for t in h.tensors {
            let b = Blob::new(engine, t.dtype, t.shape)?;
            b.copy_from_bytes(&bytes[t.start..t.start + t.len])?;
            m.insert(t.name, b);
        }
        Ok(m)
    }

    /// The tensors to write: one dense blob per entry, checked.
    fn safetensors_out(&self) -> Result<(Vec<(String, Out)>, HeaderMetadata)> {
        let mut out = Vec::with_capacity(self.len());
        for e in self.entries() {
            let name = e.name();
            if name == "__metadata__" {
                return Err(err!(InvalidArgument, "{FORMAT}: \"__metadata__\" is reserved and cannot name a tensor"));
            }
            let b = match e.blobs() {
                [b] => b,
                other => return Err(err!(InvalidArgument, "{FORMAT}: {name:?} holds {} blobs; a tensor is one blob", other.len())),
            };
            // A view (or a copy): dims that no other thread can change
            // between the header and the bytes.
            let b = if b.is_dense() { b.slice(&[])? } else { b.copy()? };
            let shape = b.dims();
            let bytes = b.snapshot().into_read()?;
            out.push((name.to_string(), Out { dtype: st_dtype(b.dtype()), shape, bytes }));
        }
        let meta = (!self.metadata().is_empty()).then(|| self.metadata().iter().cloned().collect());
        Ok((out, meta))
    }

    /// Saves the map as a safetensors file (each entry must hold exactly
    /// one blob), atomically: a failed save leaves an existing file as it
    /// was, and blobs mapped from the old file keep its old contents.
    ///
    /// A `path` naming an index (ending in `.index.json`) or a directory
    /// saves shards of at most [`DEFAULT_SHARD_SIZE`] bytes, as
    /// [`BlobMap::save_safetensors_sharded`] does.
    pub fn save_safetensors(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        if super::safetensors_index::is_sharded_target(path) {
            return self.save_safetensors_sharded(path, DEFAULT_SHARD_SIZE);
        }
        write_file(path, |w| self.write_safetensors(w))
    }

    /// The first phase of a save: the file written to a temporary name
    /// next to `path`, renamed into place by the caller.
    pub(crate) fn write_safetensors_temp(&self, path: &Path) -> Result<super::TempFile> {
        super::write_temp(path, |w| self.write_safetensors(w))
    }

    /// Checks that every entry can be written (one blob each, no reserved
    /// name) without writing anything.
    pub(crate) fn check_safetensors_entries(&self) -> Result<()> {
        for e in self.entries() {
            if e.name() == "__metadata__" {
                return Err(err!(InvalidArgument, "{FORMAT}: \"__metadata__\" is reserved and cannot name a tensor"));
            }
            if e.blobs().len() != 1 {
                return Err(err!(InvalidArgument, "{FORMAT}: {:?} holds {} blobs; a tensor is one blob", e.name(), e.blobs().len()));
            }
        }
        Ok(())
    }

    /// The map encoded as a safetensors file in memory.
    pub fn to_safetensors_bytes(&self) -> Result<Vec<u8>> {
        to_vec(|w| self.write_safetensors(w))
    }

    /// Writes the file: the crate's `Metadata` (validated, serialized by
    /// the crate) laid out as its own writer does — tensors by descending
    /// alignment, then name; header padded with spaces to 8 bytes — then
    /// each tensor's bytes.
    fn write_safetensors(&self, w: &mut dyn Write) -> Result<()> {
        let (mut out, meta) = self.safetensors_out()?;
        out.sort_by(|(ln, l), (rn, r)| r.dtype.cmp(&l.dtype).then(ln.cmp(rn)));
        let mut offset = 0usize;
        let mut infos = Vec::with_capacity(out.len());
        for (name, o) in &out {
            let len = o.bytes.bytes().len();
            infos.push((name.clone(), TensorInfo { dtype: o.dtype, shape: o.shape.clone(), data_offsets: (offset, offset + len) }));
            offset += len;
        }
        let metadata = Metadata::new(meta, infos).map_err(st_error)?;
        let mut header = serde_json::to_vec(&metadata).map_err(|e| err!(Internal, "{FORMAT}: header: {e}"))?;
        header.resize(header.len().next_multiple_of(8), b' ');
        if header.len() as u64 > MAX_HEADER {
            return Err(err!(InvalidArgument, "{FORMAT}: the header would take {} bytes (the limit is {MAX_HEADER})", header.len()));
        }
        w.write_all(&(header.len() as u64).to_le_bytes()).map_err(io_err)?;
        w.write_all(&header).map_err(io_err)?;
        for (_, o) in &out {
            w.write_all(o.bytes.bytes()).map_err(io_err)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e() -> Engine {
        Engine::cpu()
    }

    fn sample() -> BlobMap {
        let mut m = BlobMap::new();
        m.insert("w", Blob::from_slice(&e(), &[2, 3], &[1f32, 2., 3., 4., 5., 6.]).unwrap());
        m.insert("b", Blob::from_slice(&e(), &[3], &[7i64, 8, 9]).unwrap());
        m.insert("s", Blob::from_slice(&e(), &[], &[1u8]).unwrap());
        m.set_metadata("format", "pt");
        m
    }

    #[test]
    fn bytes_round_trip_every_dtype() {
        let mut m = BlobMap::new();
        for d in DType::ALL {
            let b = Blob::new(&e(), d, Shape::new(&[2, 2]).unwrap()).unwrap();
            b.copy_from_bytes(&[3u8; 32][..4 * d.size()]).unwrap();
            m.insert(d.name(), b);
        }
        let bytes = m.to_safetensors_bytes().unwrap();
        let back = BlobMap::from_safetensors_bytes(&e(), &bytes).unwrap();
        assert_eq!(back.len(), DType::ALL.len());
        for d in DType::ALL {
            let b = back.get(d.name()).unwrap();
            assert_eq!((b.dtype(), b.dims()), (d, vec![2, 2]));
        }
    }

    #[test]
    fn file_order_and_metadata() {
        let bytes = sample().to_safetensors_bytes().unwrap();
        let m = BlobMap::from_safetensors_bytes(&e(), &bytes).unwrap();
        // The crate writes by alignment (8-byte dtypes first), then name.
        assert_eq!(m.names().collect::<Vec<_>>(), ["b", "w", "s"]);
        assert_eq!(m.metadata_value("format"), Some("pt"));
        assert_eq!(m.get("s").unwrap().dims(), Vec::<usize>::new());
    }

    #[test]
    fn unknown_dtypes_name_the_tensor() {
        let json = br#"{"flags":{"dtype":"C64","shape":[2],"data_offsets":[0,16]}}"#;
        let mut f = (json.len() as u64).to_le_bytes().to_vec();
        f.extend_from_slice(json);
        f.extend_from_slice(&[0; 16]);
        let r = BlobMap::from_safetensors_bytes(&e(), &f);
        assert!(matches!(r, Err(Error::DType(ref m)) if m.contains("\"flags\"") && m.contains("C64")), "{:?}", r.as_ref().err());
    }

    #[test]
    fn hostile_headers_are_format_errors() {
        let good = sample().to_safetensors_bytes().unwrap();
        for cut in 0..good.len() {
            assert!(BlobMap::from_safetensors_bytes(&e(), &good[..cut]).is_err(), "cut {cut}");
        }
        let mut huge = u64::MAX.to_le_bytes().to_vec();
        huge.extend_from_slice(b"{}");
        assert!(matches!(BlobMap::from_safetensors_bytes(&e(), &huge), Err(Error::Format(_))));
        let mut long = good.clone();
        long.push(0);
        assert!(matches!(BlobMap::from_safetensors_bytes(&e(), &long), Err(Error::Format(_))));
    }

    #[test]
    fn saving_checks_entries() {
        let mut m = sample();
        m.push("w", Blob::from_slice(&e(), &[1], &[0f32]).unwrap());
        assert!(matches!(m.to_safetensors_bytes(), Err(Error::InvalidArgument(s)) if s.contains("\"w\" holds 2 blobs")));
        let mut m = BlobMap::new();
        m.insert("__metadata__", Blob::from_slice(&e(), &[1], &[0f32]).unwrap());
        assert!(matches!(m.to_safetensors_bytes(), Err(Error::InvalidArgument(_))));
    }
}
