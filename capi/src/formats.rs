//! File formats (Caffe BlobProto, NeoML archives, .npy). The decoders land
//! with the formats issue; until then these report `BLOB_ERR_UNSUPPORTED`
//! after checking their arguments.

use crate::handles::{self, Blob, BlobEngine};
use crate::status::{ffi, out, path};
use blobcore::Error;
use std::ffi::c_char;

fn not_yet(format: &str) -> Error {
    Error::Unsupported(format!("{format} files are not supported by this build of libblob yet"))
}

fn load(e: *const BlobEngine, p: *const c_char, o: *mut *mut Blob, format: &str) -> i32 {
    ffi!({
        out(o, "out")?;
        handles::engine(e)?;
        path(p)?;
        Err(not_yet(format))
    })
}

fn save(b: *const Blob, p: *const c_char, format: &str) -> i32 {
    ffi!({
        handles::blob(b, "blob")?;
        path(p)?;
        Err(not_yet(format))
    })
}

/// Loads a Caffe BlobProto file.
#[no_mangle]
pub extern "C" fn blob_load_caffe(e: *const BlobEngine, path: *const c_char, out: *mut *mut Blob) -> i32 {
    load(e, path, out, "Caffe BlobProto")
}

/// Saves a Caffe BlobProto file (shape form; the diff too when `write_diff`).
#[no_mangle]
pub extern "C" fn blob_save_caffe(b: *const Blob, path: *const c_char, write_diff: bool) -> i32 {
    let _ = write_diff;
    save(b, path, "Caffe BlobProto")
}

/// Loads a NeoML blob archive.
#[no_mangle]
pub extern "C" fn blob_load_neoml(e: *const BlobEngine, path: *const c_char, out: *mut *mut Blob) -> i32 {
    load(e, path, out, "NeoML archive")
}

/// Saves a NeoML blob archive.
#[no_mangle]
pub extern "C" fn blob_save_neoml(b: *const Blob, path: *const c_char) -> i32 {
    save(b, path, "NeoML archive")
}

/// Loads a NumPy .npy file.
#[no_mangle]
pub extern "C" fn blob_load_npy(e: *const BlobEngine, path: *const c_char, out: *mut *mut Blob) -> i32 {
    load(e, path, out, ".npy")
}

/// Saves a NumPy .npy file.
#[no_mangle]
pub extern "C" fn blob_save_npy(b: *const Blob, path: *const c_char) -> i32 {
    save(b, path, ".npy")
}
