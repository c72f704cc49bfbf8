//! Running core work with the GIL released.

use crate::errors::core;
use pyo3::prelude::*;

/// Runs `f` with the GIL released unless the blob is small (then the
/// release would cost more than the work).
pub(crate) fn run<T: Send>(py: Python<'_>, small: bool, f: impl FnOnce() -> blobcore::Result<T> + Send) -> PyResult<T> {
    if small {
        core(f())
    } else {
        core(py.detach(f))
    }
}

