//! Shape changes, host copies, blob copies and transposes.

use crate::handles::{self, Blob};
use crate::status::{array, dims as parse_dims, ffi, out, put};
use blobcore::{BlobDim, DType, Error};
use std::ffi::c_void;

fn host_len(byte_len: usize) -> Result<(), Error> {
    if isize::try_from(byte_len).is_err() {
        return Err(Error::InvalidArgument(format!("byte_len {byte_len} exceeds isize::MAX")));
    }
    Ok(())
}

/// Caffe `Reshape`: keeps memory up to the capacity; growing past it
/// reallocates (zeros), which is `BLOB_ERR_BUSY` while views, buffers or
/// exports share the memory, and for writable memory the blob does not
/// own (`blob_wrap`, DLPack imports: the owner would stop seeing the blob).
#[no_mangle]
pub extern "C" fn blob_reshape(b: *mut Blob, dims: *const i64, rank: usize) -> i32 {
    ffi!({ handles::blob(b, "blob")?.reshape(&parse_dims(dims, rank)?) })
}

/// Changes the dims at the same element count without touching the data.
#[no_mangle]
pub extern "C" fn blob_reinterpret(b: *mut Blob, dims: *const i64, rank: usize) -> i32 {
    ffi!({ handles::blob(b, "blob")?.reinterpret(&parse_dims(dims, rank)?) })
}

/// Copies `byte_len` bytes (exactly the blob's size) from `src` into the blob.
#[no_mangle]
pub extern "C" fn blob_copy_from_host(b: *mut Blob, src: *const c_void, byte_len: usize) -> i32 {
    ffi!({
        let b = handles::blob(b, "blob")?;
        host_len(byte_len)?;
        if byte_len != b.byte_size() {
            return Err(Error::InvalidArgument(format!("{byte_len} bytes given for a blob of {} bytes", b.byte_size())));
        }
        if byte_len != 0 && src.is_null() {
            return Err(Error::NullPointer("src is NULL".into()));
        }
        // SAFETY: non-NULL (or nothing is read); the caller promises
        // byte_len readable bytes, which may be the blob's own memory
        // (blob_raw): the core copies them first then.
        unsafe { b.copy_from_host_ptr(src as *const u8, byte_len) }
    })
}

/// Copies the blob's data (exactly `byte_len` bytes) into `dst`.
#[no_mangle]
pub extern "C" fn blob_copy_to_host(b: *const Blob, dst: *mut c_void, byte_len: usize) -> i32 {
    ffi!({
        let b = handles::blob(b, "blob")?;
        host_len(byte_len)?;
        if byte_len != b.byte_size() {
            return Err(Error::InvalidArgument(format!("room for {byte_len} bytes given for a blob of {} bytes", b.byte_size())));
        }
        if byte_len == 0 {
            return Ok(());
        }
        if dst.is_null() {
            return Err(Error::NullPointer("dst is NULL".into()));
        }
        // SAFETY: non-NULL; the caller promises byte_len writable bytes.
        let d = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, byte_len) };
        b.copy_to_bytes(d)
    })
}

/// The byte length of `count` elements of `dtype`, checked for overflow.
fn typed_len(dtype: DType, count: usize) -> Result<usize, Error> {
    count
        .checked_mul(dtype.size())
        .filter(|&n| isize::try_from(n).is_ok())
        .ok_or_else(|| Error::InvalidArgument(format!("{count} elements of {dtype} exceed isize::MAX bytes")))
}

