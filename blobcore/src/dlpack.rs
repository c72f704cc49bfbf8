//! DLPack: how blobs reach PyTorch (`at::fromDLPack`), TVM, ONNX Runtime,
//! CuPy, JAX and NumPy without copying, and how their tensors become blobs.
//!
//! The `#[repr(C)]` types follow the field layout of the DLPack
//! specification (`dlpack.h`, version 1.1): [`DLManagedTensorVersioned`]
//! (1.x, with flags) and [`DLManagedTensor`] (the legacy 0.x struct, still
//! what many consumers take). `include/blob_dlpack.h` is generated from
//! them for C users without a `dlpack.h`.
//!
//! **Export** ([`Blob::to_dlpack`], [`Blob::to_dlpack_legacy`]): any blob a
//! strided array can describe (dense blobs and planar views; blocked
//! layouts are `Unsupported`). The managed tensor owns its shape and
//! stride arrays and an [`Export`] that pins the storage (reallocating
//! the blob is `Busy` while it lives), all in one allocation; its deleter
//! frees it, from any thread, taking no lock a caller could hold and no
//! GIL. The memory outlives the blob if the consumer keeps the tensor.
//!
//! **Device memory** (`kDLCUDA`): a blob on a CUDA engine exports its
//! device copy with [`Blob::to_dlpack_cuda`] (the array API's `stream`
//! rule included), and a CUDA engine imports `kDLCUDA` tensors of its
//! device — shared (the blob's device copy is the tensor's memory) or,
//! for strided tensors and `copy = Some(true)`, copied.
//!
//! **Import** ([`Blob::from_dlpack`], [`Blob::from_dlpack_legacy`]): CPU
//! tensors (`kDLCPU`, `kDLCUDAHost`) of a blobcore dtype, and `kDLCUDA`
//! tensors with a CUDA engine on their device. On success the
//! blob owns the tensor: its deleter (if not NULL) runs exactly once, when
//! the last blob, view or export using the memory lets go — or at once,
//! when the data was copied. On error nothing is taken: the deleter has
//! not run and the caller still owns the tensor. A tensor flagged
//! `READ_ONLY` gives a read-only blob (zero-copy); strided or misaligned
//! tensors are copied (`copy = Some(false)` refuses them instead).
//! A dense tensor blobcore exported itself (its deleter is blobcore's)
//! comes back as a blob on the exported storage, as a view would: no
//! second wrap of the memory, and the export is freed at once.

use crate::blob::Blob;
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::export::Export;
use crate::shape::{Shape, MAX_RANK};
use crate::storage::Storage;
use smallvec::SmallVec;
use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::Arc;

/// DLPack's device types (defined beside [`Export`], whose memory they
/// place).
pub use crate::export::{DL_CPU, DL_CUDA, DL_CUDA_HOST};
/// The DLPack major version this module speaks.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// The DLPack minor version exports declare.
pub const DLPACK_MINOR_VERSION: u32 = 1;
/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy for this export.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 2;

/// `DLDevice`: where the data lives.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    /// `DLDeviceType` (1 = CPU).
    pub device_type: i32,
    /// The device's index (0 for the CPU).
    pub device_id: i32,
}

/// `DLDataType`: type code (0 int, 1 uint, 2 float, 4 bfloat, 6 bool, 10/12/14
/// float8 e4m3fn/e5m2/e8m0fnu), bits, lanes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    /// `DLDataTypeCode`.
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Vector lanes (1 for scalars).
    pub lanes: u16,
}

/// `DLTensor`: a strided view of memory.
// Copy copies the header only (its pointers, not what they point at).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DLTensor {
    /// The memory; the first element is at `data + byte_offset`.
    pub data: *mut c_void,
    /// Where `data` lives.
    pub device: DLDevice,
    /// Number of dims.
    pub ndim: i32,
    /// The element type.
    pub dtype: DLDataType,
    /// `ndim` dims.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or NULL for row-major.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// `DLManagedTensor` (legacy, DLPack < 1.0): a tensor and how to free it.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensor {
    /// The tensor.
    pub dl_tensor: DLTensor,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor (may be NULL: the producer keeps ownership).
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLPackVersion {
    /// Major version (1).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// `DLManagedTensorVersioned` (DLPack 1.x): versioned, with flags.
#[repr(C)]
#[derive(Debug)]
pub struct DLManagedTensorVersioned {
    /// The producer's DLPack version.
    pub version: DLPackVersion,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor (may be NULL: the producer keeps ownership).
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// `DLPACK_FLAG_BITMASK_*`.
    pub flags: u64,
    /// The tensor.
    pub dl_tensor: DLTensor,
}

/// Calls a versioned tensor's deleter, if it has one (NULL is ignored).
///
/// # Safety
/// `m` must be NULL or a live tensor its owner gives up here (the
/// deleter runs at most once over the tensor's life).
pub unsafe fn delete_tensor(m: *mut DLManagedTensorVersioned) {
    // SAFETY: the caller's promise.
    if let Some(d) = unsafe { m.as_ref() }.and_then(|t| t.deleter) {
        // SAFETY: as above.
        unsafe { d(m) }
    }
}

/// Calls a legacy tensor's deleter, if it has one (NULL is ignored).
///
/// # Safety
/// As [`delete_tensor`].
pub unsafe fn delete_legacy_tensor(m: *mut DLManagedTensor) {
    // SAFETY: the caller's promise.
    if let Some(d) = unsafe { m.as_ref() }.and_then(|t| t.deleter) {
        // SAFETY: as above.
        unsafe { d(m) }
    }
}

/// DLPack type codes (`DLDataTypeCode`, DLPack 1.1+).
const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;
const KDL_BOOL: u8 = 6;
const KDL_FLOAT8_E4M3FN: u8 = 10;
const KDL_FLOAT8_E5M2: u8 = 12;
const KDL_FLOAT8_E8M0FNU: u8 = 14;

/// Every dtype's DLPack (code, bits).
const CODES: [(DType, u8, u8); 16] = [
    (DType::F32, KDL_FLOAT, 32),
    (DType::F64, KDL_FLOAT, 64),
    (DType::F16, KDL_FLOAT, 16),
    (DType::BF16, KDL_BFLOAT, 16),
    (DType::I8, KDL_INT, 8),
    (DType::I16, KDL_INT, 16),
    (DType::I32, KDL_INT, 32),
    (DType::I64, KDL_INT, 64),
    (DType::U8, KDL_UINT, 8),
    (DType::U16, KDL_UINT, 16),
    (DType::U32, KDL_UINT, 32),
    (DType::U64, KDL_UINT, 64),
    (DType::Bool, KDL_BOOL, 8),
    (DType::F8E4M3Fn, KDL_FLOAT8_E4M3FN, 8),
    (DType::F8E5M2, KDL_FLOAT8_E5M2, 8),
    (DType::F8E8M0Fnu, KDL_FLOAT8_E8M0FNU, 8),
];

/// The DLPack data type of a blobcore dtype: `kDLFloat`, `kDLBfloat`,
/// `kDLInt`, `kDLUInt`, `kDLBool` (8 bits) and the float8 codes
/// `kDLFloat8_e4m3fn` (10), `kDLFloat8_e5m2` (12), `kDLFloat8_e8m0fnu` (14).
pub fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = CODES.iter().find(|c| c.0 == d).map_or((0, 0), |c| (c.1, c.2));
    DLDataType { code, bits, lanes: 1 }
}

