//! `Blob.__dlpack__` as a vectorcall method (`METH_FASTCALL |
//! METH_KEYWORDS`) with its own keyword parsing: consumers call it with
//! keywords on every exchange (NumPy's `from_dlpack` passes `dl_device`,
//! `copy` and `max_version`), and pyo3's general parser (each keyword's
//! name turned into UTF-8 and compared, each value extracted through a
//! tuple conversion) cost about a tenth of `np.from_dlpack(b)`. The
//! export itself is `dlpack::produce`; only argument parsing lives here.

use crate::dlpack;
use crate::handle::PyBlob;
use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;
use std::ffi::CStr;

/// The method's docstring (what `help(bc.Blob.__dlpack__)` shows).
const DOC: &CStr = c"__dlpack__($self, /, *, stream=None, max_version=None, dl_device=None, copy=None)
--

DLPack export: a capsule sharing the blob's memory (``copy=True``
exports a copy). Versioned (DLPack 1.1) when ``max_version >= (1, 0)``.
A blob on a CUDA engine exports its device memory (``kDLCUDA``)
unless ``dl_device=(1, 0)`` asks for the host copy; ``stream``
follows the array API (None, 1, 2 or a stream handle: the engine's
queued kernels finish first; -1: no wait).";

/// The keyword-only parameters, in the order of the parsed values' slots.
const NAMES: [&str; 4] = ["stream", "max_version", "dl_device", "copy"];

/// Installs `__dlpack__` on the Blob type (called once, at module init).
pub fn install(py: Python<'_>) -> PyResult<()> {
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"__dlpack__".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunctionFastWithKeywords: call },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: DOC.as_ptr(),
    }));
    let tp = py.get_type::<PyBlob>();
    // SAFETY: `def` lives for the rest of the process (leaked, once per
    // module init); the type object is alive (we hold a reference).
    let descr = unsafe { ffi::PyDescr_NewMethod(tp.as_type_ptr(), def) };
    if descr.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `descr` is a new, owned reference.
    let descr = unsafe { Bound::from_owned_ptr(py, descr) };
    tp.setattr("__dlpack__", descr)
}

/// The vectorcall entry: `args` holds `nargs` positional values, then
/// one value per name in `kwnames`.
unsafe extern "C" fn call(slf: *mut ffi::PyObject, args: *const *mut ffi::PyObject, nargs: ffi::Py_ssize_t, kwnames: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: CPython calls methods with the GIL held.
    let py = unsafe { Python::assume_attached() };
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: the method descriptor checked that `slf` is a Blob
        // (CPython refuses other objects before calling: a bad-input row);
        // `args` and `kwnames` are as the vectorcall protocol says.
        unsafe { parse_and_export(py, slf, args, nargs, kwnames) }
    }));
    let r = match out {
        Ok(r) => r,
        Err(_) => Err(pyo3::panic::PanicException::new_err("blobcore: __dlpack__ panicked")),
    };
    match r {
        Ok(v) => v.into_ptr(),
        Err(e) => {
            e.restore(py);
            std::ptr::null_mut()
        }
    }
}

/// [`NAMES`] as interned strings, made on the first call.
static INTERNED: PyOnceLock<[Py<PyString>; 4]> = PyOnceLock::new();

/// The slot of a keyword's name in [`NAMES`]: by identity first (names
/// written in Python source are interned, as `interned` are), else by
/// text.
fn slot(name: &Bound<'_, PyAny>, interned: &[Py<PyString>; 4]) -> PyResult<usize> {
    if let Some(i) = interned.iter().position(|n| n.as_ptr() == name.as_ptr()) {
        return Ok(i);
    }
    let text = name.cast::<PyString>().ok().and_then(|s| s.to_str().ok());
    match text.and_then(|t| NAMES.iter().position(|n| *n == t)) {
        Some(i) => Ok(i),
        None => Err(PyTypeError::new_err(format!("__dlpack__() got an unexpected keyword argument {}", name.repr()?))),
    }
}

