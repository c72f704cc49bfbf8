//! Creation (NeoML constructors, tensors, wrapping caller memory) and freeing.

use crate::handles::{self, Blob, BlobEngine};
use crate::status::{dim, dims as parse_dims, ffi, out, put};
use blobcore::{DType, Error, Shape};
use std::ffi::c_void;
use std::ptr::NonNull;

fn create(
    e: *const BlobEngine,
    dtype: i32,
    out_blob: *mut *mut Blob,
    make: impl FnOnce(&blobcore::Engine, DType) -> Result<blobcore::Blob, Error>,
) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let engine = handles::engine(e)?;
        let dtype = DType::from_code(dtype)?;
        put(o, handles::issue_blob(make(&engine, dtype)?));
        Ok(())
    })
}

/// NeoML `CreateDataBlob`: dims [bl, bw, 1, 1, 1, 1, channels].
#[no_mangle]
pub extern "C" fn blob_create_data(e: *const BlobEngine, dtype: i32, batch_length: i64, batch_width: i64, channels: i64, out: *mut *mut Blob) -> i32 {
    create(e, dtype, out, |e, d| {
        blobcore::Blob::data(e, d, dim(batch_length, "batch_length")?, dim(batch_width, "batch_width")?, dim(channels, "channels")?)
    })
}

/// NeoML `CreateListBlob`: dims [bl, bw, list_size, 1, 1, 1, channels].
#[no_mangle]
pub extern "C" fn blob_create_list(e: *const BlobEngine, dtype: i32, batch_length: i64, batch_width: i64, list_size: i64, channels: i64, out: *mut *mut Blob) -> i32 {
    create(e, dtype, out, |e, d| {
        blobcore::Blob::list(e, d, dim(batch_length, "batch_length")?, dim(batch_width, "batch_width")?, dim(list_size, "list_size")?, dim(channels, "channels")?)
    })
}

/// NeoML `Create2DImageBlob`: dims [bl, bw, 1, height, width, 1, channels].
#[no_mangle]
pub extern "C" fn blob_create_image2d(e: *const BlobEngine, dtype: i32, batch_length: i64, batch_width: i64, height: i64, width: i64, channels: i64, out: *mut *mut Blob) -> i32 {
    create(e, dtype, out, |e, d| {
        blobcore::Blob::image2d(e, d, dim(batch_length, "batch_length")?, dim(batch_width, "batch_width")?, dim(height, "height")?, dim(width, "width")?, dim(channels, "channels")?)
    })
}

/// NeoML `Create3DImageBlob`: dims [bl, bw, 1, height, width, depth, channels].
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn blob_create_image3d(e: *const BlobEngine, dtype: i32, batch_length: i64, batch_width: i64, height: i64, width: i64, depth: i64, channels: i64, out: *mut *mut Blob) -> i32 {
    create(e, dtype, out, |e, d| {
        blobcore::Blob::image3d(e, d, dim(batch_length, "batch_length")?, dim(batch_width, "batch_width")?, dim(height, "height")?, dim(width, "width")?, dim(depth, "depth")?, dim(channels, "channels")?)
    })
}

/// A blob with `rank` dims (0..=32) read from `dims` (may be NULL when rank is 0).
#[no_mangle]
pub extern "C" fn blob_create_tensor(e: *const BlobEngine, dtype: i32, dims: *const i64, rank: usize, out: *mut *mut Blob) -> i32 {
    create(e, dtype, out, |e, d| blobcore::Blob::tensor(e, d, &parse_dims(dims, rank)?))
}

/// Serrano's repeating value, `numpy.full`: a blob of `rank` dims with
/// every element `value` (integers truncate toward zero; a value an
/// integer dtype cannot hold is `BLOB_ERR_OUT_OF_RANGE`).
#[no_mangle]
pub extern "C" fn blob_create_full(e: *const BlobEngine, dtype: i32, dims: *const i64, rank: usize, value: f64, out: *mut *mut Blob) -> i32 {
    create(e, dtype, out, |e, d| blobcore::Blob::full(e, d, &parse_dims(dims, rank)?, value))
}

/// NeoML `CreateVector`: dims `[n]`.
#[no_mangle]
pub extern "C" fn blob_create_vector(e: *const BlobEngine, dtype: i32, n: i64, out: *mut *mut Blob) -> i32 {
    create(e, dtype, out, |e, d| blobcore::Blob::vector(e, d, dim(n, "n")?))
}