/// The blobcore dtype of a DLPack data type, or a `DType` error.
pub fn dtype_of(t: DLDataType) -> Result<DType> {
    Ok(match CODES.iter().find(|c| (c.1, c.2, 1) == (t.code, t.bits, t.lanes)) {
        Some(c) => c.0,
        None => {
            return Err(err!(
                DType,
                "DLPack dtype (code {}, bits {}, lanes {}) has no blobcore dtype",
                t.code,
                t.bits,
                t.lanes
            ))
        }
    })
}

/// Everything one export owns, in one allocation: the managed tensor
/// handed to the consumer (first, so the deleter's pointer is the box's),
/// the [`Export`] that pins the memory, and the shape and strides the
/// tensor points into (inline up to eight axes; the box never moves).
#[repr(C)]
struct Exported<M> {
    managed: M,
    export: Export,
    shape: SmallVec<[i64; 8]>,
    strides: SmallVec<[i64; 8]>,
}

/// The two managed-tensor structs, as [`exported`] fills them.
trait Managed {
    fn tensor_mut(&mut self) -> &mut DLTensor;
    fn set_context(&mut self, ctx: *mut c_void);
}

impl Managed for DLManagedTensorVersioned {
    fn tensor_mut(&mut self) -> &mut DLTensor {
        &mut self.dl_tensor
    }
    fn set_context(&mut self, ctx: *mut c_void) {
        self.manager_ctx = ctx;
    }
}

impl Managed for DLManagedTensor {
    fn tensor_mut(&mut self) -> &mut DLTensor {
        &mut self.dl_tensor
    }
    fn set_context(&mut self, ctx: *mut c_void) {
        self.manager_ctx = ctx;
    }
}

