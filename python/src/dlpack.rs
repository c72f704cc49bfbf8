//! DLPack capsules: `__dlpack__` wraps the core's exports
//! (`blobcore::dlpack`) in PyCapsules, and `bc.from_dlpack` hands a
//! capsule's tensor to the core's import. Only the capsule protocol (names,
//! renaming on use, the destructor) lives here.

use crate::errors::{core, raise};
use blobcore::dlpack::{delete_legacy_tensor, delete_tensor, DLManagedTensor, DLManagedTensorVersioned, DL_CPU};
use blobcore::{Blob, Engine, Error};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

// Statics, not consts: the capsule destructor compares the name pointer
// a capsule was made with first (`same_name`).
static NAME_LEGACY: &CStr = c"dltensor";
static NAME_VERSIONED: &CStr = c"dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";

/// What NumPy names the capsule in which its `from_dlpack` keeps the
/// tensor it imported, as the array's base (NumPy 2).
const NUMPY_HELD_VERSIONED: &CStr = c"numpy_dltensor_versioned";

/// The blobcore export inside `obj` when `obj` is NumPy's holder of a
/// DLPack tensor that blobcore made (`np.from_dlpack(x)`'s base), read in
/// place; `None` for any other object.
pub fn numpy_held_export<'a>(obj: &'a Bound<'_, PyAny>) -> Option<&'a blobcore::Export> {
    // SAFETY: PyCapsule_IsValid accepts any object and checks the name.
    if unsafe { ffi::PyCapsule_IsValid(obj.as_ptr(), NUMPY_HELD_VERSIONED.as_ptr()) } != 1 {
        return None;
    }
    // SAFETY: a valid capsule of that name (checked above) holds NumPy's
    // imported DLManagedTensorVersioned, alive (its deleter runs in the
    // capsule's destructor) while `obj`, borrowed for 'a, keeps the
    // capsule alive; `export_inside` reads it only if blobcore made it.
    unsafe {
        let m = std::ptr::NonNull::new(ffi::PyCapsule_GetPointer(obj.as_ptr(), NUMPY_HELD_VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned)?;
        blobcore::dlpack::export_inside(m)
    }
}

/// The DLPack (device type, id) of the CPU.
pub const CPU_DEVICE: (i32, i32) = (DL_CPU, 0);

/// Capsule destructor: deletes the tensor only if no consumer took it
/// (a consumer renames the capsule to "used_...").
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython calls this with the GIL held on a live capsule; we
    // keep any pending exception intact, as the DLPack reference does.
    unsafe {
        let (mut t, mut v, mut tb) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        ffi::PyErr_Fetch(&mut t, &mut v, &mut tb);
        // A consumer renames the capsule it takes ("used_..."); one still
        // named as made (the name's own pointer, else its text) owns its
        // tensor. The name is looked at once, and a taken capsule's
        // differs from ours in its first byte (no `strcmp` per name).
        let name = ffi::PyCapsule_GetName(capsule);
        if same_name(name, NAME_VERSIONED) {
            delete_tensor(ffi::PyCapsule_GetPointer(capsule, name) as *mut DLManagedTensorVersioned);
        } else if same_name(name, NAME_LEGACY) {
            delete_legacy_tensor(ffi::PyCapsule_GetPointer(capsule, name) as *mut DLManagedTensor);
        }
        ffi::PyErr_Restore(t, v, tb);
    }
}

/// Whether the capsule name `name` (NULL or a C string) is `ours`: the
/// same pointer, or the same text.
///
/// # Safety
/// `name` is NULL or points to a NUL-terminated string.
unsafe fn same_name(name: *const std::ffi::c_char, ours: &CStr) -> bool {
    if name == ours.as_ptr() {
        return true;
    }
    if name.is_null() {
        return false;
    }
    // SAFETY: both are NUL-terminated; the walk stops at the first
    // difference or at the end of `ours` (whose NUL `name` must match).
    ours.to_bytes_with_nul().iter().enumerate().all(|(k, &c)| unsafe { *name.add(k) } as u8 == c)
}

