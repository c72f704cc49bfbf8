//! Weight files from C: safetensors and Caffe `.caffemodel` as a
//! `BlobMap` handle (ordered names, each with its blobs, plus string
//! metadata). The formats and the map live in `blobcore`; this module
//! checks pointers, hands out handles and keeps the C strings it returns.
//!
//! Strings returned by `blob_map_name`, `blob_map_kind` and the metadata
//! functions belong to the map: they stay valid until the map is changed
//! (insert, push, set_kind, set_metadata) or freed.

use crate::handles::{self, Blob, BlobEngine};
use crate::status::{ffi, out, path, put, text};
use blobcore::Error;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_void, CString};
use std::sync::RwLock;

/// An ordered map of names to blobs with string metadata (opaque; from
/// `blob_map_create`, `blob_load_safetensors` or `blob_load_caffemodel`,
/// freed by `blob_map_free`).
pub struct BlobMap {
    _opaque: [u8; 0],
}

/// A map and the C strings handed out for it.
struct Held {
    map: blobcore::BlobMap,
    names: Vec<Option<CString>>,
    kinds: Vec<Option<CString>>,
    meta: Vec<(Option<CString>, Option<CString>)>,
}

impl Held {
    fn new(map: blobcore::BlobMap) -> Held {
        let mut h = Held { map, names: Vec::new(), kinds: Vec::new(), meta: Vec::new() };
        h.refresh();
        h
    }

    /// Rebuilds the C strings after a change.
    fn refresh(&mut self) {
        let c = |s: &str| CString::new(s).ok();
        self.names = self.map.entries().iter().map(|e| c(e.name())).collect();
        self.kinds = self.map.entries().iter().map(|e| c(e.kind())).collect();
        self.meta = self.map.metadata().iter().map(|(k, v)| (c(k), c(v))).collect();
    }
}

static MAPS: blobcore::fork_locks::HeldAcrossFork<RwLock<BTreeMap<usize, Held>>> =
    blobcore::fork_locks::HeldAcrossFork::new(handles::fork_rank::MAPS, RwLock::new(BTreeMap::new()));

/// [`MAPS`], held across `fork` (see [`handles::fork_rank`]).
fn maps() -> &'static RwLock<BTreeMap<usize, Held>> {
    MAPS.get()
}

fn issue(map: blobcore::BlobMap) -> *mut BlobMap {
    let t = crate::tokens::issue();
    maps().write().unwrap_or_else(|e| e.into_inner()).insert(t, Held::new(map));
    t as *mut BlobMap
}

fn not_live(h: *const BlobMap) -> Error {
    Error::InvalidHandle(format!("map ({h:p}) is not a live BlobMap handle (freed, or never issued)"))
}

/// Runs `f` on the map behind a handle under the registry's read lock
/// (`f` must not look up handles of other kinds that could block).
fn with<R>(h: *const BlobMap, f: impl FnOnce(&Held) -> Result<R, Error>) -> Result<R, Error> {
    if h.is_null() {
        return Err(Error::NullPointer("map is NULL".into()));
    }
    let maps = maps().read().unwrap_or_else(|e| e.into_inner());
    f(maps.get(&(h as usize)).ok_or_else(|| not_live(h))?)
}

/// Runs `f` on the map behind a handle for a change, then refreshes its
/// strings. What `f` returns (blobs it replaced) is dropped by the caller
/// after the registry's lock is released: releasing a blob's memory may
/// call back into C.
fn change<R>(h: *mut BlobMap, f: impl FnOnce(&mut blobcore::BlobMap) -> Result<R, Error>) -> Result<R, Error> {
    if h.is_null() {
        return Err(Error::NullPointer("map is NULL".into()));
    }
    let mut maps = maps().write().unwrap_or_else(|e| e.into_inner());
    let held = maps.get_mut(&(h as usize)).ok_or_else(|| not_live(h))?;
    let r = f(&mut held.map)?;
    held.refresh();
    Ok(r)
}

fn entry_index(held: &Held, i: usize) -> Result<usize, Error> {
    if i >= held.map.len() {
        return Err(Error::OutOfRange(format!("entry {i} of a map of {} entries", held.map.len())));
    }
    Ok(i)
}

fn c_str(s: &Option<CString>, what: &str) -> Result<*const c_char, Error> {
    s.as_ref()
        .map(|c| c.as_ptr())
        .ok_or_else(|| Error::InvalidArgument(format!("{what} holds a NUL byte, which a C string cannot")))
}

