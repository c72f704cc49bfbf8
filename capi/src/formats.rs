//! File formats: Caffe BlobProto (and BlobProtoVector), NeoML blob archives
//! and NumPy .npy, from paths and from memory. The decoding lives in
//! `blobcore::io`; this module checks pointers and hands out handles.
//!
//! Byte buffers returned by `blob_to_*_bytes` are owned by libblob and
//! tracked: `blob_bytes_free` frees them, and reports a pointer it never
//! handed out (or one already freed) as `BLOB_ERR_INVALID_HANDLE` instead
//! of corrupting the heap.

use crate::handles::{self, Blob, BlobEngine};
use crate::status::{array, ffi, out, path, put};
use blobcore::io::neoml::NeomlForm;
use blobcore::Error;
use std::ffi::c_char;

/// Input byte buffers larger than this are refused before they are read
/// (no file format here has a use for more than isize::MAX bytes anyway).
const MAX_INPUT: usize = isize::MAX as usize;

type Loader = fn(&blobcore::Engine, &std::path::Path) -> blobcore::Result<blobcore::Blob>;
type Decoder = fn(&blobcore::Engine, &[u8]) -> blobcore::Result<blobcore::Blob>;

fn load(e: *const BlobEngine, p: *const std::ffi::c_char, o: *mut *mut Blob, f: Loader) -> i32 {
    ffi!({
        let o = out(o, "out")?;
        let e = handles::engine(e)?;
        let b = f(&e, path(p)?)?;
        put(o, handles::issue_blob(b));
        Ok(())
    })
}

fn decode(e: *const BlobEngine, data: *const u8, len: usize, o: *mut *mut Blob, f: Decoder) -> i32 {
    ffi!({
        let o = out(o, "out")?;
        let e = handles::engine(e)?;
        let bytes = array(data, len, MAX_INPUT, "data")?;
        let b = f(&e, bytes)?;
        put(o, handles::issue_blob(b));
        Ok(())
    })
}

fn encode(b: *const Blob, o: *mut *mut u8, len: *mut usize, f: impl FnOnce(&blobcore::Blob) -> Result<Vec<u8>, blobcore::Error>) -> i32 {
    ffi!({
        let o = out(o, "out")?;
        let len = out(len, "len")?;
        let b = handles::blob(b, "blob")?;
        let bytes = f(&b)?;
        put(o, crate::byte_buffers::hand_out(&bytes)?);
        put(len, bytes.len());
        Ok(())
    })
}

/// Loads a Caffe BlobProto file (`.binaryproto`) as a new f32 blob (f64
/// when the file holds `double_data`), with its diff when it has one.
/// Legacy num/channels/height/width files load as 4-D blobs.
#[no_mangle]
pub extern "C" fn blob_load_caffe(e: *const BlobEngine, path: *const c_char, out: *mut *mut Blob) -> i32 {
    load(e, path, out, |e, p| blobcore::Blob::load_caffe(e, p))
}

/// Saves an f32 or f64 blob as a Caffe BlobProto file in the shape form,
/// with its diff when `write_diff` (zeros if it has none). The file is
/// replaced atomically; on error an existing file is left as it was.
#[no_mangle]
pub extern "C" fn blob_save_caffe(b: *const Blob, path: *const c_char, write_diff: bool) -> i32 {
    ffi!({
        let p = crate::status::path(path)?;
        handles::blob(b, "blob")?.save_caffe(p, write_diff)
    })
}

/// Caffe `FromProto(proto, reshape)`: reads a BlobProto file into an
/// existing f32 or f64 blob. With `reshape` the blob takes the file's
/// shape; without it the shapes must match (legacy 4-D shapes pad the
/// blob's dims with 1s on the left). On error the blob is unchanged.
#[no_mangle]
pub extern "C" fn blob_load_caffe_into(b: *const Blob, path: *const c_char, reshape: bool) -> i32 {
    ffi!({
        let p = crate::status::path(path)?;
        handles::blob(b, "blob")?.load_caffe_into(p, reshape)
    })
}