unsafe extern "C" fn delete_legacy(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` came from `exported::<DLManagedTensor>` (this deleter is
    // only set there) and DLPack calls the deleter once: the pointer is
    // the box's, `managed` being its first field of a repr(C) struct.
    drop(unsafe { Box::from_raw(m as *mut Exported<DLManagedTensor>) });
}

unsafe extern "C" fn delete_versioned(m: *mut DLManagedTensorVersioned) {
    if m.is_null() {
        return;
    }
    // SAFETY: as in `delete_legacy`, for `exported::<DLManagedTensorVersioned>`.
    drop(unsafe { Box::from_raw(m as *mut Exported<DLManagedTensorVersioned>) });
}

/// Boxes the export `export` makes behind a managed tensor `make` builds
/// around its `DLTensor` (whose shape and strides are filled in here);
/// `export`'s error is returned as it is, with nothing left allocated.
#[inline(always)]
fn exported<M: Managed>(export: impl FnOnce(*mut Export) -> Result<()>, make: impl FnOnce(&Export, DLTensor) -> M) -> Result<NonNull<M>> {
    // Leaked first: the pointers to the shape and strides handed out below
    // are derived from the leaked allocation, not from a `Box` that is
    // moved afterwards (moving a `Box` asserts unique access to its
    // contents, which would invalidate them under Rust's aliasing rules;
    // Miri reports that order as undefined behaviour).
    //
    // Allocated before the export is made and before any field is
    // written, each straight into it: a record built first on the stack
    // (about 450 bytes of narrow stores) is copied in by `memcpy`, whose
    // wide loads wait on those stores (store forwarding): `to_dlpack +
    // delete` 80-83 -> 66-67 ns on session 84's Zen 4 VM for the fields,
    // and 58-59 -> 45-49 ns in session 85 for the export itself, which
    // `export` now writes into the box (`examples/percall.rs`, alternated).
    let raw = Box::into_raw(Box::<Exported<M>>::new_uninit()) as *mut Exported<M>;
    // SAFETY: `raw` is the uninitialised allocation just leaked, reached
    // through nothing else: `export` writes its field (once) on success.
    match export(unsafe { std::ptr::addr_of_mut!((*raw).export) }) {
        Ok(()) => {}
        Err(e) => {
            // SAFETY: `raw` came from `Box::into_raw` of an uninitialised
            // box just above and holds nothing yet: it is freed as such.
            drop(unsafe { Box::from_raw(raw as *mut std::mem::MaybeUninit<Exported<M>>) });
            return Err(e);
        }
    }
    // SAFETY: `export` was written just above; nothing else reaches `raw`.
    let export = unsafe { &(*raw).export };
    let t = DLTensor {
        data: export.as_ptr() as *mut c_void,
        device: DLDevice { device_type: export.device().0, device_id: export.device().1 },
        ndim: export.shape().len() as i32,
        dtype: dl_dtype(export.dtype()),
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    // SAFETY: as above; each remaining field is written once, by pointer,
    // before anything reads the record (a panic in `make` or here leaks
    // the allocation and the export in it). The shape and strides are
    // written in elements straight from the export (no intermediate byte
    // strides).
    unsafe {
        std::ptr::addr_of_mut!((*raw).managed).write(make(export, t));
        let shape = &mut *(std::ptr::addr_of_mut!((*raw).shape) as *mut std::mem::MaybeUninit<SmallVec<[i64; 8]>>);
        let strides = &mut *(std::ptr::addr_of_mut!((*raw).strides) as *mut std::mem::MaybeUninit<SmallVec<[i64; 8]>>);
        export.write_dl_axes(shape, strides);
    }
    // SAFETY: `raw` is the live allocation just leaked, every field now
    // written, reached through nothing else until it is returned.
    let Exported { managed, shape, strides, .. } = unsafe { &mut *raw };
    let t = managed.tensor_mut();
    (t.shape, t.strides) = (shape.as_mut_ptr(), strides.as_mut_ptr());
    managed.set_context(raw as *mut c_void);
    // SAFETY: `raw` is non-null (a box's); `managed` is the first field of
    // a repr(C) struct, so its address is the box's.
    Ok(unsafe { NonNull::new_unchecked(raw as *mut M) })
}

/// The export behind `owner` when blobcore itself made the tensor (its
/// deleter is one of ours), so that importing it back shares the storage
/// rather than wrapping the memory a second time.
fn own_export(owner: &Owner) -> Option<&Export> {
    // SAFETY: `owner` is a live managed tensor; a tensor whose deleter is
    // one of ours was made by `exported` for that struct, so it is the
    // start of an `Exported` of it (the deleter is set nowhere else).
    unsafe {
        match *owner {
            Owner::Versioned(m) => export_inside(m),
            Owner::Legacy(m) => {
                let d = m.as_ref().deleter?;
                std::ptr::fn_addr_eq(d, delete_legacy as unsafe extern "C" fn(_))
                    .then(|| &(*(m.as_ptr() as *const Exported<DLManagedTensor>)).export)
            }
        }
    }
}

/// The export inside a DLPack 1.x managed tensor when blobcore made it
/// (its deleter is blobcore's), read in place: nothing is taken over or
/// freed. For bindings that find, behind another library's object, a
/// tensor that library imported from blobcore (NumPy's `from_dlpack`
/// keeps it as its array's base), to put a blob on the same storage
/// ([`Export::share_returned`]). `None` for anyone else's tensor.
///
/// # Safety
/// `m` points to a live managed tensor, which stays alive (its deleter
/// not called) while the returned reference is used.
pub unsafe fn export_inside<'a>(m: NonNull<DLManagedTensorVersioned>) -> Option<&'a Export> {
    // SAFETY: the caller's promise; a tensor whose deleter is ours was made
    // by `exported`, so it is the start of an `Exported` of that struct
    // (the deleter is set nowhere else).
    unsafe {
        let d = m.as_ref().deleter?;
        std::ptr::fn_addr_eq(d, delete_versioned as unsafe extern "C" fn(_))
            .then(|| &(*(m.as_ptr() as *const Exported<DLManagedTensorVersioned>)).export)
    }
}

impl Blob {
    /// Exports the blob as a DLPack 1.x tensor sharing its memory. `flags`
    /// may hold [`DLPACK_FLAG_BITMASK_READ_ONLY`] (the consumer may only
    /// read; the GPU head is not moved) and [`DLPACK_FLAG_BITMASK_IS_COPIED`]
    /// (for a producer that exports a copy it made); other bits are
    /// `InvalidArgument`. Read-only blobs always export with `READ_ONLY`.
    /// The caller owns the result and frees it with its deleter.
    pub fn to_dlpack(&self, flags: u64) -> Result<NonNull<DLManagedTensorVersioned>> {
        self.to_dlpack_inline(flags)
    }

    /// [`Blob::to_dlpack`], inlined into [`Blob::to_dlpack_copy`] (the C
    /// exchange's path): a result handed back through memory between the
    /// two was read back wider than it was written (store forwarding).
    #[inline(always)]
    fn to_dlpack_inline(&self, flags: u64) -> Result<NonNull<DLManagedTensorVersioned>> {
        let known = DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED;
        if flags & !known != 0 {
            return Err(err!(InvalidArgument, "DLPack export flags {flags:#x} hold bits other than READ_ONLY (1) and IS_COPIED (2)"));
        }
        exported(
            // SAFETY: `exported` passes its box's export field.
            |slot| unsafe { self.export_host_into(flags & DLPACK_FLAG_BITMASK_READ_ONLY == 0, slot) },
            |export, dl_tensor| DLManagedTensorVersioned {
                version: DLPackVersion { major: DLPACK_MAJOR_VERSION, minor: DLPACK_MINOR_VERSION },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_versioned),
                flags: (flags & DLPACK_FLAG_BITMASK_IS_COPIED) | if export.is_writable() { 0 } else { DLPACK_FLAG_BITMASK_READ_ONLY },
                dl_tensor,
            },
        )
    }

    /// The array API's export (`__dlpack__(copy=…)`, DLPack's C exchange
    /// API), decided under one look at the blob: `copy = Some(true)`
    /// exports a new copy flagged `IS_COPIED`; `None` shares the memory,
    /// or exports a copy (flagged) when a blocked layout has no strides
    /// DLPack could carry; `Some(false)` only shares (a blocked blob is
    /// `Unsupported`). A read-only blob's shared export is `READ_ONLY`.
    pub fn to_dlpack_copy(&self, copy: Option<bool>) -> Result<NonNull<DLManagedTensorVersioned>> {
        if copy != Some(true) {
            match self.to_dlpack_inline(0) {
                // Only a failed share looks again: blocked layouts are copied.
                Err(_) if copy.is_none() && self.is_blocked() => {}
                shared => return shared,
            }
        }
        self.copy()?.to_dlpack(DLPACK_FLAG_BITMASK_IS_COPIED)
    }

    /// [`Blob::to_dlpack_copy`]'s rule for a legacy `DLManagedTensor`,
    /// which has no flags: the same sharing and copying, and a read-only
    /// blob that would be shared is `ReadOnly` (the struct cannot tell its
    /// consumer not to write).
    pub fn to_dlpack_legacy_copy(&self, copy: Option<bool>) -> Result<NonNull<DLManagedTensor>> {
        if copy == Some(true) || (copy.is_none() && self.is_blocked()) {
            return self.copy()?.to_dlpack_legacy();
        }
        if !self.is_writable() {
            return Err(err!(
                ReadOnly,
                "a read-only blob cannot be exported as a legacy DLManagedTensor, which has no read-only flag; export a DLPack 1.x tensor, which can say so, or a copy"
            ));
        }
        self.to_dlpack_legacy()
    }

    /// Exports the blob as a legacy `DLManagedTensor` (no flags: a
    /// read-only blob's consumer is trusted not to write). The caller owns
    /// the result and frees it with its deleter.
    pub fn to_dlpack_legacy(&self) -> Result<NonNull<DLManagedTensor>> {
        exported(
            |slot| {
                let e = self.export()?;
                // SAFETY: `exported` passes its box's export field, valid for a write.
                unsafe { slot.write(e) };
                Ok(())
            },
            |_, dl_tensor| DLManagedTensor { dl_tensor, manager_ctx: std::ptr::null_mut(), deleter: Some(delete_legacy) },
        )
    }

    /// The DLPack device a consumer finds the blob's data on
    /// (`__dlpack_device__`): `(2, ordinal)` (kDLCUDA) for a blob on a CUDA
    /// engine, `(1, 0)` (kDLCPU) otherwise.
    pub fn dlpack_device(&self) -> (i32, i32) {
        match self.engine().device().and_then(|g| g.cuda()) {
            Some(c) => (DL_CUDA, c.ordinal() as i32),
            None => (DL_CPU, 0),
        }
    }

    /// The array API's stream rule for a CUDA export: the blob's queued
    /// kernels must be done before the consumer's `stream` uses the data.
    /// `None`, 1 (legacy default stream), 2 (per-thread default stream)
    /// and any stream handle wait for the engine's stream; -1 skips the
    /// wait (the consumer synchronises itself); 0 is ambiguous and
    /// refused, as the array API says.
    fn cuda_stream_sync(&self, stream: Option<i64>) -> Result<()> {
        match stream {
            Some(0) => Err(err!(InvalidArgument, "stream 0 is ambiguous for CUDA (the array API asks for 1 for the legacy default stream, 2 for the per-thread one)")),
            Some(-1) => Ok(()),
            Some(s) if s < -1 => Err(err!(InvalidArgument, "stream {s} is not a CUDA stream (-1, 1, 2 or a stream handle)")),
            _ => self.engine().synchronize(),
        }
    }

    /// The export behind a CUDA DLPack tensor, by the array API's copy
    /// rule (see [`Blob::to_dlpack_copy`]), and whether it is a copy.
    fn cuda_export(&self, copy: Option<bool>, write: bool) -> Result<(Export, bool)> {
        if copy != Some(true) {
            match self.export_cuda(write) {
                Err(_) if copy.is_none() && self.is_blocked() => {}
                shared => return shared.map(|e| (e, false)),
            }
        }
        Ok((self.copy()?.export_cuda(true)?, true))
    }

    /// The export a consumer gets without naming a device (DLPack's C
    /// exchange API, `__dlpack__()`): a CUDA blob's device memory, ready
    /// for any stream (the engine's queued kernels are waited for), and
    /// any other blob's host memory — by [`Blob::to_dlpack_copy`]'s copy
    /// rule either way.
    pub fn to_dlpack_native(&self, copy: Option<bool>) -> Result<NonNull<DLManagedTensorVersioned>> {
        if self.dlpack_device().0 == DL_CUDA {
            return self.to_dlpack_cuda(Some(1), copy);
        }
        self.to_dlpack_copy(copy)
    }

    /// Exports a CUDA engine's blob as a DLPack 1.x `kDLCUDA` tensor of its
    /// device memory (the array API's `__dlpack__` on a CUDA device):
    /// `copy` as in [`Blob::to_dlpack_copy`] (a copy is made on the
    /// device), `stream` as the array API defines it for CUDA (the engine's
    /// queued kernels finish before the consumer's stream reads; -1 skips
    /// that). While a writable export lives the device copy is the
    /// reference: blobcore's host reads fetch it, and its host writes are
    /// copied to it. A blob on another engine is `Unsupported`.
    pub fn to_dlpack_cuda(&self, stream: Option<i64>, copy: Option<bool>) -> Result<NonNull<DLManagedTensorVersioned>> {
        let (export, copied) = self.cuda_export(copy, true)?;
        self.cuda_stream_sync(stream)?;
        exported(
            |slot| {
                // SAFETY: `exported` passes its box's export field, valid for a write.
                unsafe { slot.write(export) };
                Ok(())
            },
            |export, dl_tensor| DLManagedTensorVersioned {
                version: DLPackVersion { major: DLPACK_MAJOR_VERSION, minor: DLPACK_MINOR_VERSION },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_versioned),
                flags: if copied { DLPACK_FLAG_BITMASK_IS_COPIED } else { 0 } | if export.is_writable() { 0 } else { DLPACK_FLAG_BITMASK_READ_ONLY },
                dl_tensor,
            },
        )
    }

    /// [`Blob::to_dlpack_cuda`] as a legacy `DLManagedTensor` (no flags: a
    /// read-only blob's shared export is `ReadOnly`, as on the host).
    pub fn to_dlpack_cuda_legacy(&self, stream: Option<i64>, copy: Option<bool>) -> Result<NonNull<DLManagedTensor>> {
        let (export, _) = self.cuda_export(copy, true)?;
        if !export.is_writable() {
            return Err(err!(
                ReadOnly,
                "a read-only blob cannot be exported as a legacy DLManagedTensor, which has no read-only flag; export a DLPack 1.x tensor, which can say so, or a copy"
            ));
        }
        self.cuda_stream_sync(stream)?;
        exported(
            |slot| {
                // SAFETY: `exported` passes its box's export field, valid for a write.
                unsafe { slot.write(export) };
                Ok(())
            },
            |_, dl_tensor| DLManagedTensor { dl_tensor, manager_ctx: std::ptr::null_mut(), deleter: Some(delete_legacy) },
        )
    }

    /// Imports a DLPack 1.x tensor (see the module docs for ownership). A
    /// major version other than 1 is `Unsupported`, as the specification
    /// requires; so is a device other than the CPU. `copy`: `None` shares
    /// when it can, `Some(true)` always copies, `Some(false)` never copies
    /// (`Unsupported` for strided or misaligned tensors). A tensor, shape
    /// or strides pointer not aligned for its type is `InvalidArgument`
    /// (never read through).
    ///
    /// # Safety
    /// `t` must be NULL or a live `DLManagedTensorVersioned` whose tensor
    /// describes memory valid for its shape and strides until its deleter
    /// runs (if it has none, until the last user of the blob lets go).
    pub unsafe fn from_dlpack(engine: &Engine, t: *mut DLManagedTensorVersioned, copy: Option<bool>) -> Result<Blob> {
        let m = NonNull::new(t).ok_or_else(|| err!(NullPointer, "the DLPack tensor is NULL"))?;
        check_aligned(t, "the DLPack tensor")?;
        // SAFETY: the caller promises a live managed tensor.
        let mr = unsafe { m.as_ref() };
        if mr.version.major != DLPACK_MAJOR_VERSION {
            return Err(err!(
                Unsupported,
                "DLPack version {}.{} is not supported (1.x is)",
                mr.version.major,
                mr.version.minor
            ));
        }
        let read_only = mr.flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0;
        let owner = Owner::Versioned(m);
        // SAFETY: the caller's promise on the tensor's memory.
        unsafe { import(engine, mr.dl_tensor, read_only, copy, owner) }
    }

    /// Imports a legacy `DLManagedTensor` as [`Blob::from_dlpack`] does
    /// (legacy tensors carry no read-only flag: the blob is writable).
    ///
    /// # Safety
    /// As [`Blob::from_dlpack`].
    pub unsafe fn from_dlpack_legacy(engine: &Engine, t: *mut DLManagedTensor, copy: Option<bool>) -> Result<Blob> {
        let m = NonNull::new(t).ok_or_else(|| err!(NullPointer, "the DLPack tensor is NULL"))?;
        check_aligned(t, "the DLPack tensor")?;
        // SAFETY: the caller promises a live managed tensor.
        let tensor = unsafe { m.as_ref().dl_tensor };
        // SAFETY: the caller's promise on the tensor's memory.
        unsafe { import(engine, tensor, false, copy, Owner::Legacy(m)) }
    }
}

