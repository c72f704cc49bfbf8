//! Layouts: blobs with a TensorDesc, element offsets, regions, reorder.

use crate::handles::{self, Blob, BlobEngine};
use crate::status::{dims, ffi, indices, out, put};
use blobcore::{BlockingDesc, DType, TensorDesc, MAX_RANK};

/// Creates a blob with logical `dims` laid out as the blocking (`blk_dims`,
/// `order`, `n_blk` entries each; dense strides): e.g. dims {1,25,20,20}
/// with blk_dims {1,4,20,20,8} and order {0,1,2,3,1} is channels blocked
/// by 8. Its memory is sized by the blocked dims (padding included).
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn blob_create_desc(
    e: *const BlobEngine,
    dtype: i32,
    dims_ptr: *const i64,
    rank: usize,
    blk_dims: *const i64,
    order: *const i64,
    n_blk: usize,
    out_blob: *mut *mut Blob,
) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let engine = handles::engine(e)?;
        let dtype = DType::from_code(dtype)?;
        let d = dims(dims_ptr, rank)?;
        let blk = indices(blk_dims, n_blk, 2 * MAX_RANK, "blk_dims")?;
        let ord = indices(order, n_blk, 2 * MAX_RANK, "order")?;
        let desc = TensorDesc::with_blocking(dtype, &d, BlockingDesc::new(&blk, &ord)?)?;
        put(o, handles::issue_blob(blobcore::Blob::with_desc(&engine, &desc)?));
        Ok(())
    })
}

/// The memory offset, in elements, of the element at logical `index`
/// (`n` = rank entries), following the blob's layout (OpenVINO `offset(v)`).
#[no_mangle]
pub extern "C" fn blob_desc_offset(b: *const Blob, idx: *const i64, n: usize, out_offset: *mut i64) -> i32 {
    ffi!({
        let o = out(out_offset, "out")?;
        let i = indices(idx, n, MAX_RANK, "index")?;
        let off = handles::blob(b, "blob")?.desc().offset_index(&i)?;
        put(o, off as i64);
        Ok(())
    })
}

/// The blob's layout (`BLOB_LAYOUT_*`, OpenVINO's values).
#[no_mangle]
pub extern "C" fn blob_layout(b: *const Blob, out_layout: *mut i32) -> i32 {
    ffi!({
        let o = out(out_layout, "out")?;
        put(o, handles::peek_blob(b, "blob", |b| Ok(b.layout().code()))?);
        Ok(())
    })
}

/// A region (ROI) view of `[begin, end)` along each of the `n` = rank
/// dims: shares memory, keeps the strides. Dense-only operations refuse it
/// (`BLOB_ERR_UNSUPPORTED`); `blob_reorder` and `blob_copy_from` accept it.
#[no_mangle]
pub extern "C" fn blob_region(b: *mut Blob, begin: *const i64, end: *const i64, n: usize, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let bg = indices(begin, n, MAX_RANK, "begin")?;
        let en = indices(end, n, MAX_RANK, "end")?;
        let r = handles::blob(b, "blob")?.region(&bg, &en)?;
        put(o, handles::issue_blob(r));
        Ok(())
    })
}

/// Copies `src` into `dst` converting between layouts (same dims and dtype).
#[no_mangle]
pub extern "C" fn blob_reorder(dst: *mut Blob, src: *const Blob) -> i32 {
    ffi!({ handles::blob(dst, "dst")?.reorder_from(&handles::blob(src, "src")?) })
}
