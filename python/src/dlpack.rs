//! DLPack 1.x: producing capsules (`__dlpack__`) from core exports and
//! consuming them (`bc.from_dlpack`) into wrapped blobs.

use crate::errors::{core, raise};
use blobcore::{DType, Engine, Export, Shape};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};
use std::ptr::NonNull;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const DL_CPU: i32 = 1;
const DL_CUDA_HOST: i32 = 3;
const FLAG_READ_ONLY: u64 = 1;
const FLAG_IS_COPIED: u64 = 2;

const NAME_LEGACY: &CStr = c"dltensor";
const NAME_VERSIONED: &CStr = c"dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";

/// The DLPack (device type, id) of the CPU.
pub const CPU_DEVICE: (i32, i32) = (DL_CPU, 0);

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
        DType::F16 => (2, 16),
        DType::BF16 => (4, 16),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::I8 => (0, 8),
        DType::U8 => (1, 8),
    };
    DLDataType { code, bits, lanes: 1 }
}

fn from_dl_dtype(t: DLDataType) -> PyResult<DType> {
    let d = match (t.code, t.bits, t.lanes) {
        (2, 32, 1) => DType::F32,
        (2, 64, 1) => DType::F64,
        (2, 16, 1) => DType::F16,
        (4, 16, 1) => DType::BF16,
        (0, 32, 1) => DType::I32,
        (0, 64, 1) => DType::I64,
        (0, 8, 1) => DType::I8,
        (1, 8, 1) => DType::U8,
        _ => {
            return Err(raise(
                "DTypeError",
                format!("DLPack dtype (code {}, bits {}, lanes {}) has no blobcore dtype", t.code, t.bits, t.lanes),
            ))
        }
    };
    Ok(d)
}

/// What a produced capsule owns: the export (which pins the memory) and
/// the shape/stride arrays the DLTensor points into. No GIL is needed to
/// free it.
struct Context {
    _export: Export,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: produced by `produce` from Box::into_raw, deleted once by the consumer or our capsule destructor.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx as *mut Context));
    }
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: as delete_legacy.
    unsafe {
        let m = Box::from_raw(m);
        drop(Box::from_raw(m.manager_ctx as *mut Context));
    }
}

/// Capsule destructor: deletes the tensor only if no consumer took it
/// (a consumer renames the capsule to "used_...").
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: CPython calls this with the GIL held on a live capsule; we
    // keep any pending exception intact, as the DLPack reference does.
    unsafe {
        let (mut t, mut v, mut tb) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        ffi::PyErr_Fetch(&mut t, &mut v, &mut tb);
        if ffi::PyCapsule_IsValid(capsule, NAME_VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, NAME_VERSIONED.as_ptr()) as *mut DLManagedTensorVersioned;
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        } else if ffi::PyCapsule_IsValid(capsule, NAME_LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, NAME_LEGACY.as_ptr()) as *mut DLManagedTensor;
            if let Some(d) = m.as_ref().and_then(|m| m.deleter) {
                d(m);
            }
        }
        ffi::PyErr_Restore(t, v, tb);
    }
}