/// Refuses a pointer from a producer that is not aligned for `T`: Rust
/// may not read a `T` (or form a slice of them) through it.
pub(crate) fn check_aligned<T>(p: *const T, what: &str) -> Result<()> {
    if p.is_aligned() {
        return Ok(());
    }
    Err(err!(InvalidArgument, "{what} ({p:p}) is not aligned to {} bytes", std::mem::align_of::<T>()))
}

/// An imported tensor: calls its deleter exactly once, when dropped.
enum Owner {
    Versioned(NonNull<DLManagedTensorVersioned>),
    Legacy(NonNull<DLManagedTensor>),
}

impl Owner {
    /// The storage, shape and dtype of the export inside blobcore's own
    /// managed tensor, taken without running the deleter (the box is
    /// freed here instead). Only these parts are read out of the box: a
    /// move of the whole export onto the stack first cost the round trip
    /// about 5% of its time in `memcpy` (session 85).
    ///
    /// # Safety
    /// [`own_export`] must have found this owner to be blobcore's.
    unsafe fn into_own_parts(self) -> (Arc<Storage>, Shape, DType) {
        let owner = std::mem::ManuallyDrop::new(self);
        // SAFETY: the caller's promise: the pointer is the start of an
        // `Exported` box of that struct (see `own_export`), handed over
        // to us, and its deleter will not run (`owner` is not dropped).
        unsafe {
            match *owner {
                Owner::Versioned(m) => take_own(m.as_ptr() as *mut Exported<DLManagedTensorVersioned>),
                Owner::Legacy(m) => take_own(m.as_ptr() as *mut Exported<DLManagedTensor>),
            }
        }
    }
}

/// [`Owner::into_own_parts`] of one box: its export's parts are moved
/// out, the rest of it dropped in place and its allocation freed.
///
/// # Safety
/// `p` is a live box made by [`exported`], owned by the caller and not
/// used after this.
unsafe fn take_own<M>(p: *mut Exported<M>) -> (Arc<Storage>, Shape, DType) {
    // SAFETY: the caller's promise; each field is moved out or dropped
    // once, and the allocation is then freed as uninitialised memory (the
    // managed struct holds nothing to drop: raw pointers and numbers).
    unsafe {
        let parts = Export::take_parts(std::ptr::addr_of_mut!((*p).export));
        std::ptr::drop_in_place(std::ptr::addr_of_mut!((*p).shape));
        std::ptr::drop_in_place(std::ptr::addr_of_mut!((*p).strides));
        drop(Box::from_raw(p as *mut std::mem::MaybeUninit<Exported<M>>));
        parts
    }
}

// SAFETY: DLPack deleters may be called from any thread (the specification
// requires producers to make them so), and the pointer is only used there.
unsafe impl Send for Owner {}

impl Drop for Owner {
    fn drop(&mut self) {
        // SAFETY: we own the tensor (the import succeeded); its deleter,
        // if any, runs here exactly once.
        unsafe {
            match *self {
                Owner::Versioned(m) => delete_tensor(m.as_ptr()),
                Owner::Legacy(m) => delete_legacy_tensor(m.as_ptr()),
            }
        }
    }
}