/// A DLPack capsule of `b` for `__dlpack__(copy=copy)`: versioned (the
/// core's `to_dlpack_copy`, which decides sharing and copying) or legacy
/// (for consumers without `max_version`: `to_dlpack_legacy_copy`, the
/// same rule; a read-only blob, which the legacy struct cannot mark, is
/// refused). Failures are BufferErrors (the array API's word).
/// `cuda`: `Some(stream)` exports the device memory of a CUDA blob
/// (`to_dlpack_cuda`, with the array API's stream rule).
pub fn produce(py: Python<'_>, b: &Blob, versioned: bool, copy: Option<bool>, cuda: Option<Option<i64>>) -> PyResult<Py<PyAny>> {
    let buffer_err = |e: Error| pyo3::exceptions::PyBufferError::new_err(e.to_string());
    let (ptr, name) = if versioned {
        let t = match cuda {
            Some(stream) => b.to_dlpack_cuda(stream, copy),
            None => b.to_dlpack_copy(copy),
        };
        (t.map_err(buffer_err)?.as_ptr() as *mut c_void, NAME_VERSIONED)
    } else {
        let t = match cuda {
            Some(stream) => b.to_dlpack_cuda_legacy(stream, copy).map(|t| t.as_ptr()),
            None => b.to_dlpack_legacy_copy(copy).map(|t| t.as_ptr()),
        };
        let t = t.map_err(|e| match e {
            Error::ReadOnly(_) => pyo3::exceptions::PyBufferError::new_err(
                "a read-only blob needs a DLPack 1.x consumer (max_version >= (1, 0)) to mark it read-only; or pass copy=True",
            ),
            e => buffer_err(e),
        })?;
        (t as *mut c_void, NAME_LEGACY)
    };
    // SAFETY: ptr is a live managed tensor; the name is a static C string;
    // the destructor frees the tensor unless a consumer renamed the capsule.
    let cap = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
    if cap.is_null() {
        // SAFETY: nobody else saw ptr; free it with its own deleter.
        unsafe {
            if versioned {
                delete_tensor(ptr as *mut DLManagedTensorVersioned)
            } else {
                delete_legacy_tensor(ptr as *mut DLManagedTensor)
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: cap is a new, owned reference.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}

/// Consumes a DLPack capsule into a blob on `engine` through the core's
/// import (sharing the memory, or copying: see `Blob::from_dlpack`). The
/// capsule is marked used only when the core took the tensor; a tensor
/// that cannot be shared without a copy under `copy=False` is the array
/// API's BufferError.
pub fn consume(capsule: &Bound<'_, PyAny>, copy: Option<bool>, engine: &Engine) -> PyResult<Blob> {
    let cap = capsule.as_ptr();
    // SAFETY: PyCapsule_IsValid accepts any object and checks the name.
    let versioned = unsafe { ffi::PyCapsule_IsValid(cap, NAME_VERSIONED.as_ptr()) } == 1;
    // SAFETY: as above.
    let legacy = unsafe { ffi::PyCapsule_IsValid(cap, NAME_LEGACY.as_ptr()) } == 1;
    if !versioned && !legacy {
        // SAFETY: PyCapsule_CheckExact accepts any object.
        if unsafe { ffi::PyCapsule_CheckExact(cap) } != 0 {
            return Err(raise(
                "InvalidArgumentError",
                "not an unused DLPack capsule (expected a capsule named \"dltensor\" or \"dltensor_versioned\"; this one was consumed already or is another kind)",
            ));
        }
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "from_dlpack: an object of type {} has no __dlpack__ method (and is not a DLPack capsule)",
            capsule.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        )));
    }
    let (name, used) = if versioned { (NAME_VERSIONED, USED_VERSIONED) } else { (NAME_LEGACY, USED_LEGACY) };
    // SAFETY: the name was just validated.
    let ptr = unsafe { ffi::PyCapsule_GetPointer(cap, name.as_ptr()) };
    if ptr.is_null() {
        return Err(PyErr::fetch(capsule.py()));
    }
    // Mark the capsule used before the core may take the tensor, so that
    // its destructor can never free a tensor a blob owns; on failure the
    // name goes back and the capsule still owns it.
    // SAFETY: renaming a valid capsule; the names are static.
    if unsafe { ffi::PyCapsule_SetName(cap, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    // SAFETY: a valid capsule of this name holds a live managed tensor of
    // the matching kind whose memory stays valid until its deleter runs
    // (the DLPack contract).
    let r = unsafe {
        if versioned {
            Blob::from_dlpack(engine, ptr as *mut DLManagedTensorVersioned, copy)
        } else {
            Blob::from_dlpack_legacy(engine, ptr as *mut DLManagedTensor, copy)
        }
    };
    match r {
        Ok(b) => Ok(b),
        Err(e) => {
            // SAFETY: as above; the core did not take the tensor.
            unsafe { ffi::PyCapsule_SetName(cap, name.as_ptr()) };
            if copy == Some(false) && e.code() == Error::Unsupported(String::new()).code() && e.to_string().contains("without a copy") {
                return Err(pyo3::exceptions::PyBufferError::new_err(format!("from_dlpack(copy=False): {e}")));
            }
            core(Err(e))
        }
    }
}