/// # Safety
/// As [`call`]: `slf` a Blob, `args` `nargs + len(kwnames)` live values.
unsafe fn parse_and_export(py: Python<'_>, slf: *mut ffi::PyObject, args: *const *mut ffi::PyObject, nargs: ffi::Py_ssize_t, kwnames: *mut ffi::PyObject) -> PyResult<Py<PyAny>> {
    if nargs != 0 {
        return Err(PyTypeError::new_err(format!("__dlpack__() takes 0 positional arguments but {nargs} were given")));
    }
    let mut given: [Option<Borrowed<'_, '_, PyAny>>; 4] = [None; 4];
    if !kwnames.is_null() {
        // SAFETY: `kwnames` is a tuple of strings (the protocol).
        let names = unsafe { Borrowed::from_ptr(py, kwnames) };
        let names = names.cast::<pyo3::types::PyTuple>()?;
        let interned = INTERNED.get_or_init(py, || NAMES.map(|n| PyString::intern(py, n).unbind()));
        for (k, name) in names.iter().enumerate() {
            let i = slot(&name, interned)?;
            if given[i].is_some() {
                return Err(PyTypeError::new_err(format!("__dlpack__() got multiple values for argument '{}'", NAMES[i])));
            }
            // SAFETY: value k of the keywords follows the (zero) positional ones.
            given[i] = Some(unsafe { Borrowed::from_ptr(py, *args.add(k)) });
        }
    }
    // A keyword given as None is the same as one left out.
    let arg = |i: usize| given[i].filter(|v| !v.is_none());
    let bad = |i: usize, e: PyErr| PyTypeError::new_err(format!("argument '{}': {}", NAMES[i], e.value(py)));
    let stream: Option<i64> = match arg(0) {
        Some(s) => Some(s.extract().map_err(|_| PyTypeError::new_err("stream must be None or an int"))?),
        None => None,
    };
    let max_version: Option<(u32, u32)> = arg(1).map(|v| pair(v).map_or_else(|| v.extract(), Ok)).transpose().map_err(|e| bad(1, e))?;
    let dl_device: Option<(i32, i32)> = arg(2).map(|v| pair(v).map_or_else(|| v.extract(), Ok)).transpose().map_err(|e| bad(2, e))?;
    let copy: Option<bool> = arg(3).map(|v| v.extract()).transpose().map_err(|e| bad(3, e))?;
    // SAFETY: the method descriptor checked `slf`'s type.
    let blob = unsafe { Borrowed::from_ptr(py, slf).cast_unchecked::<PyBlob>() };
    export(py, &blob.get().b, stream, max_version, dl_device, copy)
}

/// `(a, b)` from an exact tuple of two exact ints that fit `T`, read
/// through the tuple and int API directly (consumers pass
/// `max_version` and `dl_device` on every exchange, and pyo3's general
/// tuple conversion cost about a tenth of the call); None for anything
/// else, which the general conversion then takes, errors included.
fn pair<T: TryFrom<i64>>(v: Borrowed<'_, '_, PyAny>) -> Option<(T, T)> {
    let p = v.as_ptr();
    // SAFETY: `p` is a live object (borrowed, GIL held); its items are
    // read only once it is known to be a tuple of two, and they are
    // borrowed from it; an int that overflows a C long reports it
    // through `overflow` without setting an error.
    unsafe {
        if ffi::Py_TYPE(p) != std::ptr::addr_of_mut!(ffi::PyTuple_Type) || ffi::PyTuple_Size(p) != 2 {
            return None;
        }
        let int = |o: *mut ffi::PyObject| -> Option<T> {
            if ffi::Py_TYPE(o) != std::ptr::addr_of_mut!(ffi::PyLong_Type) {
                return None;
            }
            let mut overflow = 0;
            let x = ffi::PyLong_AsLongAndOverflow(o, &mut overflow);
            if overflow != 0 || (x == -1 && !ffi::PyErr_Occurred().is_null()) {
                ffi::PyErr_Clear();
                return None;
            }
            T::try_from(x as i64).ok()
        };
        Some((int(ffi::PyTuple_GetItem(p, 0))?, int(ffi::PyTuple_GetItem(p, 1))?))
    }
}

/// `__dlpack__` once its arguments are parsed.
fn export(py: Python<'_>, b: &blobcore::Blob, stream: Option<i64>, max_version: Option<(u32, u32)>, dl_device: Option<(i32, i32)>, copy: Option<bool>) -> PyResult<Py<PyAny>> {
    let here = b.dlpack_device();
    let target = dl_device.unwrap_or(here);
    let versioned = max_version.is_some_and(|(major, _)| major >= 1);
    if target == dlpack::CPU_DEVICE {
        if stream.is_some() && here == dlpack::CPU_DEVICE {
            return Err(PyBufferError::new_err("stream must be None for a CPU blob"));
        }
        return dlpack::produce(py, b, versioned, copy, None);
    }
    if target != here {
        return Err(PyBufferError::new_err(format!("cannot export a blob on DLPack device {here:?} to device {target:?}")));
    }
    dlpack::produce(py, b, versioned, copy, Some(stream))
}
