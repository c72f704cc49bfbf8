//! Shared memory across processes: module functions and descriptor
//! checks (the semantics are in `blobcore::share`).

use crate::dtypes;
use crate::engine::{engine_of, PyEngine};
use crate::errors::{core, raise};
use crate::gil::run;
use crate::handle::PyBlob;
use blobcore::{Blob, Shape};
use pyo3::prelude::*;
use std::os::fd::{BorrowedFd, OwnedFd};

/// A descriptor number from Python, checked to be open, as an owned duplicate.
pub(crate) fn dup_fd(fd: i32) -> PyResult<OwnedFd> {
    if fd < 0 {
        return Err(raise("InvalidArgumentError", format!("descriptor {fd} is not an open file")));
    }
    // SAFETY: only duplicated (fcntl F_DUPFD_CLOEXEC) during this call; a
    // number that is not open is an error from that call.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    b.try_clone_to_owned().map_err(|e| raise("InvalidArgumentError", format!("descriptor {fd} is not an open file: {e}")))
}

/// A dense blob of ``shape`` and ``dtype`` over the shared memory file
/// ``fd`` (duplicated: close yours when done), ``offset`` bytes in — what
/// :meth:`Blob.shared_fd` gave another process. Writes on either side are
/// seen on the other. The descriptor must be a memory file (``memfd``)
/// sealed against shrinking, as blobcore's are, the offset a multiple of
/// the element size and the file large enough (``InvalidArgumentError``
/// otherwise, before anything is mapped).
#[pyfunction]
#[pyo3(signature = (fd, shape, dtype=None, offset=0, engine=None))]
pub fn from_shared_fd(py: Python<'_>, fd: i32, shape: Vec<i64>, dtype: Option<&Bound<'_, PyAny>>, offset: u64, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    let engine = engine_of(engine)?;
    let dtype = dtypes::from_py(dtype)?;
    let shape = core(Shape::from_i64(&shape))?;
    let owned = dup_fd(fd)?;
    let b = run(py, false, || Blob::from_shared_fd(&engine, dtype, shape, std::os::fd::AsFd::as_fd(&owned), offset))?;
    Ok(PyBlob::new(b))
}
