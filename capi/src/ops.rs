//! Element-wise operations and reductions.

use crate::handles::{self, Blob};
use crate::status::{ffi, out, put};

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

/// Sets every element to `value` (integers truncate toward zero and saturate).
#[no_mangle]
pub extern "C" fn blob_fill(b: *mut Blob, value: f64) -> i32 {
    ffi!({ handles::with_blob(b, "blob", |b| b.fill(value)) })
}

/// Sets every element of object `n` to `value`.
#[no_mangle]
pub extern "C" fn blob_fill_object(b: *mut Blob, n: i64, value: f64) -> i32 {
    ffi!({ handles::with_blob(b, "blob", |b| b.fill_object(n, value)) })
}

/// Multiplies every element by `factor`.
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