/// The checks and the wrap or copy of an import. Everything that can fail
/// happens before `owner` is taken over; on error it is forgotten, so the
/// caller keeps the tensor.
///
/// `t` is a copy of the tensor's header, not a reference into the managed
/// tensor: the deleter may free that struct before this returns (after a
/// copy, or when blobcore's own export comes back), and a reference
/// argument must stay valid for the whole call (Miri found it did not).
unsafe fn import(engine: &Engine, t: DLTensor, read_only: bool, copy: Option<bool>, owner: Owner) -> Result<Blob> {
    if copy != Some(true) {
        if let Some(offset) = own_export(&owner).and_then(|e| returned_intact(engine, e, &t, read_only)) {
            // SAFETY: `own_export` found blobcore's deleter: the tensor is
            // the start of one of our boxes, handed over to us.
            let (storage, shape, dtype) = unsafe { owner.into_own_parts() };
            return Ok(crate::lent_back::dense_on(storage, engine, dtype, shape, offset));
        }
    }
    let owner = std::mem::ManuallyDrop::new(owner);
    let on_cuda = t.device.device_type == DL_CUDA;
    if !on_cuda && t.device.device_type != DL_CPU && t.device.device_type != DL_CUDA_HOST {
        return Err(err!(
            Unsupported,
            "the DLPack tensor lives on device type {} (id {}); CPU tensors (kDLCPU = 1, kDLCUDAHost = 3) can be imported, and CUDA tensors (kDLCUDA = 2) with a CUDA engine",
            t.device.device_type,
            t.device.device_id
        ));
    }
    let cuda = match engine.gpu_device() {
        Some(g) if on_cuda && g.cuda().is_some() => Some(std::sync::Arc::clone(g)),
        _ => None,
    };
    if on_cuda {
        let ordinal = cuda.as_ref().and_then(|g| g.cuda()).map(|c| c.ordinal() as i32);
        if ordinal != Some(t.device.device_id) {
            return Err(err!(
                Unsupported,
                "the DLPack tensor lives on CUDA device {}; import it with a CUDA engine on that device (Engine::cuda({}); this engine is {})",
                t.device.device_id,
                t.device.device_id,
                match ordinal { Some(o) => format!("on CUDA device {o}"), None => format!("the {} engine", engine.name()) }
            ));
        }
    }
    let dtype = dtype_of(t.dtype)?;
    if !(0..=MAX_RANK as i32).contains(&t.ndim) {
        return Err(err!(Shape, "the DLPack tensor has rank {} (0..={MAX_RANK} are supported)", t.ndim));
    }
    let n = t.ndim as usize;
    if n > 0 && t.shape.is_null() {
        return Err(err!(NullPointer, "the DLPack tensor's shape is NULL for rank {n}"));
    }
    if n > 0 {
        check_aligned(t.shape, "the DLPack tensor's shape")?;
        if !t.strides.is_null() {
            check_aligned(t.strides, "the DLPack tensor's strides")?;
        }
    }
    // SAFETY: the DLPack contract: shape has ndim entries, strides too when non-NULL.
    let dims: &[i64] = if n == 0 { &[] } else { unsafe { std::slice::from_raw_parts(t.shape, n) } };
    let shape = Shape::from_i64(dims)?;
    let strides: SmallVec<[isize; 8]> = if n > 0 && !t.strides.is_null() {
        // SAFETY: as above.
        let s = unsafe { std::slice::from_raw_parts(t.strides, n) };
        let mut bad = None;
        let out = crate::axes::axes_filled(n, |out| {
            for (slot, &v) in out.iter_mut().zip(s) {
                match isize::try_from(v) {
                    Ok(v) => *slot = v,
                    Err(_) => bad = Some(v),
                }
            }
        });
        if let Some(v) = bad {
            return Err(err!(Shape, "DLPack stride {v} does not fit"));
        }
        out
    } else {
        crate::axes::axes_filled(n, |s| crate::layout::fill_row_major_strides(shape.dims(), 1, s))
    };
    let count = shape.count();
    let contiguous = crate::layout::is_row_major(shape.dims(), &strides, 1);
    let byte_offset = usize::try_from(t.byte_offset).map_err(|_| err!(InvalidArgument, "DLPack byte_offset does not fit"))?;
    // data + byte_offset is the first element (DLPack contract).
    let base = (t.data as *mut u8).wrapping_add(byte_offset);
    if count > 0 && base.is_null() {
        return Err(err!(NullPointer, "the DLPack tensor's data is NULL"));
    }
    // Device memory is read in 32-bit words by the kernels.
    let aligned = (base as usize).is_multiple_of(if on_cuda { dtype.size().max(4) } else { dtype.size() });
    let must_copy = !contiguous || !aligned;
    if must_copy && copy == Some(false) {
        return Err(err!(
            Unsupported,
            "the DLPack tensor is {} so it cannot be shared without a copy",
            if contiguous { "misaligned" } else { "strided" }
        ));
    }
    if let Some(g) = cuda {
        // SAFETY: the caller's promise on the tensor's memory, on the device.
        return unsafe { import_cuda(engine, g, dtype, shape, &strides, base, must_copy || copy == Some(true), read_only, owner) };
    }
    if count == 0 || must_copy || copy == Some(true) {
        let out = Blob::new(engine, dtype, shape)?;
        if count > 0 {
            // SAFETY: the DLPack contract: every index within `dims` at
            // these strides addresses a readable element of the tensor.
            unsafe { out.copy_from_strided(base, &strides)? };
        }
        // The copy is done: the tensor is ours, and its deleter runs now.
        drop(std::mem::ManuallyDrop::into_inner(owner));
        return Ok(out);
    }
    let ptr = NonNull::new(base).ok_or_else(|| err!(NullPointer, "the DLPack tensor's data is NULL"))?;
    let byte_len = count * dtype.size();
    if let Some(b) = own_export(&owner).and_then(|e| e.share_returned(engine, dtype, shape.clone(), ptr, byte_len, read_only)) {
        // The blob holds the storage itself: the export (and its pin) goes.
        drop(std::mem::ManuallyDrop::into_inner(owner));
        return Ok(b);
    }
    // The tensor becomes the blob's once the wrap succeeds: `release` owns
    // it then, and runs the deleter after the last user.
    let owner = std::mem::ManuallyDrop::into_inner(owner);
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(owner)));
    let taker = std::sync::Arc::clone(&slot);
    let release: crate::ReleaseFn = Box::new(move || drop(crate::blob::mutex(&taker).take()));
    // SAFETY: the producer keeps the memory valid (and writable unless
    // flagged read-only) until its deleter runs, which `release` does,
    // exactly once, after the last user.
    match unsafe { Blob::wrap_lent(engine, dtype, shape, ptr, byte_len, Some(release), read_only) } {
        Ok(b) => Ok(b),
        Err(e) => {
            // wrap_lent does not call `release` on error: give the tensor
            // back to the caller untouched.
            if let Some(o) = crate::blob::mutex(&slot).take() {
                std::mem::forget(o);
            }
            Err(e)
        }
    }
}

