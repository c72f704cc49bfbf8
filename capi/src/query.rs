//! Size queries.

use crate::handles::{self, Blob};
use crate::status::{array_mut, ffi, index, indices, out, put};
use blobcore::{BlobDim, Error, MAX_RANK};

fn query<T>(b: *const Blob, o: *mut T, f: impl FnOnce(&blobcore::Blob) -> Result<T, Error>) -> i32 {
    ffi!({
        let o = out(o, "out")?;
        let v = handles::peek_blob(b, "blob", f)?;
        put(o, v);
        Ok(())
    })
}

fn i64_of(v: usize) -> i64 {
    // Counts are bounded by i64::MAX (Shape's invariant).
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The dtype code (`BLOB_F32` ...).
#[no_mangle]
pub extern "C" fn blob_dtype(b: *const Blob, out: *mut i32) -> i32 {
    query(b, out, |b| Ok(b.dtype().code()))
}

/// NumPy's `writeable`: false for blobs from `blob_wrap_read_only` and
/// their views, whose writes are `BLOB_ERR_READ_ONLY`.
#[no_mangle]
pub extern "C" fn blob_is_writable(b: *const Blob, out: *mut bool) -> i32 {
    query(b, out, |b| Ok(b.is_writable()))
}

/// The number of axes.
#[no_mangle]
pub extern "C" fn blob_rank(b: *const Blob, out: *mut usize) -> i32 {
    query(b, out, |b| Ok(b.rank()))
}

/// Writes the dims into `out[0..rank]`; `BLOB_ERR_OUT_OF_RANGE` if `capacity` < rank.
#[no_mangle]
pub extern "C" fn blob_dims(b: *const Blob, out_dims: *mut i64, capacity: usize) -> i32 {
    ffi!({
        let b = handles::blob(b, "blob")?;
        let d = b.dims();
        if capacity < d.len() {
            return Err(Error::OutOfRange(format!("room for {capacity} dims given for a blob of rank {}", d.len())));
        }
        if d.is_empty() {
            return Ok(());
        }
        let o = out(out_dims, "out")?;
        // SAFETY: non-NULL, and the caller promises room for `capacity` >= d.len() values.
        let dst = unsafe { std::slice::from_raw_parts_mut(o, d.len()) };
        for (x, &v) in dst.iter_mut().zip(&d) {
            *x = i64_of(v);
        }
        Ok(())
    })
}

/// The size of an axis (negative counts from the end).
#[no_mangle]
pub extern "C" fn blob_dim(b: *const Blob, axis: i32, out: *mut i64) -> i32 {
    query(b, out, |b| Ok(i64_of(b.dim(axis as isize)?)))
}

/// The size of a named dim (`BLOB_DIM_*`); 1 beyond the rank; `BLOB_ERR_SHAPE` for rank > 7.
#[no_mangle]
pub extern "C" fn blob_named_dim(b: *const Blob, blob_dim: i32, out: *mut i64) -> i32 {
    query(b, out, |b| Ok(i64_of(b.named_dim(BlobDim::from_index(blob_dim as i64)?)?)))
}

/// The number of elements.
#[no_mangle]
pub extern "C" fn blob_data_size(b: *const Blob, out: *mut i64) -> i32 {
    query(b, out, |b| Ok(i64_of(b.count())))
}

/// BatchLength * BatchWidth * ListSize.
#[no_mangle]
pub extern "C" fn blob_object_count(b: *const Blob, out: *mut i64) -> i32 {
    query(b, out, |b| Ok(i64_of(b.object_count()?)))
}

/// Height * Width * Depth * Channels.
#[no_mangle]
pub extern "C" fn blob_object_size(b: *const Blob, out: *mut i64) -> i32 {
    query(b, out, |b| Ok(i64_of(b.object_size()?)))
}

/// Height * Width * Depth.
#[no_mangle]
pub extern "C" fn blob_geometrical_size(b: *const Blob, out: *mut i64) -> i32 {
    query(b, out, |b| Ok(i64_of(b.geometrical_size()?)))
}

/// NeoML `HasEqualDimensions`: whether the two blobs' 7 padded named dims
/// are equal (`{2, 3}` equals `{2, 3, 1}`); blobs of rank > 7 compare
/// their dims exactly.
#[no_mangle]
pub extern "C" fn blob_has_equal_dims(a: *const Blob, b: *const Blob, out_eq: *mut bool) -> i32 {
    ffi!({
        let o = out(out_eq, "out")?;
        let a = handles::blob(a, "a")?;
        let b = handles::blob(b, "b")?;
        put(o, a.has_equal_dims(&b));
        Ok(())
    })
}

/// Serrano's shape equality: the same dims exactly (NumPy's `shape ==`)
/// and, when `with_dtype`, the same dtype.
#[no_mangle]
pub extern "C" fn blob_same_shape(a: *const Blob, b: *const Blob, with_dtype: bool, out_eq: *mut bool) -> i32 {
    ffi!({
        let o = out(out_eq, "out")?;
        let a = handles::blob(a, "a")?;
        let b = handles::blob(b, "b")?;
        put(o, a.same_shape(&b, with_dtype));
        Ok(())
    })
}

/// Caffe `count(start, end)`: product of dims in [start, end).
#[no_mangle]
pub extern "C" fn blob_count_range(b: *const Blob, start: i32, end: i32, out: *mut i64) -> i32 {
    query(b, out, |b| {
        let s = index(start as i64, "start axis")?;
        let e = index(end as i64, "end axis")?;
        Ok(i64_of(b.count_range(s, e)?))
    })
}

/// Caffe `count(start)`: the product of dims from `start` to the end.
#[no_mangle]
pub extern "C" fn blob_count_from(b: *const Blob, start: i32, out: *mut i64) -> i32 {
    query(b, out, |b| Ok(i64_of(b.count_from(index(start as i64, "start axis")?)?)))
}

/// Caffe `offset(n, c, h, w)` over the legacy shape (rank <= 4; missing
/// trailing axes read as 1; each index below its legacy dim).
#[no_mangle]
pub extern "C" fn blob_legacy_offset(b: *const Blob, n: i64, c: i64, h: i64, w: i64, out: *mut i64) -> i32 {
    query(b, out, |b| {
        let [n, c, h, w] = legacy_index(n, c, h, w)?;
        Ok(i64_of(b.legacy_offset(n, c, h, w)?))
    })
}

/// Caffe `data_at(n, c, h, w)`: the element there, as a double.
#[no_mangle]
pub extern "C" fn blob_data_at(b: *const Blob, n: i64, c: i64, h: i64, w: i64, out: *mut f64) -> i32 {
    query(b, out, |b| {
        let [n, c, h, w] = legacy_index(n, c, h, w)?;
        b.data_at(n, c, h, w)
    })
}

/// Caffe `diff_at(n, c, h, w)`: the diff's element there (0 until written).
#[no_mangle]
pub extern "C" fn blob_diff_at(b: *const Blob, n: i64, c: i64, h: i64, w: i64, out: *mut f64) -> i32 {
    query(b, out, |b| {
        let [n, c, h, w] = legacy_index(n, c, h, w)?;
        b.diff_at(n, c, h, w)
    })
}

fn legacy_index(n: i64, c: i64, h: i64, w: i64) -> Result<[usize; 4], Error> {
    Ok([index(n, "n")?, index(c, "c")?, index(h, "h")?, index(w, "w")?])
}

/// Caffe `ShapeEquals`: whether the serialized `BlobProto` in
/// `proto[0..len]` describes this blob's shape (legacy fields compare the
/// legacy shape, padded with 1s on the left). Malformed bytes are
/// `BLOB_ERR_FORMAT`.
#[no_mangle]
pub extern "C" fn blob_shape_equals(b: *const Blob, proto: *const u8, len: usize, out: *mut bool) -> i32 {
    query(b, out, |b| b.shape_equals_caffe(crate::status::array(proto, len, isize::MAX as usize, "proto")?))
}

/// Caffe's capacity: elements the memory holds without reallocating (a
/// shrinking `blob_reshape` keeps it).
#[no_mangle]
pub extern "C" fn blob_capacity(b: *const Blob, out: *mut i64) -> i32 {
    query(b, out, |b| Ok(i64_of(b.capacity())))
}

/// Caffe `shape_string()` (`"64 3 28 28 (150528)"`) into `buf`, NUL
/// terminated; `*len` receives its length without the NUL. With `buf`
/// NULL and `cap` 0 only `*len` is written (a size query); a `cap` below
/// `*len + 1` is `BLOB_ERR_INVALID_ARGUMENT` and writes nothing.
#[no_mangle]
pub extern "C" fn blob_shape_string(b: *const Blob, buf: *mut std::ffi::c_char, cap: usize, len: *mut usize) -> i32 {
    ffi!({
        let len = out(len, "len")?;
        let text = handles::peek_blob(b, "blob", |b| Ok(b.shape_string()))?;
        let n = text.len();
        if buf.is_null() && cap == 0 {
            put(len, n);
            return Ok(());
        }
        let room = array_mut(buf.cast::<u8>(), cap, usize::MAX >> 1, "buf")?;
        if room.len() <= n {
            return Err(Error::InvalidArgument(format!("buf has {cap} bytes; the shape string needs {}", n + 1)));
        }
        room[..n].copy_from_slice(text.as_bytes());
        room[n] = 0;
        put(len, n);
        Ok(())
    })
}

/// Caffe `CanonicalAxisIndex`.
#[no_mangle]
pub extern "C" fn blob_canonical_axis(b: *const Blob, axis: i32, out: *mut i32) -> i32 {
    query(b, out, |b| Ok(b.canonical_axis(axis as isize)? as i32))
}

/// Caffe `offset(indices)`: row-major offset of `n` leading indices.
#[no_mangle]
pub extern "C" fn blob_offset(b: *const Blob, idx: *const i64, n: usize, out: *mut i64) -> i32 {
    query(b, out, |b| {
        if n > MAX_RANK {
            return Err(Error::OutOfRange(format!("{n} indices given; a blob has at most {MAX_RANK} axes")));
        }
        let i = indices(idx, n, MAX_RANK, "index")?;
        Ok(i64_of(b.offset(&i)?))
    })
}

/// Caffe `LegacyShape(index)` (num 0, channels 1, height 2, width 3; rank <= 4).
#[no_mangle]
pub extern "C" fn blob_legacy_shape(b: *const Blob, idx: i32, out: *mut i64) -> i32 {
    query(b, out, |b| Ok(i64_of(b.legacy_shape(idx as isize)?)))
}

/// Where the blob's current data lives (`BLOB_HEAD_*`).
#[no_mangle]
pub extern "C" fn blob_head(b: *const Blob, out: *mut i32) -> i32 {
    query(b, out, |b| Ok(b.head() as i32))
}

/// `numpy.shares_memory`: writes true when some byte of memory is an
/// element of both blobs, however each reaches it (views of one blob, or
/// memory wrapped with `blob_wrap` over another blob's `blob_raw`). Exact
/// for strided views.
#[no_mangle]
pub extern "C" fn blob_shares_memory(a: *const Blob, b: *const Blob, out_shares: *mut bool) -> i32 {
    ffi!({
        let o = out(out_shares, "out")?;
        let (a, b) = (handles::blob(a, "a")?, handles::blob(b, "b")?);
        put(o, a.shares_memory(&b));
        Ok(())
    })
}

/// `numpy.may_share_memory`: writes true when the bounds of the two
/// blobs' memory meet (constant time; may say true for interleaved views
/// that share nothing).
#[no_mangle]
pub extern "C" fn blob_may_share_memory(a: *const Blob, b: *const Blob, out_may: *mut bool) -> i32 {
    ffi!({
        let o = out(out_may, "out")?;
        let (a, b) = (handles::blob(a, "a")?, handles::blob(b, "b")?);
        put(o, a.may_share_memory(&b));
        Ok(())
    })
}
