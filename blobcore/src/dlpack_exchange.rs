//! DLPack 1.3's C exchange API: the `DLPackExchangeAPI` function table a
//! framework publishes (in Python, as the `__dlpack_c_exchange_api__`
//! capsule on its tensor type) so that consumers exchange tensors through
//! C calls instead of `__dlpack__`'s Python round trip.
//!
//! The table's layout is DLPack's (`dlpack.h`, 1.3). Its entries that
//! take or return Python objects are the binding's to fill; this module
//! holds the layout and the language-free entry: allocating a new tensor
//! from a prototype, owned by the consumer through the usual deleter.

use crate::blob::Blob;
use crate::dlpack::{dtype_of, DLManagedTensorVersioned, DLPackVersion, DLTensor, DL_CPU};
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::shape::Shape;
use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;

/// The DLPack version of the exchange table's layout.
pub const EXCHANGE_API_VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 3 };

/// The capsule name DLPack gives the table (`"dlpack_exchange_api"`).
pub const EXCHANGE_API_CAPSULE_NAME: &std::ffi::CStr = c"dlpack_exchange_api";

/// `SetError(error_ctx, kind, message)`: how the allocator reports a failure.
pub type SetErrorFn = unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char);

/// `DLPackManagedTensorAllocator`: a new tensor shaped like `prototype`
/// (its dtype, ndim, shape and device), 0 on success; on failure -1 after
/// one call of `SetError`.
pub type ManagedTensorAllocator =
    unsafe extern "C" fn(prototype: *mut DLTensor, out: *mut *mut DLManagedTensorVersioned, error_ctx: *mut c_void, set_error: Option<SetErrorFn>) -> c_int;
/// `DLPackManagedTensorFromPyObjectNoSync`: exports a tensor object of
/// the producer's type; 0, or -1 with a Python exception set.
pub type ManagedTensorFromPyObject = unsafe extern "C" fn(py_object: *mut c_void, out: *mut *mut DLManagedTensorVersioned) -> c_int;
/// `DLPackManagedTensorToPyObjectNoSync`: imports a tensor (ownership is
/// taken, also on failure) as the producer's tensor object.
pub type ManagedTensorToPyObject = unsafe extern "C" fn(tensor: *mut DLManagedTensorVersioned, out_py_object: *mut *mut c_void) -> c_int;
/// `DLPackDLTensorFromPyObjectNoSync`: fills a caller-owned `DLTensor`
/// (optional: NULL when a producer has none).
pub type DLTensorFromPyObject = unsafe extern "C" fn(py_object: *mut c_void, out: *mut DLTensor) -> c_int;
/// `DLPackCurrentWorkStream`: the device's current stream (NULL for the CPU).
pub type CurrentWorkStream = unsafe extern "C" fn(device_type: i32, device_id: i32, out_current_stream: *mut *mut c_void) -> c_int;

/// `DLPackExchangeAPIHeader`: the part of the table stable across versions.
#[repr(C)]
#[derive(Debug)]
pub struct DLPackExchangeAPIHeader {
    /// The table's DLPack version (consumers check the major version).
    pub version: DLPackVersion,
    /// An older table of the same producer, or NULL.
    pub prev_api: *mut DLPackExchangeAPIHeader,
}

/// `DLPackExchangeAPI`: the function table (all entries but
/// `dltensor_from_py_object_no_sync` must be set).
#[repr(C)]
#[derive(Debug)]
pub struct DLPackExchangeAPI {
    /// Version and chain.
    pub header: DLPackExchangeAPIHeader,
    /// See [`ManagedTensorAllocator`].
    pub managed_tensor_allocator: Option<ManagedTensorAllocator>,
    /// See [`ManagedTensorFromPyObject`].
    pub managed_tensor_from_py_object_no_sync: Option<ManagedTensorFromPyObject>,
    /// See [`ManagedTensorToPyObject`].
    pub managed_tensor_to_py_object_no_sync: Option<ManagedTensorToPyObject>,
    /// See [`DLTensorFromPyObject`].
    pub dltensor_from_py_object_no_sync: Option<DLTensorFromPyObject>,
    /// See [`CurrentWorkStream`].
    pub current_work_stream: Option<CurrentWorkStream>,
}

// SAFETY: the table is immutable after construction; its only pointer
// (`prev_api`) is NULL or another immutable static table.
unsafe impl Sync for DLPackExchangeAPI {}