/// Loads a Caffe BlobProtoVector file. `*count` receives the number of
/// blobs in the file; when it exceeds `capacity` nothing is created and
/// the call returns `BLOB_ERR_OUT_OF_RANGE` (call with `capacity` 0 to ask
/// for the count). Otherwise `out[0..count]` receive new handles.
#[no_mangle]
pub extern "C" fn blob_load_caffe_vector(
    e: *const BlobEngine,
    path: *const c_char,
    out: *mut *mut Blob,
    capacity: usize,
    count: *mut usize,
) -> i32 {
    ffi!({
        let count = crate::status::out(count, "count")?;
        let e = handles::engine(e)?;
        let blobs = blobcore::Blob::load_caffe_vector(&e, crate::status::path(path)?)?;
        put(count, blobs.len());
        if blobs.len() > capacity {
            return Err(Error::OutOfRange(format!(
                "the file holds {} blobs but out has room for {capacity}",
                blobs.len()
            )));
        }
        let slots = crate::status::array_mut(out, blobs.len(), usize::MAX / 64, "out")?;
        for (slot, b) in slots.iter_mut().zip(blobs) {
            *slot = handles::issue_blob(b);
        }
        Ok(())
    })
}

/// Saves `n` f32/f64 blobs as a Caffe BlobProtoVector file.
#[no_mangle]
pub extern "C" fn blob_save_caffe_vector(
    blobs: *const *const Blob,
    n: usize,
    path: *const c_char,
    write_diff: bool,
) -> i32 {
    ffi!({
        let p = crate::status::path(path)?;
        let list = handles::blob_list(blobs, n, "blobs")?;
        let refs: Vec<&blobcore::Blob> = list.iter().collect();
        blobcore::Blob::save_caffe_vector(&refs, p, write_diff)
    })
}

/// Decodes a serialized Caffe BlobProto held in memory (`len` bytes at
/// `data`), as `blob_load_caffe`.
#[no_mangle]
pub extern "C" fn blob_from_caffe_bytes(e: *const BlobEngine, data: *const u8, len: usize, out: *mut *mut Blob) -> i32 {
    decode(e, data, len, out, blobcore::Blob::from_caffe_bytes)
}

/// Serializes an f32/f64 blob as a Caffe BlobProto. `*out` receives a
/// buffer of `*len` bytes owned by libblob: free it with `blob_bytes_free`.
#[no_mangle]
pub extern "C" fn blob_to_caffe_bytes(b: *const Blob, write_diff: bool, out: *mut *mut u8, len: *mut usize) -> i32 {
    if write_diff {
        encode(b, out, len, |b| b.to_caffe_bytes(true))
    } else {
        encode(b, out, len, |b| b.to_caffe_bytes(false))
    }
}

/// Loads a NeoML blob archive in either form (`SerializeBlob`'s, with a
/// leading isNull byte, or `CDnnBlob::Serialize`'s, starting `FF D0 07 00
/// 00`) as a rank-7 f32 or i32 blob (a null blob is `BLOB_ERR_FORMAT`).
#[no_mangle]
pub extern "C" fn blob_load_neoml(e: *const BlobEngine, path: *const c_char, out: *mut *mut Blob) -> i32 {
    load(e, path, out, |e, p| blobcore::Blob::load_neoml(e, p))
}

/// Saves an f32 or i32 blob of rank <= 7 as a NeoML blob archive
/// (version 2000) in `SerializeBlob`'s form (`blob_save_neoml_form` for
/// the other).
#[no_mangle]
pub extern "C" fn blob_save_neoml(b: *const Blob, path: *const c_char) -> i32 {
    ffi!({
        let p = crate::status::path(path)?;
        handles::blob(b, "blob")?.save_neoml(p)
    })
}

/// As `blob_save_neoml` in the given archive form: `BLOB_NEOML_BLOB`
/// (`SerializeBlob`: a leading isNull byte; what `blob_save_neoml`
/// writes) or `BLOB_NEOML_SERIALIZE` (`CDnnBlob::Serialize`: starts
/// `FF D0 07 00 00`; what NeoML's Python `neoml.Blob.load` reads).
/// `blob_load_neoml` reads both.
#[no_mangle]
pub extern "C" fn blob_save_neoml_form(b: *const Blob, path: *const c_char, form: i32) -> i32 {
    ffi!({
        let form = NeomlForm::from_code(form as i64)?;
        let p = crate::status::path(path)?;
        handles::blob(b, "blob")?.save_neoml_as(p, form)
    })
}