/// Creates an empty map (to fill with `blob_map_insert` and save).
#[no_mangle]
pub extern "C" fn blob_map_create(out_map: *mut *mut BlobMap) -> i32 {
    ffi!({
        let o = out(out_map, "out")?;
        put(o, issue(blobcore::BlobMap::new()));
        Ok(())
    })
}

/// Frees a map handle. Blobs taken from it live on (a memory-mapped
/// file stays mapped while any of them is in use).
#[no_mangle]
pub extern "C" fn blob_map_free(map: *mut BlobMap) -> i32 {
    ffi!({
        if map.is_null() {
            return Err(Error::NullPointer("map is NULL".into()));
        }
        let removed = maps().write().unwrap_or_else(|e| e.into_inner()).remove(&(map as usize));
        // Dropped outside the lock: releasing a map may release file maps.
        match removed {
            Some(held) => {
                drop(held);
                Ok(())
            }
            None => Err(Error::InvalidHandle(format!("{map:p} is not a live BlobMap handle (double free?)"))),
        }
    })
}

/// The number of entries (tensors, or layers of a .caffemodel).
#[no_mangle]
pub extern "C" fn blob_map_len(map: *const BlobMap, out_len: *mut usize) -> i32 {
    ffi!({
        let o = out(out_len, "out")?;
        put(o, with(map, |h| Ok(h.map.len()))?);
        Ok(())
    })
}

/// The name of entry `i` (in file order); valid until the map changes or
/// is freed. `BLOB_ERR_OUT_OF_RANGE` past the end.
#[no_mangle]
pub extern "C" fn blob_map_name(map: *const BlobMap, i: usize, out_name: *mut *const c_char) -> i32 {
    ffi!({
        let o = out(out_name, "out")?;
        put(o, with(map, |h| c_str(&h.names[entry_index(h, i)?], &format!("the name of entry {i}")))?);
        Ok(())
    })
}

/// The layer type of entry `i` ("Convolution", ...; "" when unknown).
#[no_mangle]
pub extern "C" fn blob_map_kind(map: *const BlobMap, i: usize, out_kind: *mut *const c_char) -> i32 {
    ffi!({
        let o = out(out_kind, "out")?;
        put(o, with(map, |h| c_str(&h.kinds[entry_index(h, i)?], &format!("the type of entry {i}")))?);
        Ok(())
    })
}

/// The number of blobs of entry `i` (1 for a safetensors tensor; a Caffe
/// layer's weights, bias, ...).
#[no_mangle]
pub extern "C" fn blob_map_count(map: *const BlobMap, i: usize, out_count: *mut usize) -> i32 {
    ffi!({
        let o = out(out_count, "out")?;
        put(o, with(map, |h| Ok(h.map.entries()[entry_index(h, i)?].blobs().len()))?);
        Ok(())
    })
}

/// A new handle to blob `j` of entry `i` (free it with `blob_free`).
#[no_mangle]
pub extern "C" fn blob_map_at(map: *const BlobMap, i: usize, j: usize, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let b = with(map, |h| {
            let blobs = h.map.entries()[entry_index(h, i)?].blobs();
            blobs
                .get(j)
                .cloned()
                .ok_or_else(|| Error::OutOfRange(format!("blob {j} of entry {i}, which has {}", blobs.len())))
        })?;
        put(o, handles::issue_blob(b));
        Ok(())
    })
}

/// A new handle to the single blob named `name` (a safetensors tensor).
/// A missing name, or an entry of several blobs, is
/// `BLOB_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn blob_map_get(map: *const BlobMap, name: *const c_char, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let name = text(name, "name")?;
        let b = with(map, |h| h.map.get(name).cloned())?;
        put(o, handles::issue_blob(b));
        Ok(())
    })
}

/// Sets `name` to the single blob `b` (the map shares it; replacing the
/// blobs of an existing name in place, else appending an entry).
#[no_mangle]
pub extern "C" fn blob_map_insert(map: *mut BlobMap, name: *const c_char, b: *const Blob) -> i32 {
    ffi!({
        let name = text(name, "name")?;
        let b = handles::blob(b, "blob")?;
        let replaced = change(map, |m| {
            let old = m.blobs(name).map(<[blobcore::Blob]>::to_vec);
            m.insert(name, b);
            Ok(old)
        })?;
        drop(replaced);
        Ok(())
    })
}

