//! Layouts: blobs with a TensorDesc, element offsets, regions, reorder.

use crate::handles::{self, Blob, BlobEngine};
use crate::status::{dims, ffi, index, indices, out, put};
use blobcore::{BlockingDesc, DType, Error, Layout, TensorDesc, MAX_RANK};

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
    blob_create_desc_strided(e, dtype, dims_ptr, rank, blk_dims, order, n_blk, 0, std::ptr::null(), std::ptr::null(), out_blob)
}

/// As `blob_create_desc` with OpenVINO's full `BlockingDesc`: an
/// `offset_padding` of elements before the data, per-blocked-dim offsets
/// to the data (`dim_offsets`, `n_blk` entries, NULL for zeros) and
/// explicit `strides` in elements (`n_blk` entries, NULL for dense; they
/// must be at least dense). The memory is sized by the span they give.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn blob_create_desc_strided(
    e: *const BlobEngine,
    dtype: i32,
    dims_ptr: *const i64,
    rank: usize,
    blk_dims: *const i64,
    order: *const i64,
    n_blk: usize,
    offset_padding: i64,
    dim_offsets: *const i64,
    strides: *const i64,
    out_blob: *mut *mut Blob,
) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let engine = handles::engine(e)?;
        let dtype = DType::from_code(dtype)?;
        let d = dims(dims_ptr, rank)?;
        let blk = indices(blk_dims, n_blk, 2 * MAX_RANK, "blk_dims")?;
        let ord = indices(order, n_blk, 2 * MAX_RANK, "order")?;
        let pad = index(offset_padding, "offset_padding")?;
        let offs = if dim_offsets.is_null() { Vec::new() } else { indices(dim_offsets, n_blk, 2 * MAX_RANK, "dim_offsets")? };
        let blocking = if strides.is_null() {
            BlockingDesc::with_offsets(&blk, &ord, pad, &offs)?
        } else {
            BlockingDesc::with_strides(&blk, &ord, pad, &offs, &indices(strides, n_blk, 2 * MAX_RANK, "strides")?)?
        };
        let desc = TensorDesc::with_blocking(dtype, &d, blocking)?;
        put(o, handles::issue_blob(blobcore::Blob::with_desc(&engine, &desc)?));
        Ok(())
    })
}

/// A blob of logical `dims` laid out in a named layout (`BLOB_LAYOUT_*`,
/// OpenVINO's `TensorDesc(precision, dims, layout)`): e.g. NHWC on dims
/// `{n, c, h, w}` stores channels last. The layout's rank must match
/// (`BLOB_ERR_SHAPE`); ANY and BLOCKED mean row-major.
#[no_mangle]
pub extern "C" fn blob_create_layout(e: *const BlobEngine, dtype: i32, dims_ptr: *const i64, rank: usize, layout: i32, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let engine = handles::engine(e)?;
        let dtype = DType::from_code(dtype)?;
        let layout = Layout::from_code(layout as i64)?;
        let desc = TensorDesc::new(dtype, &dims(dims_ptr, rank)?, layout)?;
        put(o, handles::issue_blob(blobcore::Blob::with_desc(&engine, &desc)?));
        Ok(())
    })
}

/// OpenVINO `TensorDesc::getLayoutByDims`: the default layout for a rank
/// (SCALAR, C, NC, CHW, NCHW, NCDHW for ranks 0 to 5; BLOCKED beyond).
#[no_mangle]
pub extern "C" fn blob_layout_by_dims(rank: usize, out_layout: *mut i32) -> i32 {
    ffi!({
        let o = out(out_layout, "out")?;
        put(o, blobcore::layout_by_dims(rank).code());
        Ok(())
    })
}

/// OpenVINO `offset(l)`: the memory offset, in elements, of the element
/// at row-major linear index `l` of the logical dims, following the
/// blob's layout (`BLOB_ERR_OUT_OF_RANGE` past the element count).
#[no_mangle]
pub extern "C" fn blob_desc_offset_linear(b: *const Blob, l: i64, out_offset: *mut i64) -> i32 {
    ffi!({
        let o = out(out_offset, "out")?;
        let l = index(l, "linear index")?;
        let off = handles::blob(b, "blob")?.desc().offset_linear(l)?;
        put(o, off as i64);
        Ok(())
    })
}

/// OpenVINO's `BlockingDesc` of the blob: writes the number of blocked
/// dims to `*out_n` and the offset padding to `*out_offset_padding` (may
/// be NULL), and, into each non-NULL array of `capacity` entries, the
/// blocked dims, their order (logical dim of each), their strides in
/// elements and their offsets to the data. With every array NULL this is
/// a size query; a `capacity` below the count is `BLOB_ERR_OUT_OF_RANGE`
/// and writes nothing.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn blob_desc_blocking(
    b: *const Blob,
    capacity: usize,
    out_blk_dims: *mut i64,
    out_order: *mut i64,
    out_strides: *mut i64,
    out_dim_offsets: *mut i64,
    out_n: *mut usize,
    out_offset_padding: *mut i64,
) -> i32 {
    ffi!({
        let n_out = out(out_n, "out_n")?;
        let desc = handles::blob(b, "blob")?.desc();
        let bd = desc.blocking();
        let n = bd.blk_dims().len();
        let wide = |v: &[usize]| v.iter().map(|&x| x as i64).collect::<Vec<i64>>();
        let strides: Vec<i64> = bd.strides().iter().map(|&x| x as i64).collect();
        let arrays = [(out_blk_dims, wide(bd.blk_dims())), (out_order, wide(bd.order())), (out_strides, strides), (out_dim_offsets, wide(bd.offsets_to_data()))];
        if capacity < n && arrays.iter().any(|(p, _)| !p.is_null()) {
            return Err(Error::OutOfRange(format!("room for {capacity} entries given for {n} blocked dims")));
        }
        // Misaligned outputs are refused before anything is written.
        for (p, _) in &arrays {
            if !p.is_null() {
                crate::status::aligned(*p, "an out array")?;
            }
        }
        if !out_offset_padding.is_null() {
            crate::status::aligned(out_offset_padding, "out_offset_padding")?;
        }
        for (p, values) in arrays {
            if !p.is_null() {
                for (i, &v) in values.iter().enumerate() {
                    // SAFETY: non-NULL, and the caller promises room for
                    // `capacity` >= n entries.
                    unsafe { p.add(i).write(v) };
                }
            }
        }
        if !out_offset_padding.is_null() {
            put(out_offset_padding, bd.offset_padding() as i64);
        }
        put(n_out, n);
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