/// The import of a `kDLCUDA` tensor on a CUDA engine `g` (checked by the
/// caller, as are `dtype`, `shape` and `strides`; `base` is the device
/// address of element 0). Shared: the blob's device copy is the tensor's
/// memory, released through its deleter after the last user. Copied
/// (`copy`, or strided or misaligned tensors): a dense tensor is copied on
/// the device, a strided one through the host; the deleter runs at once.
#[allow(clippy::too_many_arguments)]
unsafe fn import_cuda(
    engine: &Engine,
    g: std::sync::Arc<crate::engine::gpu::Gpu>,
    dtype: DType,
    shape: Shape,
    strides: &[isize],
    base: *mut u8,
    copy: bool,
    read_only: bool,
    owner: std::mem::ManuallyDrop<Owner>,
) -> Result<Blob> {
    g.usable()?;
    let c = g.cuda().ok_or_else(|| err!(Internal, "a CUDA import on a non-CUDA engine"))?;
    let count = shape.count();
    let es = dtype.size() as isize;
    // The elements' extent relative to element 0, in bytes.
    let (mut lo, mut hi) = (0isize, 0isize);
    if count > 0 {
        for (&d, &s) in shape.dims().iter().zip(strides) {
            let far = (d as isize - 1).checked_mul(s).and_then(|x| x.checked_mul(es)).ok_or_else(|| err!(Shape, "DLPack strides overflow"))?;
            if far < 0 { lo += far } else { hi += far }
        }
    }
    let span = (hi - lo + es) as usize;
    let dense = crate::layout::is_row_major(shape.dims(), strides, 1);
    if count == 0 || copy {
        let out = Blob::new(engine, dtype, shape.clone())?;
        if count > 0 {
            let start = (base as usize).wrapping_add_signed(lo) as u64;
            // The source span as a buffer this engine may read; nothing to
            // release (the tensor's owner frees it after the copy).
            // SAFETY: the DLPack contract: the span is valid device memory.
            let src = crate::engine::gpu::DevBuf::Cuda(unsafe { c.wrap(start, span, Box::new(|| {})) });
            if dense && span == count * dtype.size() {
                let storage = std::sync::Arc::clone(&out.state().storage);
                let (borrow, dst) = storage.device(0, span, true)?;
                g.copy(&src, 0, &dst, 0, span)?;
                storage.device_done(0, span, true)?;
                drop(borrow);
                // The copy is queued: it must finish before the deleter
                // below hands the memory back to its producer.
                g.wait()?;
            } else {
                let mut host = vec![0u8; span];
                g.download(&src, 0, &mut host)?;
                // SAFETY: every element lies in `host` at (-lo) + its
                // byte offset from element 0 (the extent computed above).
                unsafe { out.copy_from_strided(host.as_mut_ptr().offset(-lo), strides)? };
            }
        }
        drop(std::mem::ManuallyDrop::into_inner(owner));
        return Ok(out);
    }
    let byte_len = count * dtype.size();
    if let Some(b) = own_export(&owner).and_then(|e| e.share_returned(engine, dtype, shape.clone(), NonNull::new(base)?, byte_len, read_only)) {
        drop(std::mem::ManuallyDrop::into_inner(owner));
        return Ok(b);
    }
    let owner = std::mem::ManuallyDrop::into_inner(owner);
    // SAFETY: the producer keeps `byte_len` bytes at `base` valid on this
    // device until its deleter runs, which the release does, once, when
    // the buffer's last user lets go.
    let mem = unsafe { c.wrap(base as u64, byte_len, Box::new(move || drop(owner))) };
    let storage = crate::storage::Storage::device_only(byte_len, std::sync::Arc::clone(&g), crate::engine::gpu::DevBuf::Cuda(mem), read_only);
    let state = crate::blob::State::dense(shape, storage, count);
    Ok(Blob::from_state(engine, dtype, state))
}