/// A DLPack capsule for `export`: versioned (DLPack 1.1) or legacy.
pub fn produce(py: Python<'_>, export: Export, versioned: bool, copied: bool) -> PyResult<Py<PyAny>> {
    let read_only = !export.is_writable();
    let shape: Vec<i64> = export.shape().iter().map(|&d| d as i64).collect();
    let es = export.dtype().size() as isize;
    let strides: Vec<i64> = export.byte_strides().iter().map(|&s| (s / es) as i64).collect();
    let data = export.as_ptr() as *mut c_void;
    let dtype = dl_dtype(export.dtype());
    let ctx = Box::into_raw(Box::new(Context { _export: export, shape, strides }));
    // SAFETY: ctx was just leaked and stays valid until a deleter frees it.
    let (shape_ptr, strides_ptr, ndim) =
        unsafe { ((*ctx).shape.as_mut_ptr(), (*ctx).strides.as_mut_ptr(), (*ctx).shape.len() as i32) };
    let tensor = DLTensor {
        data,
        device: DLDevice { device_type: DL_CPU, device_id: 0 },
        ndim,
        dtype,
        shape: shape_ptr,
        strides: strides_ptr,
        byte_offset: 0,
    };
    let (ptr, name) = if versioned {
        let m = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 1 },
            manager_ctx: ctx as *mut c_void,
            deleter: Some(delete_versioned),
            flags: (if copied { FLAG_IS_COPIED } else { 0 }) | (if read_only { FLAG_READ_ONLY } else { 0 }),
            dl_tensor: tensor,
        });
        (Box::into_raw(m) as *mut c_void, NAME_VERSIONED)
    } else {
        let m = Box::new(DLManagedTensor { dl_tensor: tensor, manager_ctx: ctx as *mut c_void, deleter: Some(delete_legacy) });
        (Box::into_raw(m) as *mut c_void, NAME_LEGACY)
    };
    // SAFETY: ptr is a live managed tensor; the name is a static C string;
    // the destructor frees the tensor unless a consumer renamed the capsule.
    let cap = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
    if cap.is_null() {
        // SAFETY: nobody else saw ptr; free it with its own deleter.
        unsafe {
            if versioned {
                delete_versioned(ptr as *mut DLManagedTensorVersioned)
            } else {
                delete_legacy(ptr as *mut DLManagedTensor)
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: cap is a new, owned reference.
    Ok(unsafe { Bound::from_owned_ptr(py, cap) }.unbind())
}

/// A consumed tensor: its deleter runs once, when the last user of the
/// wrapped memory lets go (with the GIL taken: producers such as NumPy
/// drop Python references in their deleters).
struct Taken {
    ptr: *mut c_void,
    versioned: bool,
}

// SAFETY: DLPack deleters may be called from any thread; we take the GIL.
unsafe impl Send for Taken {}

impl Drop for Taken {
    fn drop(&mut self) {
        crate::exports::with_gil_or_leak(|| {
            // SAFETY: ptr is the managed tensor we took ownership of by
            // renaming its capsule; its deleter is called exactly once, here.
            unsafe {
                if self.versioned {
                    let m = self.ptr as *mut DLManagedTensorVersioned;
                    if let Some(d) = (*m).deleter {
                        d(m);
                    }
                } else {
                    let m = self.ptr as *mut DLManagedTensor;
                    if let Some(d) = (*m).deleter {
                        d(m);
                    }
                }
            }
        });
    }
}

/// Consumes a DLPack capsule into a blob on `engine` that shares the
/// tensor's memory (read-only when the producer flagged it so), or copies
/// it: always with `copy == Some(true)`, and when it is strided or
/// misaligned unless `copy == Some(false)`, which then raises BufferError.
pub fn consume(capsule: &Bound<'_, PyAny>, copy: Option<bool>, engine: &Engine) -> PyResult<blobcore::Blob> {
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
    let name = if versioned { NAME_VERSIONED } else { NAME_LEGACY };
    // SAFETY: the name was just validated.
    let ptr = unsafe { ffi::PyCapsule_GetPointer(cap, name.as_ptr()) };
    if ptr.is_null() {
        return Err(PyErr::fetch(capsule.py()));
    }
    // SAFETY: a valid capsule of this name holds a managed tensor of the
    // matching layout (the DLPack contract).
    let (t, flags): (&DLTensor, u64) = unsafe {
        if versioned {
            let m = &*(ptr as *const DLManagedTensorVersioned);
            if m.version.major != 1 {
                return Err(raise(
                    "UnsupportedError",
                    format!("DLPack version {}.{} is not supported (1.x is)", m.version.major, m.version.minor),
                ));
            }
            (&m.dl_tensor, m.flags)
        } else {
            (&(*(ptr as *const DLManagedTensor)).dl_tensor, 0)
        }
    };
    if t.device.device_type != DL_CPU && t.device.device_type != DL_CUDA_HOST {
        return Err(raise(
            "DeviceError",
            format!("DLPack tensor lives on device type {}; only CPU tensors can be imported", t.device.device_type),
        ));
    }
    let dtype = from_dl_dtype(t.dtype)?;
    if !(0..=blobcore::MAX_RANK as i32).contains(&t.ndim) {
        return Err(raise("ShapeError", format!("DLPack tensor has rank {}", t.ndim)));
    }
    let n = t.ndim as usize;
    // SAFETY: shape has ndim entries; strides too when non-NULL (DLPack contract).
    let dims: Vec<i64> = if n == 0 { vec![] } else { unsafe { std::slice::from_raw_parts(t.shape, n) }.to_vec() };
    let strides: Option<Vec<i64>> =
        (!t.strides.is_null() && n > 0).then(|| unsafe { std::slice::from_raw_parts(t.strides, n) }.to_vec());
    let shape = core(Shape::from_i64(&dims))?;
    let count = shape.count();
    let strides: Vec<isize> = match strides {
        Some(s) => s.iter().map(|&v| v as isize).collect(),
        None => blobcore::row_major_strides(shape.dims(), 1),
    };
    let contiguous = blobcore::is_row_major(shape.dims(), &strides, 1);
    // data + byte_offset is the tensor's first element (DLPack contract).
    let base = (t.data as *mut u8).wrapping_add(t.byte_offset as usize);
    let byte_len = count * dtype.size();
    let read_only = flags & FLAG_READ_ONLY != 0;
    let aligned = (base as usize).is_multiple_of(dtype.size());
    let must_copy = !contiguous || !aligned;
    if must_copy && copy == Some(false) {
        return Err(pyo3::exceptions::PyBufferError::new_err(
            "from_dlpack(copy=False): the tensor is strided or misaligned, so it cannot be shared without a copy",
        ));
    }

    // Mark the capsule consumed before anything can fail halfway: from here
    // on we own the tensor and `taken` deletes it exactly once.
    let used = if versioned { USED_VERSIONED } else { USED_LEGACY };
    // SAFETY: renaming a valid capsule; the name is static.
    if unsafe { ffi::PyCapsule_SetName(cap, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    let taken = Taken { ptr, versioned };

    if count == 0 || base.is_null() || must_copy || copy == Some(true) {
        // Copy into a new blob (gathering strided elements).
        let out = core(blobcore::Blob::new(engine, dtype, shape))?;
        if count > 0 {
            // SAFETY: the DLPack contract: every index within `dims` at
            // these strides addresses a readable element of the tensor.
            core(unsafe { out.copy_from_strided(base, &strides) })?;
        }
        drop(taken);
        return Ok(out);
    }
    let nn = NonNull::new(base).ok_or_else(|| raise("InvalidArgumentError", "DLPack tensor has NULL data"))?;
    let release: blobcore::ReleaseFn = Box::new(move || drop(taken));
    // SAFETY: the producer keeps the tensor's memory valid (writable unless
    // flagged read-only) until its deleter runs, which `release` does,
    // exactly once, after the last user.
    core(unsafe { blobcore::Blob::wrap_lent(engine, dtype, shape, nn, byte_len, Some(release), read_only) })
}
