//! DLPack 1.3's C exchange API for `bc.Blob`: the static
//! `DLPackExchangeAPI` table (layout and allocator in
//! `blobcore::dlpack_exchange`) behind the type's
//! `__dlpack_c_exchange_api__` capsule. The entries that take or return
//! Python objects live here; each catches panics and reports failures as
//! DLPack asks (a Python exception and -1, or `SetError` for the allocator).

use crate::engine::engine_of;
use crate::handle::PyBlob;
use blobcore::dlpack::{delete_tensor, DLManagedTensorVersioned, DLTensor};
use blobcore::dlpack_exchange::{
    DLPackExchangeAPI, DLPackExchangeAPIHeader, SetErrorFn, EXCHANGE_API_CAPSULE_NAME, EXCHANGE_API_VERSION,
};
use blobcore::Blob;
use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_int, c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

static API: DLPackExchangeAPI = DLPackExchangeAPI {
    header: DLPackExchangeAPIHeader { version: EXCHANGE_API_VERSION, prev_api: std::ptr::null_mut() },
    managed_tensor_allocator: Some(allocate),
    managed_tensor_from_py_object_no_sync: Some(from_py_object),
    managed_tensor_to_py_object_no_sync: Some(to_py_object),
    // Optional in DLPack: a blob's dims live behind its lock and may
    // change, so there is no producer-owned shape to lend without a copy.
    dltensor_from_py_object_no_sync: None,
    current_work_stream: Some(current_work_stream),
};

/// The capsule `bc.Blob.__dlpack_c_exchange_api__` holds.
pub fn capsule(py: Python<'_>) -> PyResult<Py<PyAny>> {
    // SAFETY: API is a static that lives as long as the process; the
    // capsule has no destructor and the name is a static C string.
    let cap = unsafe { ffi::PyCapsule_New(&API as *const DLPackExchangeAPI as *mut c_void, EXCHANGE_API_CAPSULE_NAME.as_ptr(), None) };
    // SAFETY: a new reference or NULL with an exception set.
    unsafe { Bound::from_owned_ptr_or_err(py, cap) }.map(Bound::unbind)
}

/// Runs `f` with the GIL (DLPack calls these entries from Python code),
/// turning an error or a panic into a set Python exception and -1.
fn guarded(f: impl FnOnce(Python<'_>) -> PyResult<()>) -> c_int {
    // SAFETY: DLPack's from/to-PyObject entries are called with the GIL
    // held (they take and return Python objects).
    let py = unsafe { Python::assume_attached() };
    match catch_unwind(AssertUnwindSafe(|| f(py))) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            e.restore(py);
            -1
        }
        Err(_) => {
            PyRuntimeError::new_err("blobcore: internal error (panic) in the DLPack exchange API").restore(py);
            -1
        }
    }
}

unsafe extern "C" fn from_py_object(py_object: *mut c_void, out: *mut *mut DLManagedTensorVersioned) -> c_int {
    guarded(|py| {
        if py_object.is_null() || out.is_null() {
            return Err(PyTypeError::new_err("DLPack exchange: NULL object or output"));
        }
        // SAFETY: a live Python object the caller holds a reference to.
        let obj = unsafe { Borrowed::from_ptr(py, py_object as *mut ffi::PyObject) };
        let blob = obj.cast::<PyBlob>().map_err(|_| PyTypeError::new_err("DLPack exchange: the object is not a blobcore.Blob"))?;
        let t = blob.get().b.to_dlpack_native(None).map_err(|e| PyBufferError::new_err(e.to_string()))?;
        // SAFETY: `out` is a valid pointer (checked non-NULL) the caller owns.
        unsafe { *out = t.as_ptr() };
        Ok(())
    })
}

unsafe extern "C" fn to_py_object(tensor: *mut DLManagedTensorVersioned, out_py_object: *mut *mut c_void) -> c_int {
    guarded(|py| {
        let imported = if out_py_object.is_null() {
            Err(PyTypeError::new_err("DLPack exchange: NULL output"))
        } else {
            // SAFETY: DLPack hands over a live managed tensor (or NULL,
            // which the core refuses) whose memory stays valid until its
            // deleter runs.
            engine_of(None).and_then(|engine| crate::errors::core(unsafe { Blob::from_dlpack(&engine, tensor, None) }))
        };
        let b = match imported {
            Ok(b) => b,
            Err(e) => {
                // The tensor was handed over: free what the core did not take.
                // SAFETY: not taken, so its deleter has not run.
                unsafe { delete_tensor(tensor) };
                return Err(e);
            }
        };
        let obj = Bound::new(py, PyBlob::new(b))?;
        // SAFETY: `out_py_object` is non-NULL (checked above); the caller
        // receives the new reference.
        unsafe { *out_py_object = obj.into_ptr() as *mut c_void };
        Ok(())
    })
}

unsafe extern "C" fn allocate(
    prototype: *mut DLTensor,
    out: *mut *mut DLManagedTensorVersioned,
    error_ctx: *mut c_void,
    set_error: Option<SetErrorFn>,
) -> c_int {
    let report = |kind: &str, msg: String| {
        if let Some(f) = set_error {
            let (kind, msg) = (CString::new(kind).unwrap_or_default(), CString::new(msg.replace('\0', " ")).unwrap_or_default());
            // SAFETY: the consumer's callback with its own context and two
            // NUL-terminated strings that outlive the call.
            unsafe { f(error_ctx, kind.as_ptr(), msg.as_ptr()) };
        }
        -1
    };
    if out.is_null() {
        return report("ValueError", "DLPack allocator: NULL output".into());
    }
    // SAFETY: DLPack's contract: `prototype` is NULL or a DLTensor whose
    // shape holds ndim entries (the core checks NULL and the fields).
    match catch_unwind(|| unsafe { Blob::dlpack_allocate(prototype) }) {
        Ok(Ok(t)) => {
            // SAFETY: `out` was checked non-NULL.
            unsafe { *out = t.as_ptr() };
            0
        }
        Ok(Err(e)) => {
            let kind = if e.code() == blobcore::Error::OutOfMemory(String::new()).code() { "MemoryError" } else { "ValueError" };
            report(kind, e.to_string())
        }
        Err(_) => report("RuntimeError", "blobcore: internal error (panic) in the DLPack allocator".into()),
    }
}

unsafe extern "C" fn current_work_stream(_device_type: i32, _device_id: i32, out_current_stream: *mut *mut c_void) -> c_int {
    // Every export is ready when handed over: host exports need no stream,
    // and CUDA exports wait for the engine's stream first (to_dlpack_native).
    if !out_current_stream.is_null() {
        // SAFETY: a valid pointer the caller owns.
        unsafe { *out_current_stream = std::ptr::null_mut() };
    }
    0
}
