//! Blobs in shared memory across processes: move a blob into a memory
//! file, hand its descriptor to another process (over a Unix socket with
//! `SCM_RIGHTS`, or by inheritance) and map the same memory there.

use crate::handles::{self, Blob, BlobEngine};
use crate::status::{dims as parse_dims, ffi, out, put};
use blobcore::{DType, Error, Shape};

/// Moves the blob's memory into shared memory in place (a sealed, unnamed
/// memory file; `torch.Tensor.share_memory_()`); a no-op when it already
/// is. `BLOB_ERR_BUSY` while views, held buffers or exports use the
/// current memory, for blobs on memory-mapped files, and for writable
/// memory the blob does not own (`blob_wrap`, DLPack imports: the owner
/// would stop seeing the blob's writes). A read-only blob moves into a
/// file sealed against writes (memory lent read-only is copied there).
#[no_mangle]
pub extern "C" fn blob_share_memory(b: *mut Blob) -> i32 {
    ffi!({ handles::blob(b, "blob")?.share_memory() })
}

/// Whether the blob's memory is a shared memory file (after
/// `blob_share_memory`, for its views, and for blobs from `blob_from_shared_fd`).
#[no_mangle]
pub extern "C" fn blob_is_shared(b: *const Blob, out_shared: *mut bool) -> i32 {
    ffi!({
        let o = out(out_shared, "out")?;
        put(o, handles::blob(b, "blob")?.is_shared());
        Ok(())
    })
}

/// A new descriptor of a dense blob's shared memory file (close-on-exec;
/// close it when done) and the byte offset of its element 0 in the file:
/// what `blob_from_shared_fd` takes in another process.
/// `BLOB_ERR_INVALID_ARGUMENT` when the blob is not in shared memory;
/// `BLOB_ERR_UNSUPPORTED` for strided, padded or blocked blobs.
#[no_mangle]
pub extern "C" fn blob_shared_fd(b: *const Blob, out_fd: *mut std::ffi::c_int, out_offset: *mut u64) -> i32 {
    ffi!({
        let fo = out(out_fd, "fd")?;
        let oo = out(out_offset, "offset")?;
        let (fd, offset) = handles::blob(b, "blob")?.shared_fd()?;
        put(fo, std::os::fd::IntoRawFd::into_raw_fd(fd));
        put(oo, offset);
        Ok(())
    })
}

/// A dense blob of `dtype` and `dims` over the shared memory file `fd`
/// (duplicated: the caller keeps and closes its own), `offset` bytes in.
/// Writes on either side are seen on the other. The descriptor must be an
/// open memory file (`memfd_create`, tmpfs) sealed against shrinking
/// (`F_SEAL_SHRINK`, as `blob_shared_fd`'s are), the offset a multiple of
/// the element size, and the file large enough:
/// `BLOB_ERR_INVALID_ARGUMENT` otherwise, before anything is mapped. A
/// write-sealed file or a read-only descriptor gives a read-only blob.
#[no_mangle]
pub extern "C" fn blob_from_shared_fd(e: *const BlobEngine, dtype: i32, dims: *const i64, rank: usize, fd: std::ffi::c_int, offset: u64, out_blob: *mut *mut Blob) -> i32 {
    ffi!({
        let o = out(out_blob, "out")?;
        let engine = handles::engine(e)?;
        let dtype = DType::from_code(dtype)?;
        let shape = Shape::new(&parse_dims(dims, rank)?)?;
        if fd < 0 {
            return Err(Error::InvalidArgument(format!("descriptor {fd} is not an open file")));
        }
        // SAFETY: the descriptor is only inspected (fstat, fcntl) and
        // duplicated during this call; a number that is not open is an
        // error from those calls.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        put(o, handles::issue_blob(blobcore::Blob::from_shared_fd(&engine, dtype, shape, borrowed, offset)?));
        Ok(())
    })
}
