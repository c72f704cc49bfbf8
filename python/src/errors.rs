//! The core's errors as Python exceptions. The classes live in
//! `blobcore/_errors.py` (they inherit from builtin exceptions too, e.g.
//! `BusyError(BlobError, BufferError)`); this module only picks the class
//! for an error code and raises it with the core's message.

use pyo3::prelude::*;
use blobcore::first_use::FirstUse;
use pyo3::types::PyType;

/// A core error on its way to Python.
pub struct BcError(pub blobcore::Error);

impl From<blobcore::Error> for BcError {
    fn from(e: blobcore::Error) -> Self {
        BcError(e)
    }
}

/// The exception class name for each core error code.
fn class_name(code: i32) -> &'static str {
    match code {
        1 | 3 => "InvalidArgumentError",
        4 => "ShapeError",
        5 => "DTypeError",
        6 => "OutOfRangeError",
        7 => "LifoError",
        8 => "BusyError",
        9 => "OutOfMemoryError",
        10 => "DeviceError",
        11 => "IoError",
        12 => "FormatError",
        13 => "UnsupportedError",
        15 => "ReadOnlyError",
        _ => "BlobError",
    }
}

static ERRORS: FirstUse<Py<PyModule>> = FirstUse::new();

/// The exception class `name` from `blobcore._errors`.
pub fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let m = ERRORS.get_or_try_make(|| py.import("blobcore._errors").map(Bound::unbind))?;
    Ok(m.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// A Python exception of class `name` with `msg`.
pub fn raise(name: &str, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    Python::attach(|py| match class(py, name) {
        Ok(cls) => PyErr::from_type(cls, (msg,)),
        Err(e) => e,
    })
}

impl From<BcError> for PyErr {
    fn from(e: BcError) -> PyErr {
        raise(class_name(e.0.code()), e.0.to_string())
    }
}

/// Converts a core result (`?` on it inside a `PyResult` function).
pub fn core<T>(r: blobcore::Result<T>) -> PyResult<T> {
    r.map_err(|e| BcError(e).into())
}
