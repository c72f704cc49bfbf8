//! NeoML buffers with LIFO checking.

use crate::handles::{self, Blob};
use crate::status::{ffi, out, put};
use std::ffi::c_void;

/// NeoML `GetBuffer`: `*out` points at elements [pos, pos + size). With
/// `exchange` the buffer holds current data. Buffers must be released in
/// LIFO order with `blob_release_buffer`.
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