/// NeoML `CopyTo(dst, size)`: copies the first `count` elements (row-major)
/// into `dst`, which holds `count` elements of `dtype`. `dtype` must be the
/// blob's (`BLOB_ERR_DTYPE`: no conversion happens); `count` may not exceed
/// the element count (`BLOB_ERR_INVALID_ARGUMENT`). `dst` may be NULL when
/// `count` is 0, and may overlap the blob's own memory (memmove).
#[no_mangle]
pub extern "C" fn blob_copy_to(b: *const Blob, dtype: i32, dst: *mut c_void, count: usize) -> i32 {
    ffi!({
        let b = handles::blob(b, "blob")?;
        let dtype = DType::from_code(dtype)?;
        let len = typed_len(dtype, count)?;
        if dst.is_null() && count > 0 {
            return Err(Error::NullPointer("dst is NULL".into()));
        }
        // SAFETY: the caller promises `count` writable elements at `dst`
        // (checked non-NULL when count > 0); they may even be the blob's.
        unsafe { b.copy_to_prefix_ptr(dtype, dst as *mut u8, len) }
    })
}

/// Copies `count` elements of `dtype` from `src` into the blob's first
/// `count` elements (row-major), leaving the rest as it was; `count` equal
/// to the element count is NeoML's `CopyFrom(const T*)`. `dtype` must be
/// the blob's (`BLOB_ERR_DTYPE`); `count` may not exceed the element count.
/// `src` may overlap the blob's own memory (memmove).
#[no_mangle]
pub extern "C" fn blob_copy_from_typed(b: *mut Blob, dtype: i32, src: *const c_void, count: usize) -> i32 {
    ffi!({
        let b = handles::blob(b, "blob")?;
        let dtype = DType::from_code(dtype)?;
        let len = typed_len(dtype, count)?;
        if src.is_null() && count > 0 {
            return Err(Error::NullPointer("src is NULL".into()));
        }
        // SAFETY: the caller promises `count` readable elements at `src`
        // (checked non-NULL when count > 0); they may even be the blob's.
        unsafe { b.copy_from_prefix_ptr(dtype, src as *const u8, len) }
    })
}

/// NeoML `CopyFrom`: same dims and dtype.
#[no_mangle]
pub extern "C" fn blob_copy_from(dst: *mut Blob, src: *const Blob) -> i32 {
    ffi!({ handles::blob(dst, "dst")?.copy_from(&handles::blob(src, "src")?) })
}

/// Caffe `CopyFrom(source, copy_diff, reshape)`: copies `src`'s data (or,
/// with `copy_diff`, its diff into `dst`'s diff); when the dims differ,
/// `reshape` reshapes `dst` like `src` first, else `BLOB_ERR_SHAPE`.
#[no_mangle]
pub extern "C" fn blob_copy_from_blob(dst: *mut Blob, src: *const Blob, copy_diff: bool, reshape: bool) -> i32 {
    ffi!({ handles::blob(dst, "dst")?.copy_from_caffe(&handles::blob(src, "src")?, copy_diff, reshape) })
}

/// Caffe `ShareData`: `b` uses `other`'s data memory from now on (counts
/// and dtypes must match; `BLOB_ERR_BUSY` while something shares `b`'s
/// current memory).
#[no_mangle]
pub extern "C" fn blob_share_data(b: *mut Blob, other: *const Blob) -> i32 {
    ffi!({ handles::blob(b, "blob")?.share_data(&handles::blob(other, "other")?) })
}

/// Caffe `ShareDiff`: `b`'s diff uses `other`'s diff memory from now on.
#[no_mangle]
pub extern "C" fn blob_share_diff(b: *mut Blob, other: *const Blob) -> i32 {
    ffi!({ handles::blob(b, "blob")?.share_diff(&handles::blob(other, "other")?) })
}

/// NeoML `TransposeFrom`: `dst` = `src` with axes d1 and d2 swapped (numpy.swapaxes).
#[no_mangle]
pub extern "C" fn blob_transpose_from(dst: *mut Blob, src: *const Blob, d1: i32, d2: i32) -> i32 {
    ffi!({ handles::blob(dst, "dst")?.transpose_from(&handles::blob(src, "src")?, d1 as isize, d2 as isize) })
}

/// `numpy.transpose` into `dst`: `dst` = `src` with its axes taken in the
/// order `axes` (`n` entries, a permutation of `0..rank`; negative entries
/// count from the end). `dst` may have any layout; dims must match.
#[no_mangle]
pub extern "C" fn blob_permute_from(dst: *mut Blob, src: *const Blob, axes: *const i32, n: usize) -> i32 {
    ffi!({
        let axes = axis_list(axes, n)?;
        handles::blob(dst, "dst")?.permute_from(&handles::blob(src, "src")?, &axes)
    })
}