/// Appends blob `b` to the blobs of `name` (creating the entry): how a
/// Caffe layer's weights and bias are added.
#[no_mangle]
pub extern "C" fn blob_map_push(map: *mut BlobMap, name: *const c_char, b: *const Blob) -> i32 {
    ffi!({
        let name = text(name, "name")?;
        let b = handles::blob(b, "blob")?;
        change(map, |m| {
            m.push(name, b);
            Ok(())
        })
    })
}

/// Sets the layer type of the entry `name` (written to .caffemodel files).
#[no_mangle]
pub extern "C" fn blob_map_set_kind(map: *mut BlobMap, name: *const c_char, kind: *const c_char) -> i32 {
    ffi!({
        let name = text(name, "name")?;
        let kind = text(kind, "kind")?;
        change(map, |m| m.set_kind(name, kind))
    })
}

/// The number of metadata entries (safetensors `__metadata__`).
#[no_mangle]
pub extern "C" fn blob_map_metadata_len(map: *const BlobMap, out_len: *mut usize) -> i32 {
    ffi!({
        let o = out(out_len, "out")?;
        put(o, with(map, |h| Ok(h.meta.len()))?);
        Ok(())
    })
}

/// Metadata entry `i`: its key and value (valid until the map changes).
#[no_mangle]
pub extern "C" fn blob_map_metadata_at(map: *const BlobMap, i: usize, out_key: *mut *const c_char, out_value: *mut *const c_char) -> i32 {
    ffi!({
        let ok = out(out_key, "out_key")?;
        let ov = out(out_value, "out_value")?;
        let (k, v) = with(map, |h| {
            let (k, v) = h
                .meta
                .get(i)
                .ok_or_else(|| Error::OutOfRange(format!("metadata entry {i} of {}", h.meta.len())))?;
            Ok((c_str(k, "a metadata key")?, c_str(v, "a metadata value")?))
        })?;
        put(ok, k);
        put(ov, v);
        Ok(())
    })
}

/// The metadata value of `key` (`BLOB_ERR_INVALID_ARGUMENT` when absent).
#[no_mangle]
pub extern "C" fn blob_map_metadata_get(map: *const BlobMap, key: *const c_char, out_value: *mut *const c_char) -> i32 {
    ffi!({
        let o = out(out_value, "out")?;
        let key = text(key, "key")?;
        let v = with(map, |h| {
            let i = h
                .map
                .metadata()
                .iter()
                .position(|(k, _)| k == key)
                .ok_or_else(|| Error::InvalidArgument(format!("no metadata key {key:?}")))?;
            c_str(&h.meta[i].1, "the metadata value")
        })?;
        put(o, v);
        Ok(())
    })
}

/// Sets a metadata entry (written as safetensors `__metadata__`).
#[no_mangle]
pub extern "C" fn blob_map_set_metadata(map: *mut BlobMap, key: *const c_char, value: *const c_char) -> i32 {
    ffi!({
        let key = text(key, "key")?;
        let value = text(value, "value")?;
        change(map, |m| {
            m.set_metadata(key, value);
            Ok(())
        })
    })
}

/// Loads a safetensors file. With `mmap` the file is memory-mapped in
/// O(1) and its blobs are read-only views of it (the map lives while any
/// blob uses it); without, every tensor is read into a fresh writable
/// blob. Entries are in file order. A dtype blobcore lacks is
/// `BLOB_ERR_DTYPE` naming the tensor; a malformed file `BLOB_ERR_FORMAT`.
/// A sharded checkpoint loads through its index (a path ending in `.json`)
/// or its directory: every tensor of the weight map, in its order, each
/// from its shard; a missing shard, a tensor absent from its shard, in two
/// shards or not listed, or a wrong `total_size` is `BLOB_ERR_FORMAT`.
#[no_mangle]
pub extern "C" fn blob_load_safetensors(e: *const BlobEngine, path_: *const c_char, mmap: bool, out_map: *mut *mut BlobMap) -> i32 {
    ffi!({
        let o = out(out_map, "out")?;
        let e = handles::engine(e)?;
        let m = blobcore::BlobMap::load_safetensors(&e, path(path_)?, mmap)?;
        put(o, issue(m));
        Ok(())
    })
}

