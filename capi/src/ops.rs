//! Element-wise operations and reductions.

use crate::handles::{self, Blob};
use crate::status::{ffi, out, put};
use blobcore::{DType, Error, Scalar};
use std::ffi::c_void;

/// `b += other` (same dims and dtype).
#[no_mangle]
pub extern "C" fn blob_add(b: *mut Blob, other: *const Blob) -> i32 {
    ffi!({ handles::blob(b, "blob")?.add(&handles::blob(other, "other")?) })
}

/// Sets every element to zero.
#[no_mangle]
pub extern "C" fn blob_clear(b: *mut Blob) -> i32 {
    ffi!({ handles::with_blob(b, "blob", |b| b.clear()) })
}

/// Sets object `n` to zero.
#[no_mangle]
pub extern "C" fn blob_clear_object(b: *mut Blob, n: i64) -> i32 {
    ffi!({ handles::with_blob(b, "blob", |b| b.clear_object(n)) })
}

/// Sets every element to `value` (floats round to nearest even, integers
/// truncate toward zero, bool stores `value != 0`). A value an integer
/// dtype cannot hold (out of its range, infinite, NaN) is
/// `BLOB_ERR_OUT_OF_RANGE` and changes nothing; `blob_fill_element` stores
/// any value exactly (64-bit integers past 2^53 included).
#[no_mangle]
pub extern "C" fn blob_fill(b: *mut Blob, value: f64) -> i32 {
    ffi!({ handles::with_blob(b, "blob", |b| b.fill(value)) })
}

/// Sets every element of object `n` to `value` (converted as `blob_fill`
/// converts it).
#[no_mangle]
pub extern "C" fn blob_fill_object(b: *mut Blob, n: i64, value: f64) -> i32 {
    ffi!({ handles::with_blob(b, "blob", |b| b.fill_object(n, value)) })
}

/// Sets every element to the one element of `dtype` at `value`, bit for
/// bit (an `int64_t`, `uint64_t`, `double`, `uint16_t` holding a bfloat16,
/// ...). `dtype` must be the blob's (`BLOB_ERR_DTYPE`: no conversion
/// happens); `value` may be unaligned and may point into the blob itself.
#[no_mangle]
pub extern "C" fn blob_fill_element(b: *mut Blob, dtype: i32, value: *const c_void) -> i32 {
    ffi!({
        let s = scalar_at(dtype, value)?;
        handles::with_blob(b, "blob", |b| b.fill_element(&s))
    })
}

/// Sets every element of object `n` to the one element of `dtype` at
/// `value`, bit for bit (as `blob_fill_element`).
#[no_mangle]
pub extern "C" fn blob_fill_object_element(b: *mut Blob, n: i64, dtype: i32, value: *const c_void) -> i32 {
    ffi!({
        let s = scalar_at(dtype, value)?;
        handles::with_blob(b, "blob", |b| b.fill_object_element(n, &s))
    })
}

/// The one element of `dtype` at `value`, copied out before any blob is
/// touched (so it may point into the blob it fills).
fn scalar_at(dtype: i32, value: *const c_void) -> Result<Scalar, Error> {
    let dtype = DType::from_code(dtype)?;
    if value.is_null() {
        return Err(Error::NullPointer("value is NULL".into()));
    }
    // SAFETY: non-NULL; the caller promises one readable element of
    // `dtype` there (`dtype.size()` bytes, any alignment: read as bytes).
    let bytes = unsafe { std::slice::from_raw_parts(value as *const u8, dtype.size()) };
    Scalar::from_bytes(dtype, bytes)
}

/// Multiplies every element by `factor`: floats in their own precision
/// (float16 and bfloat16 through float); integers in double where a
/// double holds them (|x| <= 2^53), exactly beyond (int64 and uint64 keep
/// their low bits), then truncated toward zero and saturated to the
/// dtype's range. Bool and float8 blobs: `BLOB_ERR_DTYPE`.
#[no_mangle]
pub extern "C" fn blob_scale(b: *mut Blob, factor: f64) -> i32 {
    ffi!({ handles::with_blob(b, "blob", |b| b.scale(factor)) })
}

/// Sum of absolute values, accumulated in double.
#[no_mangle]
pub extern "C" fn blob_asum(b: *const Blob, out_sum: *mut f64) -> i32 {
    ffi!({
        let o = out(out_sum, "out")?;
        put(o, handles::with_blob(b, "blob", |b| b.asum())?);
        Ok(())
    })
}

/// Sum of squares, accumulated in double.
#[no_mangle]
pub extern "C" fn blob_sumsq(b: *const Blob, out_sum: *mut f64) -> i32 {
    ffi!({
        let o = out(out_sum, "out")?;
        put(o, handles::with_blob(b, "blob", |b| b.sumsq())?);
        Ok(())
    })
}

/// Caffe `Update`: data -= diff (nothing happens if no diff was created).
#[no_mangle]
pub extern "C" fn blob_update(b: *mut Blob) -> i32 {
    ffi!({ handles::blob(b, "blob")?.update() })
}