/// `numpy.transpose(b, axes)` as a new dense blob in `*out`.
#[no_mangle]
pub extern "C" fn blob_permute(b: *const Blob, axes: *const i32, n: usize, out: *mut *mut Blob) -> i32 {
    ffi!({
        let o = crate::status::out(out, "out")?;
        let b = handles::blob(b, "blob")?;
        let axes = axis_list(axes, n)?;
        put(o, handles::issue_blob(b.permuted(&axes)?));
        Ok(())
    })
}

/// The caller's axis list (at most the maximum rank entries).
fn axis_list(axes: *const i32, n: usize) -> Result<Vec<isize>, Error> {
    Ok(array(axes, n, blobcore::MAX_RANK, "axes")?.iter().map(|&a| a as isize).collect())
}

fn derive(b: *const Blob, o: *mut *mut Blob, f: impl FnOnce(&blobcore::Blob) -> Result<blobcore::Blob, Error>) -> i32 {
    ffi!({
        let o = out(o, "out")?;
        let b = handles::blob(b, "blob")?;
        put(o, handles::issue_blob(f(&b)?));
        Ok(())
    })
}

/// NeoML `GetCopy`: an independent copy.
#[no_mangle]
pub extern "C" fn blob_copy(b: *const Blob, out: *mut *mut Blob) -> i32 {
    derive(b, out, |b| b.copy())
}

/// NeoML `GetClone`: same dims and dtype, reading as zeros.
#[no_mangle]
pub extern "C" fn blob_clone(b: *const Blob, out: *mut *mut Blob) -> i32 {
    derive(b, out, |b| b.clone_zeroed())
}

/// NeoML `GetClone(type)`: same dims, another dtype, reading as zeros.
#[no_mangle]
pub extern "C" fn blob_clone_as(b: *const Blob, dtype: i32, out: *mut *mut Blob) -> i32 {
    derive(b, out, |b| b.clone_as(DType::from_code(dtype)?))
}

/// NeoML `GetTransposed`: a contiguous copy with axes d1 and d2 swapped.
#[no_mangle]
pub extern "C" fn blob_transposed(b: *const Blob, d1: i32, d2: i32, out: *mut *mut Blob) -> i32 {
    derive(b, out, |b| b.transposed(d1 as isize, d2 as isize))
}

/// NeoML `GetTransposed(d1, d2)` with named dims (`BLOB_DIM_*`): the blob
/// seen through its 7 padded named dims with `d1` and `d2` swapped. The
/// result keeps the blob's rank when the padding stays 1, else has rank 7.
#[no_mangle]
pub extern "C" fn blob_transposed_dims(b: *const Blob, d1: i32, d2: i32, out: *mut *mut Blob) -> i32 {
    derive(b, out, |b| b.transposed_dims(BlobDim::from_index(d1 as i64)?, BlobDim::from_index(d2 as i64)?))
}

/// NeoML `TransposeFrom(src, d1, d2)` with named dims (`BLOB_DIM_*`):
/// `dst`'s 7 padded dims must be `src`'s with `d1` and `d2` swapped.
#[no_mangle]
pub extern "C" fn blob_transpose_from_dims(dst: *mut Blob, src: *const Blob, d1: i32, d2: i32) -> i32 {
    ffi!({
        let (d1, d2) = (BlobDim::from_index(d1 as i64)?, BlobDim::from_index(d2 as i64)?);
        handles::blob(dst, "dst")?.transpose_from_dims(&handles::blob(src, "src")?, d1, d2)
    })
}

/// The Caffe diff companion (same dims and dtype, created on first use) as a new handle.
#[no_mangle]
pub extern "C" fn blob_diff(b: *const Blob, out: *mut *mut Blob) -> i32 {
    derive(b, out, |b| b.diff())
}
