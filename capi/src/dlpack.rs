//! DLPack export and import: thin wrappers of `blobcore::dlpack`.
//!
//! Ownership: an export's `*out` belongs to the caller, who hands it to a
//! consumer or calls its `deleter` (from any thread) exactly once. An
//! import takes the tensor only on success: its deleter then runs exactly
//! once, when the last blob, view or buffer using the memory lets go (or
//! at once if the data was copied). On any error `*out` is untouched, the
//! deleter has not run and the caller still owns the tensor.

use crate::handles::{self, Blob, BlobEngine};
use crate::status::{ffi, out, put};
use blobcore::dlpack::{DLManagedTensor, DLManagedTensorVersioned, DLPACK_FLAG_BITMASK_READ_ONLY};
use blobcore::Error;

/// Exports `b` as a DLPack 1.x tensor sharing its memory. `flags` is 0 (a
/// writable, zero-copy export) or `DLPACK_FLAG_BITMASK_READ_ONLY` (1: the
/// export is marked read-only); read-only blobs always export with
/// `READ_ONLY`. Dense blobs and planar views export (with strides);
/// blocked layouts are `BLOB_ERR_UNSUPPORTED`. While the tensor lives,
/// reallocating `b` is `BLOB_ERR_BUSY`; the memory outlives `b`. Free the
/// tensor by calling `(*out)->deleter(*out)` once (or by handing it to a
/// consumer that will); it needs no lock.
#[no_mangle]
pub extern "C" fn blob_to_dlpack(b: *mut Blob, flags: u32, out_tensor: *mut *mut DLManagedTensorVersioned) -> i32 {
    ffi!({
        let o = out(out_tensor, "out")?;
        if u64::from(flags) & !DLPACK_FLAG_BITMASK_READ_ONLY != 0 {
            return Err(Error::InvalidArgument(format!("DLPack export flags {flags:#x}: only 0 or DLPACK_FLAG_BITMASK_READ_ONLY (1)")));
        }
        let t = handles::blob(b, "blob")?.to_dlpack(u64::from(flags))?;
        put(o, t.as_ptr());
        Ok(())
    })
}

/// Exports the device memory of a blob on a CUDA engine as a DLPack 1.x
/// `kDLCUDA` tensor sharing it (`copy` 0) or of a new device copy (`copy`
/// 1, flagged `IS_COPIED`). `stream` follows the array API: 1 (legacy
/// default stream), 2 (per-thread default stream) or a `CUstream` handle
/// — the engine's queued kernels finish before that stream may read — or
/// -1 (no wait); 0 is `BLOB_ERR_INVALID_ARGUMENT`. While a writable export
/// lives the device copy is the reference: blobcore's host reads fetch it
/// and host writes are copied to it. A blob on another engine is
/// `BLOB_ERR_UNSUPPORTED`. Free the tensor as `blob_to_dlpack`'s.
#[no_mangle]
pub extern "C" fn blob_to_dlpack_cuda(b: *mut Blob, stream: i64, copy: i32, out_tensor: *mut *mut DLManagedTensorVersioned) -> i32 {
    ffi!({
        let o = out(out_tensor, "out")?;
        let copy = match copy {
            0 => None,
            1 => Some(true),
            c => return Err(Error::InvalidArgument(format!("copy {c}: 0 (share) or 1 (copy)"))),
        };
        let t = handles::blob(b, "blob")?.to_dlpack_cuda(Some(stream), copy)?;
        put(o, t.as_ptr());
        Ok(())
    })
}

/// The DLPack device a blob's data is exported on: `(2, ordinal)`
/// (kDLCUDA) for a blob on a CUDA engine, `(1, 0)` (kDLCPU) otherwise.
#[no_mangle]
pub extern "C" fn blob_dlpack_device(b: *const Blob, out_device_type: *mut i32, out_device_id: *mut i32) -> i32 {
    ffi!({
        let t = out(out_device_type, "out_device_type")?;
        let i = out(out_device_id, "out_device_id")?;
        let (dt, id) = handles::blob(b, "blob")?.dlpack_device();
        put(t, dt);
        put(i, id);
        Ok(())
    })
}

/// Exports `b` as a legacy (pre-1.0) `DLManagedTensor`, as `blob_to_dlpack`
/// does but without flags: a read-only blob is refused
/// (`BLOB_ERR_READ_ONLY`), since the legacy struct cannot say so.
#[no_mangle]
pub extern "C" fn blob_to_dlpack_legacy(b: *mut Blob, out_tensor: *mut *mut DLManagedTensor) -> i32 {
    ffi!({
        let o = out(out_tensor, "out")?;
        put(o, handles::blob(b, "blob")?.to_dlpack_legacy_copy(Some(false))?.as_ptr());
        Ok(())
    })
}

/// Imports a DLPack 1.x tensor as a blob on `e` (NULL: the default engine),
/// zero-copy when the tensor is row-major and aligned (else copied; the
/// deleter then runs at once). A `READ_ONLY` tensor gives a read-only blob.
/// A NULL deleter is accepted: the producer keeps ownership and must keep
/// the memory alive while any blob or view uses it. Errors (nothing taken):
/// NULL pointers `BLOB_ERR_NULL_POINTER`; a tensor, shape or strides
/// pointer not aligned for its type `BLOB_ERR_INVALID_ARGUMENT`; a major
/// version other than 1 or a
/// non-CPU device `BLOB_ERR_UNSUPPORTED`; a dtype blobcore lacks
/// `BLOB_ERR_DTYPE`; negative, overflowing or rank > 32 shapes
/// `BLOB_ERR_SHAPE`.
///
/// # Safety
/// `t` is NULL or points to a live managed tensor whose `dl_tensor` and
/// memory stay valid until its deleter runs (DLPack's contract).
// `extern "C"` functions are called from C, where `unsafe` means nothing:
// the pointer contract is the `# Safety` section above, checked as far as
// a pointer can be (NULL) and otherwise the caller's, as in rustls-ffi.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
#[no_mangle]
pub extern "C" fn blob_from_dlpack(e: *const BlobEngine, t: *mut DLManagedTensorVersioned, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let engine = handles::engine(e)?;
        // SAFETY: the caller passes NULL or a live managed tensor whose
        // memory stays valid until its deleter runs (DLPack's contract).
        let b = unsafe { blobcore::Blob::from_dlpack(&engine, t, None)? };
        put(o, handles::issue_blob(b));
        Ok(())
    })
}

/// Imports a legacy `DLManagedTensor` as `blob_from_dlpack` does (the blob
/// is writable: the legacy struct has no read-only flag).
///
/// # Safety
/// As `blob_from_dlpack`.
// `extern "C"` functions are called from C, where `unsafe` means nothing:
// the pointer contract is the `# Safety` section above, checked as far as
// a pointer can be (NULL) and otherwise the caller's, as in rustls-ffi.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
#[no_mangle]
pub extern "C" fn blob_from_dlpack_legacy(e: *const BlobEngine, t: *mut DLManagedTensor, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let engine = handles::engine(e)?;
        // SAFETY: as blob_from_dlpack.
        let b = unsafe { blobcore::Blob::from_dlpack_legacy(&engine, t, None)? };
        put(o, handles::issue_blob(b));
        Ok(())
    })
}