/// As `blob_to_neoml_bytes` in the given archive form (`BLOB_NEOML_*`).
#[no_mangle]
pub extern "C" fn blob_to_neoml_bytes_form(b: *const Blob, form: i32, out: *mut *mut u8, len: *mut usize) -> i32 {
    match NeomlForm::from_code(form as i64) {
        Ok(f) => encode(b, out, len, move |b| b.to_neoml_bytes_as(f)),
        Err(e) => ffi!({ Err::<(), _>(e) }),
    }
}

/// Decodes a NeoML blob archive held in memory.
#[no_mangle]
pub extern "C" fn blob_from_neoml_bytes(e: *const BlobEngine, data: *const u8, len: usize, out: *mut *mut Blob) -> i32 {
    decode(e, data, len, out, blobcore::Blob::from_neoml_bytes)
}

/// Serializes a blob as a NeoML blob archive; free `*out` with
/// `blob_bytes_free`.
#[no_mangle]
pub extern "C" fn blob_to_neoml_bytes(b: *const Blob, out: *mut *mut u8, len: *mut usize) -> i32 {
    encode(b, out, len, blobcore::Blob::to_neoml_bytes)
}

/// Loads a NumPy .npy file (float32, int32, float64, int64, uint8, int8 or
/// float16, either byte order; Fortran order is converted to row-major).
#[no_mangle]
pub extern "C" fn blob_load_npy(e: *const BlobEngine, path: *const c_char, out: *mut *mut Blob) -> i32 {
    load(e, path, out, |e, p| blobcore::Blob::load_npy(e, p))
}

/// `numpy.load(path, mmap_mode=mode)`: a .npy file whose data the blob
/// shares through a memory map (O(1); nothing is read until touched).
/// `mode` is "r" (read-only: the blob is read-only), "r+" (shared: writes
/// go to the file) or "c" (copy-on-write: writes stay private). The map
/// lives while any blob, view or export uses it; growing the blob is
/// `BLOB_ERR_BUSY`. Fortran-order and other-endian files are converted
/// into fresh memory (not mapped). A file mapped twice is one memory to
/// `blob_shares_memory` and to every overlap check.
#[no_mangle]
pub extern "C" fn blob_load_npy_mapped(e: *const BlobEngine, path: *const c_char, mode: *const c_char, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let engine = handles::engine(e)?;
        let mode = blobcore::mapped::MapMode::from_name(crate::status::text(mode, "mode")?)?;
        let b = blobcore::Blob::load_npy_mapped(&engine, crate::status::path(path)?, mode)?;
        put(o, handles::issue_blob(b));
        Ok(())
    })
}

/// Saves a blob as a C-order .npy file that `numpy.load` reads (bfloat16
/// is `BLOB_ERR_DTYPE`: NumPy has no such dtype).
#[no_mangle]
pub extern "C" fn blob_save_npy(b: *const Blob, path: *const c_char) -> i32 {
    ffi!({
        let p = crate::status::path(path)?;
        handles::blob(b, "blob")?.save_npy(p)
    })
}

/// Decodes a .npy file held in memory.
#[no_mangle]
pub extern "C" fn blob_from_npy_bytes(e: *const BlobEngine, data: *const u8, len: usize, out: *mut *mut Blob) -> i32 {
    decode(e, data, len, out, blobcore::Blob::from_npy_bytes)
}

/// Serializes a blob as a .npy file; free `*out` with `blob_bytes_free`.
#[no_mangle]
pub extern "C" fn blob_to_npy_bytes(b: *const Blob, out: *mut *mut u8, len: *mut usize) -> i32 {
    encode(b, out, len, blobcore::Blob::to_npy_bytes)
}

/// Frees a buffer from `blob_to_*_bytes`. NULL is a no-op; a pointer
/// libblob did not hand out, or already freed, is
/// `BLOB_ERR_INVALID_HANDLE` and frees nothing. Each buffer is mapped at a
/// random address, so a stale pointer practically never names a newer
/// buffer (a double free is caught even after more buffers were made).
#[no_mangle]
pub extern "C" fn blob_bytes_free(bytes: *mut u8) -> i32 {
    ffi!({
        if bytes.is_null() {
            return Ok(());
        }
        crate::byte_buffers::free(bytes)
    })
}