/// A load's progress callback: told the bytes read so far and in all,
/// on the calling thread, after each piece (8 MiB) the calling thread
/// reads and once more with `done == total` at the end; `user` is the
/// pointer given to the load. Returning `false` cancels the load
/// (`BLOB_ERR_IO`, nothing is returned).
pub type BlobProgressFn = Option<unsafe extern "C" fn(done: u64, total: u64, user: *mut c_void) -> bool>;

/// The C callback as the core's progress closure.
fn progress_of(f: BlobProgressFn, user: *mut c_void) -> Option<impl FnMut(u64, u64) -> bool> {
    f.map(|f| {
        move |done, total| {
            // SAFETY: the caller of the load promised that `f` may be
            // called with `user` for the duration of the call; it runs on
            // the calling thread, under no blobcore lock.
            unsafe { f(done, total, user) }
        }
    })
}

/// `blob_load_safetensors` reading with all cores and telling `progress`
/// (may be NULL) how far it got; see `BlobProgressFn`. A mapped load
/// reports once, at the end.
#[no_mangle]
pub extern "C" fn blob_load_safetensors_progress(e: *const BlobEngine, path_: *const c_char, mmap: bool, progress: BlobProgressFn, user: *mut c_void, out_map: *mut *mut BlobMap) -> i32 {
    ffi!({
        let o = out(out_map, "out")?;
        let e = handles::engine(e)?;
        let mut p = progress_of(progress, user);
        let m = blobcore::BlobMap::load_safetensors_with_progress(&e, path(path_)?, mmap, p.as_mut().map(|p| p as _))?;
        put(o, issue(m));
        Ok(())
    })
}

/// Saves the map as a safetensors file (each entry one blob; metadata as
/// `__metadata__`), atomically.
#[no_mangle]
pub extern "C" fn blob_save_safetensors(map: *const BlobMap, path_: *const c_char) -> i32 {
    ffi!({
        let p = path(path_)?;
        let m = with(map, |h| Ok(h.map.clone()))?;
        m.save_safetensors(p)
    })
}

/// Saves the map as a sharded safetensors checkpoint: shards of at most
/// `max_shard_size` bytes of tensor data (a larger tensor gets a shard of
/// its own) named after `path` — which ends in `.index.json`
/// (`x.safetensors.index.json` gives `x-00001-of-0000N.safetensors`) or
/// names a directory (`model-…` shards and `model.safetensors.index.json`,
/// or a lone `model.safetensors`, as transformers saves) — plus the index
/// with `total_size`. Nothing is replaced until every file is written.
/// `blob_load_safetensors` reads it back through the index or directory.
/// `max_shard_size` 0 or another `path` is `BLOB_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn blob_save_safetensors_sharded(map: *const BlobMap, path_: *const c_char, max_shard_size: u64) -> i32 {
    ffi!({
        let p = path(path_)?;
        let m = with(map, |h| Ok(h.map.clone()))?;
        m.save_safetensors_sharded(p, max_shard_size)
    })
}

/// Loads a GGUF file (versions 2 and 3, little-endian): one entry per
/// tensor in file order, as gguf-py's `GGUFReader` gives `tensor.data`
/// (dims reversed into row-major order; F32, F16, BF16, F64 and the
/// integer types typed; block-quantized types as `BLOB_U8` blobs whose
/// last axis holds a row's blocks). With `mmap` the file is mapped in O(1)
/// and the blobs are read-only views of it. With `dequantize`, Q4_0,
/// Q4_1, Q5_0, Q5_1, Q8_0 and Q2_K-Q6_K tensors become `BLOB_F32` blobs of
/// their logical shape (equal to gguf-py's `gguf.quants.dequantize`);
/// another block type is then `BLOB_ERR_UNSUPPORTED` naming it. A hostile
/// header is `BLOB_ERR_FORMAT`; version 1 or a big-endian file
/// `BLOB_ERR_UNSUPPORTED`.
#[no_mangle]
pub extern "C" fn blob_load_gguf(e: *const BlobEngine, path_: *const c_char, mmap: bool, dequantize: bool, out_map: *mut *mut BlobMap) -> i32 {
    ffi!({
        let o = out(out_map, "out")?;
        let e = handles::engine(e)?;
        let m = blobcore::BlobMap::load_gguf(&e, path(path_)?, mmap, dequantize)?;
        put(o, issue(m));
        Ok(())
    })
}