/// NeoML `CreateMatrix`: dims [height, width].
#[no_mangle]
pub extern "C" fn blob_create_matrix(e: *const BlobEngine, dtype: i32, height: i64, width: i64, out: *mut *mut Blob) -> i32 {
    create(e, dtype, out, |e, d| blobcore::Blob::matrix(e, d, dim(height, "height")?, dim(width, "width")?))
}

struct Release {
    f: unsafe extern "C" fn(*mut c_void),
    ctx: *mut c_void,
}
// SAFETY: the caller hands the context over to blobcore; the callback runs
// once, on whichever thread drops the last user of the memory, as documented.
unsafe impl Send for Release {}

/// Shares `byte_len` bytes at `data` without copying. `release(ctx)` (if
/// not NULL) is called exactly once when the last blob, view or buffer
/// using the memory lets go — possibly on another thread. On error nothing
/// is taken and `release` is not called. `data` must stay valid until then
/// and be aligned to the element size.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn blob_wrap(
    e: *const BlobEngine,
    dtype: i32,
    dims: *const i64,
    rank: usize,
    data: *mut c_void,
    byte_len: usize,
    release: Option<unsafe extern "C" fn(ctx: *mut c_void)>,
    ctx: *mut c_void,
    out_blob: *mut *mut Blob,
) -> i32 {
    wrap(e, dtype, dims, rank, data, byte_len, release, ctx, out_blob, false)
}

/// As `blob_wrap` for memory the blob may only read (`data` need only be
/// readable): every write to the blob or its views — fills, arithmetic,
/// copies into it, writable buffers, growing reshapes — is
/// `BLOB_ERR_READ_ONLY` and changes nothing. `blob_is_writable` says false.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn blob_wrap_read_only(
    e: *const BlobEngine,
    dtype: i32,
    dims: *const i64,
    rank: usize,
    data: *const c_void,
    byte_len: usize,
    release: Option<unsafe extern "C" fn(ctx: *mut c_void)>,
    ctx: *mut c_void,
    out_blob: *mut *mut Blob,
) -> i32 {
    wrap(e, dtype, dims, rank, data.cast_mut(), byte_len, release, ctx, out_blob, true)
}

#[allow(clippy::too_many_arguments)]
fn wrap(
    e: *const BlobEngine,
    dtype: i32,
    dims: *const i64,
    rank: usize,
    data: *mut c_void,
    byte_len: usize,
    release: Option<unsafe extern "C" fn(ctx: *mut c_void)>,
    ctx: *mut c_void,
    out_blob: *mut *mut Blob,
    read_only: bool,
) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let engine = handles::engine(e)?;
        let dtype = DType::from_code(dtype)?;
        let shape = Shape::new(&parse_dims(dims, rank)?)?;
        let ptr = NonNull::new(data as *mut u8).ok_or_else(|| Error::NullPointer("data is NULL".into()))?;
        if isize::try_from(byte_len).is_err() {
            return Err(Error::InvalidArgument(format!("byte_len {byte_len} exceeds isize::MAX")));
        }
        let cb: Option<blobcore::ReleaseFn> = release.map(|f| {
            let r = Release { f, ctx };
            Box::new(move || {
                let r = r;
                // SAFETY: the caller's callback with the caller's context, called once.
                unsafe { (r.f)(r.ctx) }
            }) as blobcore::ReleaseFn
        });
        // SAFETY: the caller promises `data` is valid (readable, and
        // writable unless read_only) for byte_len bytes until release.
        let b = unsafe { blobcore::Blob::wrap_lent(&engine, dtype, shape, ptr, byte_len, cb, read_only)? };
        put(o, handles::issue_blob(b));
        Ok(())
    })
}

/// NumPy `astype`: `*out` receives a new dense blob with `b`'s dims on
/// `b`'s engine, every element converted to `dtype` (integers wrap, floats
/// round to nearest even, float to integer truncates toward zero and
/// saturates, NaN becomes 0). Any layout is accepted.
#[no_mangle]
pub extern "C" fn blob_cast(b: *const Blob, dtype: i32, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let dtype = DType::from_code(dtype)?;
        let c = handles::blob(b, "blob")?.cast(dtype)?;
        put(o, handles::issue_blob(c));
        Ok(())
    })
}

/// Frees a blob handle. Views made from it keep working; wrapped memory is
/// released when its last user goes. A NULL handle is `BLOB_ERR_NULL_POINTER`,
/// a freed one `BLOB_ERR_INVALID_HANDLE`.
#[no_mangle]
pub extern "C" fn blob_free(b: *mut Blob) -> i32 {
    ffi!({ handles::free_blob(b) })
}
