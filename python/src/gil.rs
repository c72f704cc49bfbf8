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


/// Runs a load with the GIL released, telling the Python callable
/// `progress` (if any) `(done, total)` bytes as the core reports them: the
/// GIL is taken back for each call, on the calling thread, while the core
/// holds no lock. An exception from the callable cancels the load and is
/// raised in place of the core's cancellation error; its return value is
/// ignored.
pub(crate) fn run_loading<T: Send>(
    py: Python<'_>,
    progress: Option<Py<PyAny>>,
    f: impl for<'a> FnOnce(Option<blobcore::io::eager::Progress<'a>>) -> blobcore::Result<T> + Send,
) -> PyResult<T> {
    let Some(cb) = progress.filter(|p| !p.is_none(py)) else {
        return core(py.detach(|| f(None)));
    };
    if !cb.bind(py).is_callable() {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!("progress must be callable (done, total), got {}", cb.bind(py).get_type())));
    }
    let mut raised: Option<PyErr> = None;
    let r = py.detach(|| {
        let mut tell = |done: u64, total: u64| {
            Python::attach(|py| match cb.call1(py, (done, total)) {
                Ok(_) => true,
                Err(e) => {
                    raised = Some(e);
                    false
                }
            })
        };
        f(Some(&mut tell))
    });
    match raised {
        Some(e) => Err(e),
        None => core(r),
    }
}