/// `blob_load_gguf` telling `progress` (may be NULL) how far it got; see
/// `BlobProgressFn` (dequantized tensors are decoded first and not
/// counted).
#[no_mangle]
pub extern "C" fn blob_load_gguf_progress(e: *const BlobEngine, path_: *const c_char, mmap: bool, dequantize: bool, progress: BlobProgressFn, user: *mut c_void, out_map: *mut *mut BlobMap) -> i32 {
    ffi!({
        let o = out(out_map, "out")?;
        let e = handles::engine(e)?;
        let mut p = progress_of(progress, user);
        let m = blobcore::BlobMap::load_gguf_with_progress(&e, path(path_)?, mmap, dequantize, p.as_mut().map(|p| p as _))?;
        put(o, issue(m));
        Ok(())
    })
}

/// The header of the GGUF file at `path` (read with `pread`; the tensor
/// data is not touched) as NUL-terminated UTF-8 JSON in `*out` (`*len`
/// bytes before the NUL; free with `blob_bytes_free`):
/// `{"version", "alignment", "metadata": [{"key", "type", "value"}, ...],
/// "tensors": [{"name", "type", "shape", "offset", "n_bytes"}, ...]}`.
/// Metadata keeps file order and gguf-py's type names (`UINT32`,
/// `STRING`, `ARRAY`, ...); an array's value is `{"type": element type,
/// "value": [...]}`; integers are exact JSON numbers; non-finite floats are
/// the strings `"NaN"`, `"Infinity"`, `"-Infinity"`. Tensor types are
/// ggml's names (`F32`, `Q4_0`, ...) and shapes the logical shape in
/// row-major order. A hostile header is `BLOB_ERR_FORMAT`.
#[no_mangle]
pub extern "C" fn blob_gguf_header_json(path_: *const c_char, out_json: *mut *mut u8, len: *mut usize) -> i32 {
    ffi!({
        let o = out(out_json, "out")?;
        let n = out(len, "len")?;
        let json = blobcore::io::gguf::read_header(path(path_)?)?.to_json();
        let mut bytes = json.into_bytes();
        let text_len = bytes.len();
        bytes.push(0);
        put(o, crate::byte_buffers::hand_out(&bytes)?);
        put(n, text_len);
        Ok(())
    })
}

/// Saves the map as a GGUF v3 file (each entry one blob of F32, F16,
/// BF16, F64, I8, I16, I32 or I64; the map's metadata as string
/// key/value pairs; data aligned to 32 bytes), atomically. Another dtype
/// is `BLOB_ERR_DTYPE` naming the tensor.
#[no_mangle]
pub extern "C" fn blob_save_gguf(map: *const BlobMap, path_: *const c_char) -> i32 {
    ffi!({
        let p = path(path_)?;
        let m = with(map, |h| Ok(h.map.clone()))?;
        m.save_gguf(p, &[])
    })
}

/// Loads the learned blobs of a Caffe .caffemodel: one entry per layer
/// with blobs (weights, bias, ...), in file order, with its type; the
/// `layer` and legacy V1 `layers` fields are both read.
#[no_mangle]
pub extern "C" fn blob_load_caffemodel(e: *const BlobEngine, path_: *const c_char, out_map: *mut *mut BlobMap) -> i32 {
    ffi!({
        let o = out(out_map, "out")?;
        let e = handles::engine(e)?;
        let m = blobcore::BlobMap::load_caffemodel(&e, path(path_)?)?;
        put(o, issue(m));
        Ok(())
    })
}

/// `blob_load_caffemodel` telling `progress` (may be NULL) how far it
/// got; see `BlobProgressFn`.
#[no_mangle]
pub extern "C" fn blob_load_caffemodel_progress(e: *const BlobEngine, path_: *const c_char, progress: BlobProgressFn, user: *mut c_void, out_map: *mut *mut BlobMap) -> i32 {
    ffi!({
        let o = out(out_map, "out")?;
        let e = handles::engine(e)?;
        let mut p = progress_of(progress, user);
        let m = blobcore::BlobMap::load_caffemodel_with_progress(&e, path(path_)?, p.as_mut().map(|p| p as _))?;
        put(o, issue(m));
        Ok(())
    })
}

/// Saves the map as a .caffemodel (a NetParameter of name, type and
/// float32/float64 blobs per layer), atomically.
#[no_mangle]
pub extern "C" fn blob_save_caffemodel(map: *const BlobMap, path_: *const c_char) -> i32 {
    ffi!({
        let p = path(path_)?;
        let m = with(map, |h| Ok(h.map.clone()))?;
        m.save_caffemodel(p)
    })
}