impl Blob {
    /// DLPack's `managed_tensor_allocator`: a new zeroed CPU tensor with
    /// the prototype's dtype and shape, exported writable (the consumer
    /// owns it and frees it with its deleter). Devices other than the
    /// CPU, dtypes blobcore lacks and bad shapes are errors; nothing is
    /// allocated then.
    ///
    /// # Safety
    /// `prototype` must be NULL or point to a `DLTensor` whose `shape`
    /// holds `ndim` readable entries.
    pub unsafe fn dlpack_allocate(prototype: *const DLTensor) -> Result<NonNull<DLManagedTensorVersioned>> {
        crate::dlpack::check_aligned(prototype, "the DLPack prototype tensor")?;
        // SAFETY: the caller's promise (and aligned, checked above).
        let p = unsafe { prototype.as_ref() }.ok_or_else(|| err!(NullPointer, "the DLPack prototype tensor is NULL"))?;
        if p.device.device_type != DL_CPU {
            return Err(err!(Unsupported, "blobcore allocates DLPack tensors on the CPU (device type 1), not on device type {}", p.device.device_type));
        }
        let dtype = dtype_of(p.dtype)?;
        let ndim = usize::try_from(p.ndim).map_err(|_| err!(Shape, "the DLPack prototype has ndim {}", p.ndim))?;
        if ndim > crate::shape::MAX_RANK {
            return Err(err!(Shape, "the DLPack prototype has rank {ndim}, above the limit of {}", crate::shape::MAX_RANK));
        }
        if ndim > 0 && p.shape.is_null() {
            return Err(err!(NullPointer, "the DLPack prototype has {ndim} dims and a NULL shape"));
        }
        if ndim > 0 {
            crate::dlpack::check_aligned(p.shape, "the DLPack prototype's shape")?;
        }
        // SAFETY: the caller promises `ndim` readable entries at `shape`.
        let dims = if ndim == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(p.shape, ndim) } };
        let blob = Blob::new(&Engine::cpu(), dtype, Shape::from_i64(dims)?)?;
        blob.to_dlpack(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dlpack::{delete_tensor, dl_dtype, DLDevice};
    use crate::DType;

    fn prototype(dims: &mut [i64], dtype: DType, device_type: i32) -> DLTensor {
        DLTensor {
            data: std::ptr::null_mut(),
            device: DLDevice { device_type, device_id: 0 },
            ndim: dims.len() as i32,
            dtype: dl_dtype(dtype),
            shape: dims.as_mut_ptr(),
            strides: std::ptr::null_mut(),
            byte_offset: 0,
        }
    }

    #[test]
    fn allocates_zeroed_writable_tensors() {
        let mut dims = [2i64, 3];
        let p = prototype(&mut dims, DType::I16, DL_CPU);
        // SAFETY: `p` is a valid prototype; the result is freed below.
        let t = unsafe { Blob::dlpack_allocate(&p) }.unwrap();
        // SAFETY: a live tensor we own.
        let m = unsafe { t.as_ref() };
        assert_eq!(m.flags, 0);
        assert_eq!(m.dl_tensor.dtype, dl_dtype(DType::I16));
        // SAFETY: the shape holds ndim entries and the data 6 i16.
        unsafe {
            assert_eq!(std::slice::from_raw_parts(m.dl_tensor.shape, 2), [2, 3]);
            assert_eq!(std::slice::from_raw_parts(m.dl_tensor.data as *const i16, 6), [0; 6]);
            delete_tensor(t.as_ptr());
        }
    }

    #[test]
    fn refuses_bad_prototypes() {
        let mut dims = [2i64, -1];
        let code = |e: crate::Error| e.code();
        // SAFETY: each prototype is valid for reads of its shape.
        unsafe {
            assert_eq!(code(Blob::dlpack_allocate(std::ptr::null()).unwrap_err()), 1);
            assert_eq!(code(Blob::dlpack_allocate(&prototype(&mut dims, DType::F32, DL_CPU)).unwrap_err()), 4);
            let mut ok = [2i64];
            assert_eq!(code(Blob::dlpack_allocate(&prototype(&mut ok, DType::F32, 2)).unwrap_err()), crate::Error::Unsupported(String::new()).code());
            let mut bad = prototype(&mut ok, DType::F32, DL_CPU);
            bad.dtype.lanes = 4;
            assert!(Blob::dlpack_allocate(&bad).is_err());
            bad = prototype(&mut ok, DType::F32, DL_CPU);
            bad.ndim = -1;
            assert_eq!(code(Blob::dlpack_allocate(&bad).unwrap_err()), 4);
            bad.ndim = 1;
            bad.shape = std::ptr::null_mut();
            assert_eq!(code(Blob::dlpack_allocate(&bad).unwrap_err()), 1);
            // Misaligned shape or prototype: refused, never read.
            let mut words = [2u64; 3];
            bad.shape = (words.as_mut_ptr() as *mut u8).add(1) as *mut i64;
            assert_eq!(code(Blob::dlpack_allocate(&bad).unwrap_err()), 3);
            let odd = (words.as_ptr() as *const u8).add(4) as *const DLTensor;
            assert_eq!(code(Blob::dlpack_allocate(odd).unwrap_err()), 3);
        }
    }
}
