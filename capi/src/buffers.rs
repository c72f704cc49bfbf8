//! NeoML buffers with LIFO checking.

use crate::handles::{self, Blob};
use crate::status::{ffi, out, put};
use std::ffi::c_void;

/// NeoML `GetBuffer`: `*out` points at elements [pos, pos + size) of the
/// blob's memory in memory order: its elements for a dense blob; for a
/// blob with a layout (NHWC, blocked, padded) positions in its raw span,
/// padding included (`blob_raw_count` elements; OpenVINO's `buffer()`).
/// Strided views of another blob refuse (`BLOB_ERR_UNSUPPORTED`). With
/// `exchange` the buffer holds current data. Buffers must be released in
/// LIFO order with `blob_release_buffer`. A read-only blob
/// (`blob_is_writable` false) gives `exchange` buffers to read only (its
/// memory may be mapped read-only: a write through it may crash);
/// without `exchange` it is `BLOB_ERR_READ_ONLY`.
#[no_mangle]
pub extern "C" fn blob_get_buffer(b: *mut Blob, pos: i64, size: i64, exchange: bool, out_ptr: *mut *mut c_void) -> i32 {
    ffi!({
        let o = out(out_ptr, "out")?;
        let p = handles::blob(b, "blob")?.get_buffer(pos, size, exchange)?;
        put(o, p.as_ptr() as *mut c_void);
        Ok(())
    })
}

/// NeoML `ReleaseBuffer`: `ptr` must be the newest held buffer
/// (`BLOB_ERR_LIFO` otherwise, and nothing changes). With `exchange`,
/// what was written lands in the blob.
#[no_mangle]
pub extern "C" fn blob_release_buffer(b: *mut Blob, ptr: *mut c_void, exchange: bool) -> i32 {
    ffi!({ handles::blob(b, "blob")?.release_buffer(ptr as *const u8, exchange) })
}

/// The number of elements in the blob's raw memory span: its element count
/// when dense; for a blob with a layout, every element its memory reaches
/// (padding included). `BLOB_ERR_UNSUPPORTED` for strided views.
#[no_mangle]
pub extern "C" fn blob_raw_count(b: *const Blob, out_count: *mut i64) -> i32 {
    ffi!({
        let o = out(out_count, "out")?;
        let n = handles::blob(b, "blob")?.raw_count()?;
        put(o, i64::try_from(n).unwrap_or(i64::MAX));
        Ok(())
    })
}

/// The blob's raw memory span as a new 1-D dense blob sharing it (for a
/// blocked blob: its memory exactly as laid out, to save or hand to code
/// that knows the layout).
#[no_mangle]
pub extern "C" fn blob_raw(b: *const Blob, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let r = handles::blob(b, "blob")?.raw()?;
        put(o, handles::issue_blob(r));
        Ok(())
    })
}