/// The element offset in its storage of blobcore's own dense host export
/// `e` when `t` still describes exactly what the export made (the
/// consumer edited nothing: pointer, device, dtype, dims and strides) and
/// a blob on the storage may share it ([`shared_offset`]):
/// the import then takes the export's storage and checked shape as they
/// are. `None`: the general path decides.
fn returned_intact(engine: &Engine, e: &Export, t: &DLTensor, read_only: bool) -> Option<usize> {
    let dims = e.shape();
    let intact = e.is_contiguous()
        && e.device() == (DL_CPU, 0)
        && (t.device.device_type, t.device.device_id) == (DL_CPU, 0)
        && t.data == e.as_ptr() as *mut c_void
        && t.byte_offset == 0
        && t.dtype == dl_dtype(e.dtype())
        && usize::try_from(t.ndim).ok() == Some(dims.len())
        && e.count() > 0;
    if !intact {
        return None;
    }
    if !dims.is_empty() {
        if t.shape.is_null() {
            return None;
        }
        // SAFETY: the DLPack contract: shape has ndim entries, strides too
        // when not NULL (ndim equals the export's rank, checked above).
        let shape = unsafe { std::slice::from_raw_parts(t.shape, dims.len()) };
        if shape.iter().zip(dims).any(|(&a, &b)| a as u64 != b as u64) {
            return None;
        }
        if !t.strides.is_null() {
            // SAFETY: as above.
            let strides = unsafe { std::slice::from_raw_parts(t.strides, dims.len()) };
            let mut step = 1u64;
            for (&s, &d) in strides.iter().zip(dims).rev() {
                if s as u64 != step {
                    return None;
                }
                step = step.wrapping_mul(d as u64);
            }
        }
    }
    e.shared_offset(engine, e.as_ptr() as usize, e.byte_len(), e.dtype().size(), read_only)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static DELETED: AtomicUsize = AtomicUsize::new(0);
    unsafe extern "C" fn count(_m: *mut DLManagedTensorVersioned) {
        DELETED.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn export_then_import_shares_memory_and_frees_once() {
        let e = Engine::cpu();
        let b = Blob::from_slice(&e, &[2, 3], &[0f32, 1., 2., 3., 4., 5.]).unwrap();
        let t = b.to_dlpack(0).unwrap();
        // SAFETY: a live export.
        let tr = unsafe { t.as_ref() };
        assert_eq!((tr.dl_tensor.ndim, tr.flags, tr.version.major), (2, 0, 1));
        assert_eq!(b.reshape(&[100]).unwrap_err().code(), 8); // pinned
        // SAFETY: our own export, handed over once.
        let c = unsafe { Blob::from_dlpack(&e, t.as_ptr(), None) }.unwrap();
        c.fill(7.0).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap()[5], 7.0);
        drop(c); // the export's deleter runs: the pin goes
        b.reshape(&[100]).unwrap();
        // Flags: READ_ONLY asked for, IS_COPIED passed through, others refused.
        let r = b.to_dlpack(DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED).unwrap();
        // SAFETY: a live export, freed once.
        unsafe {
            assert_eq!(r.as_ref().flags, 3);
            delete_tensor(r.as_ptr());
        }
        assert_eq!(b.to_dlpack(8).unwrap_err().code(), 3);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 600, rng_seed: proptest::test_runner::RngSeed::Fixed(851), ..Default::default() })]

        /// The DLPack box as `exported` fills it in place, for ranks 0 to
        /// 12 (past the eight inline dims, where the shape and the DLPack
        /// axes spill), dense blobs and their `b.T` (strided), a row of a
        /// larger blob, either struct: the tensor's shape is the blob's
        /// dims, its strides are row-major (dense or empty) or the
        /// parent's reversed (a strided `b.T`, on axes longer than 1),
        /// walking them over the
        /// data reads the blob's values in order, and the import of the
        /// tensor gives those values back on the same memory.
        #[test]
        fn the_box_describes_the_blob_at_any_rank(
            dims in proptest::collection::vec(proptest::prop_oneof![3 => 1usize..3, 1 => 0usize..4], 0..13),
            transposed in proptest::bool::ANY,
            row in proptest::bool::ANY,
            legacy in proptest::bool::ANY,
        ) {
            use crate::Index;
            let e = Engine::cpu();
            let whole: Vec<usize> = std::iter::once(2).chain(dims.iter().copied()).collect();
            let count: usize = whole.iter().product();
            let values: Vec<f32> = (0..count).map(|i| i as f32).collect();
            let parent = Blob::from_slice(&e, &whole, &values).unwrap();
            let dense = if row { parent.index(&[Index::At(1)]).unwrap() } else { Blob::from_slice(&e, &dims, &values[..count / 2]).unwrap() };
            let b = if transposed { dense.reversed_view().unwrap() } else { dense.clone() };
            let want = b.copy().unwrap().to_vec::<f32>().unwrap();
            let rank = b.dims().len();
            let row_major = |d: &[usize]| {
                let mut s = vec![1i64; d.len()];
                for i in (0..d.len().saturating_sub(1)).rev() {
                    s[i] = s[i + 1] * d[i + 1].max(1) as i64;
                }
                s
            };
            // Dense and empty blobs export row-major strides of their own
            // dims; `b.T` of a strided kind, the parent's reversed.
            let oracle: Vec<i64> = if b.is_dense() || want.is_empty() {
                row_major(&b.dims())
            } else {
                row_major(&dims).into_iter().rev().collect()
            };
            // SAFETY: each tensor is a live export, read within its shape
            // and strides, then handed to the import (which takes it) once.
            unsafe {
                let t = if legacy {
                    let m = b.to_dlpack_legacy().unwrap();
                    (m.as_ptr() as *mut DLManagedTensorVersioned, m.as_ref().dl_tensor)
                } else {
                    let m = b.to_dlpack(0).unwrap();
                    (m.as_ptr(), m.as_ref().dl_tensor)
                };
                let (ptr, tensor) = t;
                proptest::prop_assert_eq!(tensor.ndim as usize, rank);
                let shape = std::slice::from_raw_parts(tensor.shape, rank);
                let strides = std::slice::from_raw_parts(tensor.strides, rank);
                proptest::prop_assert_eq!(shape.iter().map(|&d| d as usize).collect::<Vec<_>>(), b.dims());
                for (i, (&s, &d)) in strides.iter().zip(shape).enumerate() {
                    proptest::prop_assert!(d <= 1 || s == oracle[i], "axis {} stride {} want {}", i, s, oracle[i]);
                }
                if !want.is_empty() {
                    let data = (tensor.data as *const u8).add(tensor.byte_offset as usize) as *const f32;
                    let mut idx = vec![0i64; rank];
                    for &w in &want {
                        let at: i64 = idx.iter().zip(strides).map(|(&i, &s)| i * s).sum();
                        proptest::prop_assert_eq!(*data.offset(at as isize), w);
                        for k in (0..rank).rev() {
                            idx[k] += 1;
                            if idx[k] < shape[k] { break; }
                            idx[k] = 0;
                        }
                    }
                }
                let back = if legacy {
                    Blob::from_dlpack_legacy(&e, ptr as *mut DLManagedTensor, None)
                } else {
                    Blob::from_dlpack(&e, ptr, None)
                }
                .unwrap();
                proptest::prop_assert_eq!(back.dims(), b.dims());
                proptest::prop_assert_eq!(back.to_vec::<f32>().unwrap(), want.clone());
                // Dense exports come back on the same memory; strided ones
                // (`b.T` of more than one long axis) are copied.
                proptest::prop_assert_eq!(back.shares_memory(&b), !want.is_empty() && b.is_dense());
            }
        }
    }

    #[test]
    fn copy_rule_of_the_array_api() {
        use crate::layout::{BlockingDesc, TensorDesc};
        let e = Engine::cpu();
        let b = Blob::from_slice(&e, &[2, 2], &[1f32, 2., 3., 4.]).unwrap();
        // SAFETY (all blocks below): live exports, read within their
        // shape and freed once.
        let flags_and_shared = |t: NonNull<DLManagedTensorVersioned>, src: &Blob| unsafe {
            let r = (t.as_ref().flags, std::ptr::eq(t.as_ref().dl_tensor.data as *const u8, src.export().unwrap().as_ptr()));
            delete_tensor(t.as_ptr());
            r
        };
        // None and Some(false) share; Some(true) copies and says so.
        assert_eq!(flags_and_shared(b.to_dlpack_copy(None).unwrap(), &b), (0, true));
        assert_eq!(flags_and_shared(b.to_dlpack_copy(Some(false)).unwrap(), &b), (0, true));
        assert_eq!(flags_and_shared(b.to_dlpack_copy(Some(true)).unwrap(), &b), (DLPACK_FLAG_BITMASK_IS_COPIED, false));
        // A blocked layout: None copies (dense, flagged), Some(false) refuses.
        let desc = TensorDesc::with_blocking(DType::F32, &[1, 8, 2, 2], BlockingDesc::new(&[1, 1, 2, 2, 8], &[0, 1, 2, 3, 1]).unwrap()).unwrap();
        let blocked = Blob::with_desc(&e, &desc).unwrap();
        blocked.fill(5.0).unwrap();
        let t = blocked.to_dlpack_copy(None).unwrap();
        unsafe {
            let tr = t.as_ref();
            assert_eq!((tr.flags, tr.dl_tensor.ndim), (DLPACK_FLAG_BITMASK_IS_COPIED, 4));
            assert_eq!(std::slice::from_raw_parts(tr.dl_tensor.strides, 4), [32, 4, 2, 1]);
            assert!(std::slice::from_raw_parts(tr.dl_tensor.data as *const f32, 32).iter().all(|&v| v == 5.0));
            delete_tensor(t.as_ptr());
        }
        assert_eq!(blocked.to_dlpack_copy(Some(false)).unwrap_err().code(), 13);
        // A read-only blob shares read-only; its copy is writable.
        let mem = [1f32; 4];
        let ro = unsafe { Blob::wrap_read_only(&e, DType::F32, Shape::new(&[4]).unwrap(), NonNull::from(&mem).cast(), 16, None) }.unwrap();
        let t = ro.to_dlpack_copy(None).unwrap();
        unsafe {
            assert_eq!(t.as_ref().flags, DLPACK_FLAG_BITMASK_READ_ONLY);
            delete_tensor(t.as_ptr());
        }
        let t = ro.to_dlpack_copy(Some(true)).unwrap();
        unsafe {
            assert_eq!(t.as_ref().flags, DLPACK_FLAG_BITMASK_IS_COPIED);
            delete_tensor(t.as_ptr());
        }
        // The legacy struct: the same rule; a shared read-only blob is refused.
        assert_eq!(ro.to_dlpack_legacy_copy(None).unwrap_err().code(), crate::Error::ReadOnly(String::new()).code());
        assert_eq!(blocked.to_dlpack_legacy_copy(Some(false)).unwrap_err().code(), 13);
        for (src, copy, shared) in [(&b, None, true), (&b, Some(false), true), (&b, Some(true), false), (&ro, Some(true), false), (&blocked, None, false)] {
            let t = src.to_dlpack_legacy_copy(copy).unwrap();
            unsafe {
                let data = t.as_ref().dl_tensor.data as *const f32;
                if !src.is_blocked() {
                    assert_eq!(std::ptr::eq(data as *const u8, src.export().unwrap().as_ptr()), shared);
                }
                assert_eq!(*data, if std::ptr::eq(src, &blocked) { 5.0 } else { 1.0 });
                delete_legacy_tensor(t.as_ptr());
            }
        }
    }

    #[test]
    fn imports_own_only_on_success() {
        let e = Engine::cpu();
        let mut data = [1f32, 2., 3., 4.];
        let mut shape = [4i64];
        let mut m = DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(count),
            flags: DLPACK_FLAG_BITMASK_READ_ONLY,
            dl_tensor: DLTensor {
                data: data.as_mut_ptr() as *mut c_void,
                device: DLDevice { device_type: DL_CPU, device_id: 0 },
                ndim: 1,
                dtype: dl_dtype(DType::F32),
                shape: shape.as_mut_ptr(),
                strides: std::ptr::null_mut(),
                byte_offset: 0,
            },
        };
        let before = DELETED.load(Ordering::SeqCst);
        m.version.major = 2;
        // SAFETY: a live tensor over `data`, which outlives every blob here.
        assert_eq!(unsafe { Blob::from_dlpack(&e, &mut m, None) }.unwrap_err().code(), 13);
        m.version.major = 1;
        m.dl_tensor.dtype.bits = 24;
        assert_eq!(unsafe { Blob::from_dlpack(&e, &mut m, None) }.unwrap_err().code(), 5);
        m.dl_tensor.dtype.bits = 32;
        // SAFETY: the tensor's shape points at `shape`, alive here.
        unsafe { *m.dl_tensor.shape = -1 };
        assert_eq!(unsafe { Blob::from_dlpack(&e, &mut m, None) }.unwrap_err().code(), 4);
        // SAFETY: as above.
        unsafe { *m.dl_tensor.shape = 4 };
        // Misaligned shape, strides or tensor (a producer's bad cast):
        // refused before anything is read through them.
        let mut words = [4u64; 3];
        let odd = (words.as_mut_ptr() as *mut u8).wrapping_add(1) as *mut i64;
        m.dl_tensor.shape = odd;
        assert_eq!(unsafe { Blob::from_dlpack(&e, &mut m, None) }.unwrap_err().code(), 3);
        m.dl_tensor.shape = shape.as_mut_ptr();
        m.dl_tensor.strides = odd;
        assert_eq!(unsafe { Blob::from_dlpack(&e, &mut m, None) }.unwrap_err().code(), 3);
        m.dl_tensor.strides = std::ptr::null_mut();
        let odd_tensor = (words.as_mut_ptr() as *mut u8).wrapping_add(4) as *mut DLManagedTensorVersioned;
        assert_eq!(unsafe { Blob::from_dlpack(&e, odd_tensor, None) }.unwrap_err().code(), 3);
        assert_eq!(unsafe { Blob::from_dlpack_legacy(&e, odd_tensor as *mut DLManagedTensor, None) }.unwrap_err().code(), 3);
        assert_eq!(DELETED.load(Ordering::SeqCst), before); // nothing taken
        let b = unsafe { Blob::from_dlpack(&e, &mut m, None) }.unwrap();
        assert!(!b.is_writable());
        let w = b.window(1).unwrap();
        drop(b);
        assert_eq!(DELETED.load(Ordering::SeqCst), before);
        drop(w);
        assert_eq!(DELETED.load(Ordering::SeqCst), before + 1);
        // copy = Some(true): copied, deleter at once, writable.
        let c = unsafe { Blob::from_dlpack(&e, &mut m, Some(true)) }.unwrap();
        assert_eq!(DELETED.load(Ordering::SeqCst), before + 2);
        assert!(c.is_writable());
        assert_eq!(c.to_vec::<f32>().unwrap(), data);
    }

    /// A producer whose tensor, shape, strides and data share one box,
    /// freed by its deleter.
    #[repr(C)]
    struct Boxed {
        m: DLManagedTensorVersioned,
        shape: [i64; 2],
        strides: [i64; 2],
        data: [f32; 6],
    }

    unsafe extern "C" fn free_boxed(m: *mut DLManagedTensorVersioned) {
        DELETED.fetch_add(1, Ordering::SeqCst);
        // SAFETY: `m` is the start of a leaked `Boxed` (repr(C), first field), freed once.
        drop(unsafe { Box::from_raw(m as *mut Boxed) });
    }

    fn boxed(strides: [i64; 2]) -> *mut DLManagedTensorVersioned {
        let p = Box::into_raw(Box::new(Boxed {
            m: DLManagedTensorVersioned {
                version: DLPackVersion { major: 1, minor: 1 },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(free_boxed),
                flags: 0,
                dl_tensor: DLTensor {
                    data: std::ptr::null_mut(),
                    device: DLDevice { device_type: DL_CPU, device_id: 0 },
                    ndim: 2,
                    dtype: dl_dtype(DType::F32),
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
            },
            shape: [2, 3],
            strides,
            data: [0., 1., 2., 3., 4., 5.],
        }));
        // SAFETY: a fresh leaked box; every pointer is derived from it.
        unsafe {
            (*p).m.dl_tensor.data = std::ptr::addr_of_mut!((*p).data).cast();
            (*p).m.dl_tensor.shape = std::ptr::addr_of_mut!((*p).shape).cast();
            (*p).m.dl_tensor.strides = std::ptr::addr_of_mut!((*p).strides).cast();
            p.cast()
        }
    }

    /// The deleter may free the managed tensor itself while the import is
    /// still running (a copied import runs it at once): nothing the import
    /// holds may point into it then. Under Miri this failed while `import`
    /// took the tensor's header by reference.
    #[test]
    fn deleters_that_free_the_tensor_during_the_import() {
        let e = Engine::cpu();
        let before = DELETED.load(Ordering::SeqCst);
        // Column-major: copied, deleted at once.
        // SAFETY: a live tensor, handed over.
        let c = unsafe { Blob::from_dlpack(&e, boxed([1, 2]), None) }.unwrap();
        assert_eq!(DELETED.load(Ordering::SeqCst), before + 1);
        assert_eq!(c.to_vec::<f32>().unwrap(), [0., 2., 4., 1., 3., 5.]);
        // Row-major but a copy asked for: the same.
        let c = unsafe { Blob::from_dlpack(&e, boxed([3, 1]), Some(true)) }.unwrap();
        assert_eq!(DELETED.load(Ordering::SeqCst), before + 2);
        assert_eq!(c.to_vec::<f32>().unwrap(), [0., 1., 2., 3., 4., 5.]);
        // Shared: deleted with the last user.
        let s = unsafe { Blob::from_dlpack(&e, boxed([3, 1]), None) }.unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), [0., 1., 2., 3., 4., 5.]);
        drop(s);
        assert_eq!(DELETED.load(Ordering::SeqCst), before + 3);
        // Legacy tensors: blobcore's own export comes back (its box is
        // freed during the import), and a copied one.
        let b = Blob::from_slice(&e, &[2, 3], &[0f32, 1., 2., 3., 4., 5.]).unwrap();
        let t = b.to_dlpack_legacy().unwrap();
        let back = unsafe { Blob::from_dlpack_legacy(&e, t.as_ptr(), None) }.unwrap();
        let t = b.to_dlpack_legacy().unwrap();
        let copied = unsafe { Blob::from_dlpack_legacy(&e, t.as_ptr(), Some(true)) }.unwrap();
        b.fill(9.0).unwrap();
        assert_eq!(back.to_vec::<f32>().unwrap(), [9.0; 6]);
        assert_eq!(copied.to_vec::<f32>().unwrap(), [0., 1., 2., 3., 4., 5.]);
    }
}
