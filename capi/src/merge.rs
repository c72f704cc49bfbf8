//! Merge and split along an axis, a named dim or by objects.

use crate::handles::{self, Blob};
use crate::status::ffi;
use blobcore::BlobDim;

/// NeoML `MergeByDim` (numpy.concatenate) of `n` blobs into `to` along `axis`.
#[no_mangle]
pub extern "C" fn blob_merge(from: *const *const Blob, n: usize, axis: i32, to: *mut Blob) -> i32 {
    ffi!({
        let parts = handles::blob_list(from, n, "from")?;
        let to = handles::blob(to, "to")?;
        let refs: Vec<&blobcore::Blob> = parts.iter().collect();
        blobcore::Blob::merge(&refs, axis as isize, &to)
    })
}

/// NeoML `SplitByDim`: the inverse of `blob_merge`; part sizes come from `to`.
#[no_mangle]
pub extern "C" fn blob_split(from: *const Blob, axis: i32, to: *const *mut Blob, n: usize) -> i32 {
    ffi!({
        let src = handles::blob(from, "from")?;
        let parts = handles::blob_list(to as *const *const Blob, n, "to")?;
        let refs: Vec<&blobcore::Blob> = parts.iter().collect();
        blobcore::Blob::split(&src, axis as isize, &refs)
    })
}

/// NeoML `MergeByObject`.
#[no_mangle]
pub extern "C" fn blob_merge_objects(from: *const *const Blob, n: usize, to: *mut Blob) -> i32 {
    ffi!({
        let parts = handles::blob_list(from, n, "from")?;
        let to = handles::blob(to, "to")?;
        let refs: Vec<&blobcore::Blob> = parts.iter().collect();
        blobcore::Blob::merge_objects(&refs, &to)
    })
}

/// NeoML `SplitByObject`.
#[no_mangle]
pub extern "C" fn blob_split_objects(from: *const Blob, to: *const *mut Blob, n: usize) -> i32 {
    ffi!({
        let src = handles::blob(from, "from")?;
        let parts = handles::blob_list(to as *const *const Blob, n, "to")?;
        let refs: Vec<&blobcore::Blob> = parts.iter().collect();
        blobcore::Blob::split_objects(&src, &refs)
    })
}

/// NeoML `MergeByDim` along a named dim (`BLOB_DIM_*`): every blob is seen
/// through its 7 named dims (its shape padded with trailing 1s), so
/// vectors merge along `BLOB_DIM_CHANNELS` into a `{n,1,1,1,1,1,k}` blob.
/// Unlike `blob_merge`, whose `axis` is a plain axis of equal-rank blobs.
#[no_mangle]
pub extern "C" fn blob_merge_dim(from: *const *const Blob, n: usize, blob_dim: i32, to: *mut Blob) -> i32 {
    ffi!({
        let d = BlobDim::from_index(blob_dim as i64)?;
        let parts = handles::blob_list(from, n, "from")?;
        let to = handles::blob(to, "to")?;
        let refs: Vec<&blobcore::Blob> = parts.iter().collect();
        blobcore::Blob::merge_dim(&refs, d, &to)
    })
}

/// NeoML `SplitByDim` along a named dim (`BLOB_DIM_*`): the inverse of
/// `blob_merge_dim`; part sizes come from the `to` blobs' named dims.
#[no_mangle]
pub extern "C" fn blob_split_dim(from: *const Blob, blob_dim: i32, to: *const *mut Blob, n: usize) -> i32 {
    ffi!({
        let d = BlobDim::from_index(blob_dim as i64)?;
        let src = handles::blob(from, "from")?;
        let parts = handles::blob_list(to as *const *const Blob, n, "to")?;
        let refs: Vec<&blobcore::Blob> = parts.iter().collect();
        blobcore::Blob::split_dim(&src, d, &refs)
    })
}
