//! Windows (NeoML) and slices (Serrano).

use crate::handles::{self, Blob};
use crate::status::{ffi, index, indices, out, put};
use blobcore::MAX_RANK;

/// NeoML `CreateWindowBlob`: a view of `window_size` entries of axis 0, at position 0.
#[no_mangle]
pub extern "C" fn blob_create_window(parent: *mut Blob, window_size: i64, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let p = handles::blob(parent, "parent")?;
        let w = p.window(index(window_size, "window size")?)?;
        put(o, handles::issue_blob(w));
        Ok(())
    })
}

/// The view's parent as a new handle (free it), or NULL when `b` is not a view.
#[no_mangle]
pub extern "C" fn blob_parent(b: *const Blob, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let b = handles::blob(b, "blob")?;
        put(o, b.parent().map_or(std::ptr::null_mut(), handles::issue_blob));
        Ok(())
    })
}

/// The blob owning the memory (the root of the view chain; `b` itself for
/// non-views) as a new handle (free it).
#[no_mangle]
pub extern "C" fn blob_owner(b: *const Blob, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let b = handles::blob(b, "blob")?;
        put(o, handles::issue_blob(b.owner()));
        Ok(())
    })
}

/// A window's position on its parent's axis 0 (`BLOB_ERR_INVALID_ARGUMENT` for non-windows).
#[no_mangle]
pub extern "C" fn blob_parent_pos(b: *const Blob, out_pos: *mut i64) -> i32 {
    ffi!({
        let o = out(out_pos, "out")?;
        put(o, handles::blob(b, "blob")?.parent_pos()? as i64);
        Ok(())
    })
}

/// Moves a window; `BLOB_ERR_OUT_OF_RANGE` unless 0 <= pos and pos + size <= parent's axis 0.
#[no_mangle]
pub extern "C" fn blob_set_parent_pos(b: *mut Blob, pos: i64) -> i32 {
    ffi!({ handles::blob(b, "blob")?.set_parent_pos(pos) })
}

/// Moves a window by `shift` (checked like `blob_set_parent_pos`).
#[no_mangle]
pub extern "C" fn blob_shift_parent_pos(b: *mut Blob, shift: i64) -> i32 {
    ffi!({ handles::blob(b, "blob")?.shift_parent_pos(shift) })
}

/// Serrano `slice`: the sub-tensor at `n` leading indices (a view of dims[n..]).
#[no_mangle]
pub extern "C" fn blob_slice(b: *mut Blob, idx: *const i64, n: usize, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let b = handles::blob(b, "blob")?;
        if n > MAX_RANK {
            return Err(blobcore::Error::OutOfRange(format!("{n} slice indices given; a blob has at most {MAX_RANK} axes")));
        }
        let i = indices(idx, n, MAX_RANK, "slice index")?;
        put(o, handles::issue_blob(b.slice(&i)?));
        Ok(())
    })
}
