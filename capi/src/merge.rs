//! Merge and split along an axis or by objects.

use crate::handles::{self, Blob};
use crate::status::ffi;

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
