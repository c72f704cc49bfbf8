//! Exports: raw, pinned views of a blob's memory for zero-copy consumers
//! (Python's buffer protocol and NumPy, DLPack, C callers).
//!
//! An [`Export`] holds a reference to the blob's storage, so
//! - the memory stays valid for as long as the export lives, even after
//!   the blob, its views and its handles are gone, and
//! - reallocating that memory (a growing reshape, `share_data`) is
//!   `Error::Busy` while the export lives, as `bytearray` refuses to resize
//!   while a `memoryview` of it exists.
//!
//! Exports are not entries of the borrow table: like NeoML's raw buffers
//! and NumPy's own arrays they may be read and written at any time, and
//! ordering those accesses against operations on other threads is the
//! caller's business (the Python binding holds the GIL while it touches
//! an export).

use crate::blob::{non_negative, Blob};
use crate::dtype::DType;
use crate::error::{err, Result};
use crate::shape::Shape;
use crate::storage::{Pin, Storage};
use smallvec::SmallVec;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Arc;

/// `DLDeviceType::kDLCPU`: where host exports are ([`Export::device`]).
pub const DL_CPU: i32 = 1;
/// `DLDeviceType::kDLCUDA` (CUDA device memory).
pub const DL_CUDA: i32 = 2;
/// `DLDeviceType::kDLCUDAHost` (pinned host memory: readable by the CPU).
pub const DL_CUDA_HOST: i32 = 3;

/// A pinned, dense, row-major view of some of a blob's elements.
pub struct Export {
    /// Keeps the storage alive and marks its host memory as shared, so GPU
    /// operations keep it current.
    _pin: Pin,
    ptr: NonNull<u8>,
    dtype: DType,
    /// The blob's own shape for whole-blob exports (a clone: inline up to
    /// eight axes, so exporting a small blob allocates nothing here, and
    /// the DLPack import of blobcore's own export reuses it unchecked).
    shape: Shape,
    /// Byte strides; `None` for dense row-major.
    strides: Option<SmallVec<[isize; 8]>>,
    /// Bytes from `ptr` to the end of the last element.
    span: usize,
    /// False for exports of read-only blobs: consumers must not write.
    writable: bool,
    /// Where the memory is, as a DLPack device: `(1, 0)` for host memory,
    /// `(2, ordinal)` for a CUDA engine's device copy ([`Blob::export_cuda`]).
    device: (i32, i32),
}

// SAFETY: the pointer is into memory kept alive by the storage Arc, which
// is Send + Sync; an Export is only a description of that memory.
unsafe impl Send for Export {}
// SAFETY: as above; Export offers no interior mutability of its own.
unsafe impl Sync for Export {}

impl Export {
    /// Address of the first element. Valid for [`Export::byte_len`] bytes
    /// for as long as this export lives — in host memory, or for a device
    /// export ([`Export::device`] not `(1, 0)`) in the device's memory.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The DLPack device of the memory: `(1, 0)` (kDLCPU) for host
    /// memory, `(2, ordinal)` (kDLCUDA) for a CUDA device export.
    pub fn device(&self) -> (i32, i32) {
        self.device
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The dims of the exported elements (row-major, dense).
    pub fn shape(&self) -> &[usize] {
        self.shape.dims()
    }

    /// Number of exported elements.
    pub fn count(&self) -> usize {
        self.shape.count()
    }

    /// Size of the exported elements in bytes.
    pub fn byte_len(&self) -> usize {
        self.count() * self.dtype.size()
    }

    /// Bytes from the first element to the end of the last (equal to
    /// [`Export::byte_len`] for dense exports).
    pub fn byte_span(&self) -> usize {
        self.span
    }

    /// False when the blob is read-only: export it read-only (NumPy's
    /// `writeable`, DLPack's READ_ONLY flag).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// True for dense row-major exports.
    pub fn is_contiguous(&self) -> bool {
        self.strides.is_none()
    }

    /// Strides in bytes (what NumPy and the buffer protocol use): row-major
    /// for dense exports, the layout's strides for regions and strided layouts.
    pub fn byte_strides(&self) -> SmallVec<[isize; 8]> {
        let mut out = SmallVec::new();
        self.byte_strides_into(&mut out);
        out
    }

    /// [`Export::byte_strides`] written into `out` (cleared first), for a
    /// consumer that keeps them in place (the buffer protocol's holder).
    pub fn byte_strides_into(&self, out: &mut SmallVec<[isize; 8]>) {
        out.clear();
        match &self.strides {
            Some(s) => out.extend_from_slice(s),
            None => {
                out.resize(self.shape.rank(), 0);
                crate::layout::fill_row_major_strides(self.shape.dims(), self.dtype.size(), out);
            }
        }
    }

    /// DLPack's shape and strides (strides in elements: row-major for
    /// dense exports, the layout's strides otherwise), each written into
    /// its slot in one go: for rank <= 8 from two fixed arrays filled in
    /// one pass, not by `SmallVec`'s `extend` and `resize` (about 15% of a
    /// DLPack round trip's time in session 85).
    pub(crate) fn write_dl_axes(&self, shape: &mut MaybeUninit<SmallVec<[i64; 8]>>, strides: &mut MaybeUninit<SmallVec<[i64; 8]>>) {
        const N: usize = 8;
        let dims = self.shape.dims();
        let n = dims.len();
        let es = self.dtype.size() as isize;
        if n > N {
            shape.write(dims.iter().map(|&d| d as i64).collect());
            strides.write(match &self.strides {
                Some(s) => s.iter().map(|&b| (b / es) as i64).collect(),
                None => crate::axes::axes_filled(n, |out| crate::layout::fill_row_major_strides(dims, 1, out)),
            });
            return;
        }
        // Written element by element into the slots' inline buffers: two
        // arrays filled on the stack and then moved in were read back
        // wider than they were written (store-forwarding stalls).
        let (shape, strides) = (shape.write(SmallVec::new()), strides.write(SmallVec::new()));
        let (d, st) = (shape.as_mut_ptr(), strides.as_mut_ptr());
        // SAFETY: both vectors are empty and inline, with room for N >= n
        // elements: each of the first n is written once, then the lengths
        // are set to n.
        unsafe {
            match &self.strides {
                Some(s) => {
                    for i in 0..n {
                        d.add(i).write(dims[i] as i64);
                        st.add(i).write((s[i] / es) as i64);
                    }
                }
                None => {
                    // As `fill_row_major_strides` with a unit of one element.
                    let mut acc = 1i64;
                    for i in (0..n).rev() {
                        d.add(i).write(dims[i] as i64);
                        st.add(i).write(acc);
                        acc = acc.saturating_mul(dims[i].max(1) as i64);
                    }
                }
            }
            shape.set_len(n);
            strides.set_len(n);
        }
    }

    /// The storage this export pins (the DLPack import of blobcore's own
    /// export shares it instead of wrapping the memory a second time).
    pub(crate) fn storage(&self) -> &Arc<Storage> {
        self._pin.storage()
    }

    /// Ends the export at `p` in place and hands its reference to the
    /// storage, its shape and dtype on (the DLPack import of blobcore's
    /// own export keeps them for the new blob: no reference count to touch
    /// twice, no copy of the rest of the export).
    ///
    /// # Safety
    /// `p` points to a live export the caller owns; it is moved out of
    /// (ended) here and must not be used or dropped afterwards.
    pub(crate) unsafe fn take_parts(p: *mut Export) -> (Arc<Storage>, Shape, DType) {
        // SAFETY: the caller's promise. Every field is named, so a field
        // added later must be placed here too; only those used are read.
        let Export { _pin, shape, strides, dtype, ptr: _, span: _, writable: _, device: _ } = unsafe { std::ptr::read(p) };
        drop(strides);
        (_pin.into_storage(), shape, dtype)
    }
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Export").field("dtype", &self.dtype).field("shape", &self.shape).finish()
    }
}

impl Blob {
    /// Exports all elements, shaped like the blob. The host copy becomes
    /// current and the head moves to the host (the consumer may write).
    /// Planar non-dense layouts (regions, NHWC ...) export their strides;
    /// blocked layouts cannot be described by strides and are `Unsupported`.
    pub fn export(&self) -> Result<Export> {
        self.export_for(true)
    }

    /// As [`Blob::export`]; with `write` false the export is read-only (the
    /// host copy is made current but the head does not move to the host,
    /// so a GPU copy stays valid). A read-only blob always exports
    /// read-only.
    pub fn export_for(&self, write: bool) -> Result<Export> {
        self.export_on(write, false)
    }

    /// [`Blob::export_for`] written into `slot` (DLPack's box) rather
    /// than handed back through memory and copied in (see `exported` in
    /// `dlpack.rs`).
    ///
    /// # Safety
    /// `slot` is valid for a write of an `Export`. On error nothing is
    /// written.
    pub(crate) unsafe fn export_host_into(&self, write: bool, slot: *mut Export) -> Result<()> {
        let st = self.state();
        if !st.is_dense() && st.shape.count() > 0 {
            drop(st);
            let e = self.export_on(write, false)?;
            // SAFETY: the caller's promise.
            unsafe { slot.write(e) };
            return Ok(());
        }
        // A dense (or empty) blob, the common case: each field is written
        // into the slot as it is worked out, the shape copied straight from
        // the state (a clone moved in afterwards went through the stack in
        // pieces the copy then read back across: store-forwarding stalls).
        let (storage, offset) = (Arc::clone(&st.storage), st.offset);
        // SAFETY: the caller's promise: `slot` is valid for writes; the
        // shape is written once here and dropped again on every error
        // below, where the slot is left as it was (nothing written).
        let shape = unsafe {
            let shape = std::ptr::addr_of_mut!((*slot).shape);
            st.shape.clone_to(shape);
            &*shape
        };
        drop(st);
        let Region { pin, ptr, device, len, writable } = match self.pin_region(storage, offset, shape.count(), write, write, false) {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: the shape written above, dropped once.
                unsafe { std::ptr::drop_in_place(std::ptr::addr_of_mut!((*slot).shape)) };
                return Err(e);
            }
        };
        // SAFETY: the caller's promise; the other fields, each written once.
        unsafe {
            std::ptr::addr_of_mut!((*slot)._pin).write(pin);
            std::ptr::addr_of_mut!((*slot).ptr).write(ptr);
            std::ptr::addr_of_mut!((*slot).dtype).write(self.dtype());
            std::ptr::addr_of_mut!((*slot).strides).write(None);
            std::ptr::addr_of_mut!((*slot).span).write(len);
            std::ptr::addr_of_mut!((*slot).writable).write(writable);
            std::ptr::addr_of_mut!((*slot).device).write(device);
        }
        Ok(())
    }

    /// Exports the device copy of a blob on a CUDA engine (for DLPack
    /// `kDLCUDA`): the device copy is made current, and while a writable
    /// export lives it is the reference (host reads fetch it, host writes
    /// are copied to it when they end). Not a CUDA blob: `Unsupported`.
    /// The memory may still be written by queued kernels: synchronise the
    /// engine (or use the DLPack `stream` argument) before a consumer
    /// reads it.
    pub fn export_cuda(&self, write: bool) -> Result<Export> {
        if !self.engine().is_cuda() {
            return Err(err!(Unsupported, "only blobs on a CUDA engine have device memory to export (this one is on the {} engine)", self.engine().name()));
        }
        self.export_on(write, true)
    }

    // Inlined so that host exports (`device` false) fold the device
    // branches away: the split into host and device paths had cost host
    // exports 10-15 ns (core `export` 50 -> 64 ns, profiles).
    #[inline(always)]
    fn export_on(&self, write: bool, device: bool) -> Result<Export> {
        // One look at the state: what the export needs is read under a
        // single read lock (no clone of the layout), then the storage is
        // pinned without it.
        let st = self.state();
        // A blob with no elements exports as a dense empty array: its
        // strides and origin are checked against no memory.
        if st.is_dense() || st.shape.count() == 0 {
            let (storage, offset) = (Arc::clone(&st.storage), st.offset);
            let shape = st.shape.clone();
            drop(st);
            return self.export_region(storage, offset, shape, write, write, device);
        }
        let Some((strides, base)) = st.planar_strides() else {
            let layout = st.desc().map_or(crate::layout::Layout::Blocked, |d| d.layout());
            return Err(err!(Unsupported, "a blocked layout ({layout}) cannot be exported as a strided array; reorder it into a dense blob first"));
        };
        let es = self.dtype().size();
        let span = st.span()?.saturating_sub(base).checked_mul(es);
        let start = st.offset.checked_add(base).and_then(|e| e.checked_mul(es));
        let dims = st.shape.clone();
        let storage = Arc::clone(&st.storage);
        drop(st);
        let fits = |&(start, span): &(usize, usize)| start.checked_add(span).is_some_and(|end| end <= storage.len());
        let Some((start, span)) = start.zip(span).filter(fits) else {
            return Err(err!(Internal, "export exceeds storage of {} bytes", storage.len()));
        };
        // Byte strides. An axis of one element is never stepped along, so
        // its stride may be any value (a shared handle's, say, near 2^63):
        // where it would overflow in bytes it is given as 0, which
        // describes the same elements. On longer axes the span checked
        // above bounds every stride, so the product fits.
        let byte_strides = strides
            .iter()
            .zip(dims.dims())
            .map(|(&s, &d)| match s.checked_mul(es as isize) {
                Some(b) => Ok(b),
                None if d <= 1 => Ok(0),
                None => Err(err!(Internal, "a stride of {s} elements overflows in bytes")),
            })
            .collect::<Result<_>>()?;
        let writable = write && storage.is_writable();
        let (pin, ptr, at) = pin_at(storage, writable, device, start)?;
        Ok(Export { _pin: pin, ptr, dtype: self.dtype(), shape: dims, strides: Some(byte_strides), span, writable, device: at })
    }

    /// Exports elements `[pos, pos + size)` of the blob's memory in memory
    /// order as a 1-D run: its elements for a dense blob, its raw span
    /// (padding included) for a blob with a layout (see [`crate::raw`]).
    pub fn export_range(&self, pos: i64, size: i64) -> Result<Export> {
        self.export_range_for(pos, size, true)
    }

    /// As [`Blob::export_range`]; with `write` false the holder only reads
    /// (the head does not move to the host, as [`Blob::export_for`]).
    pub fn export_range_for(&self, pos: i64, size: i64, write: bool) -> Result<Export> {
        self.export_range_pinned(pos, size, write, write)
    }

    /// The export behind a NeoML buffer (`GetBuffer(pos, size, exchange)`
    /// for the C and Python faces): the memory is writable unless the blob
    /// is read-only, whatever `exchange` says. `exchange` = the holder
    /// reads current data first: the pin is then a reader's, so a GPU
    /// blob's head may stay Synced and the holder's writes land when the
    /// buffer is released with exchange ([`Blob::release_buffer`]);
    /// without it the holder overwrites, and the head moves to the host now.
    pub fn export_buffer(&self, pos: i64, size: i64, exchange: bool) -> Result<Export> {
        self.export_range_pinned(pos, size, true, !exchange)
    }

    fn export_range_pinned(&self, pos: i64, size: i64, writable: bool, write_pin: bool) -> Result<Export> {
        let pos = non_negative(pos, "export position")?;
        let size = non_negative(size, "export size")?;
        let (storage, offset, len) = {
            let st = self.state();
            let (offset, len) = crate::raw::span_of(&st)?;
            (Arc::clone(&st.storage), offset, len)
        };
        if pos.checked_add(size).is_none_or(|end| end > len) {
            return Err(err!(OutOfRange, "export [{pos}, {pos}+{size}) exceeds the blob's {len} elements"));
        }
        self.export_region(storage, offset + pos, Shape::new(&[size])?, writable, write_pin, false)
    }

    #[inline(always)]
    fn export_region(&self, storage: Arc<Storage>, offset: usize, shape: Shape, writable: bool, write_pin: bool, device: bool) -> Result<Export> {
        let Region { pin, ptr, device: at, len, writable } = self.pin_region(storage, offset, shape.count(), writable, write_pin, device)?;
        Ok(Export { _pin: pin, ptr, dtype: self.dtype(), shape, strides: None, span: len, writable, device: at })
    }

    /// The pinned memory of `count` dense elements from element `offset`
    /// of `storage` (an export's region, checked to lie inside it):
    /// writable when asked and the storage is, the pin a writer's when
    /// `write_pin` too.
    #[inline(always)]
    fn pin_region(&self, storage: Arc<Storage>, offset: usize, count: usize, writable: bool, write_pin: bool, device: bool) -> Result<Region> {
        let es = self.dtype().size();
        let (start, len) = (offset * es, count * es);
        if start + len > storage.len() {
            return Err(err!(Internal, "export [{start}, {}) exceeds storage of {} bytes", start + len, storage.len()));
        }
        let writable = writable && storage.is_writable();
        let (pin, ptr, device) = pin_at(storage, write_pin && writable, device, start)?;
        Ok(Region { pin, ptr, device, len, writable })
    }
}

/// What [`Blob::pin_region`] gives an export: its pin, the address of its
/// first element, its DLPack device, its length in bytes, and whether the
/// holder may write.
struct Region {
    pin: Pin,
    ptr: NonNull<u8>,
    device: (i32, i32),
    len: usize,
    writable: bool,
}

/// Pins the host (or, with `device`, the CUDA device) copy of `storage`
/// and returns the pin, the address of byte `start` (checked by the
/// caller to lie inside the storage) and the DLPack device it is on.
#[inline(always)]
fn pin_at(storage: Arc<Storage>, write: bool, device: bool, start: usize) -> Result<(crate::storage::Pin, NonNull<u8>, (i32, i32))> {
    if device {
        return pin_device_at(&storage, write, start);
    }
    let (pin, base) = storage.pin_host(write)?;
    // SAFETY: start + len <= storage.len() (checked by the caller), so the
    // offset stays inside the allocation.
    let ptr = unsafe { NonNull::new_unchecked(base.as_ptr().add(start)) };
    Ok((pin, ptr, (DL_CPU, 0)))
}

/// [`pin_at`] of a CUDA engine's device copy.
#[inline(never)]
fn pin_device_at(storage: &Arc<Storage>, write: bool, start: usize) -> Result<(crate::storage::Pin, NonNull<u8>, (i32, i32))> {
    if let Some(g) = storage.gpu() {
        g.usable()?;
    }
    let (pin, buf) = storage.pin_device(write)?;
    let mem = buf.cuda().ok_or_else(|| err!(Internal, "a CUDA export of a storage without CUDA memory"))?;
    let ordinal = storage.gpu().and_then(|g| g.cuda()).map_or(0, |c| c.ordinal()) as i32;
    let addr = (mem.ptr() as usize).checked_add(start).and_then(|a| NonNull::new(a as *mut u8));
    let ptr = addr.ok_or_else(|| err!(Internal, "a null device address"))?;
    Ok((pin, ptr, (DL_CUDA, ordinal)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Engine;

    /// Blobs with no elements whose blocking puts its (absent) first
    /// element far away, past the memory or past `isize`: offsets and
    /// padding of an empty blocking reach no memory, and every operation
    /// takes such a blob as empty (these once gave an Internal error on
    /// export, or overflowed).
    #[test]
    fn empty_blobs_with_far_origins_are_empty() {
        use crate::layout::{BlockingDesc, TensorDesc};
        let e = Engine::cpu();
        let cases = [
            (2, BlockingDesc::with_strides(&[2, 0], &[0, 1], 0, &[1 << 62, 0], &[4, 1]).unwrap()),
            (3, BlockingDesc::with_strides(&[3, 0], &[0, 1], usize::MAX, &[usize::MAX, 7], &[1 << 40, 1]).unwrap()),
            (1, BlockingDesc::with_strides(&[1, 0], &[0, 1], 1 << 62, &[1 << 61, 1 << 61], &[1 << 62, 1 << 62]).unwrap()),
        ];
        for (n, b) in cases {
            let d = TensorDesc::with_blocking(DType::F32, &[n, 0], b).unwrap();
            let x = Blob::with_desc(&e, &d).unwrap();
            assert_eq!(x.count(), 0);
            let ex = x.export().unwrap();
            assert_eq!((ex.shape(), ex.byte_span()), (&[n, 0][..], 0));
            drop(ex);
            let dense = Blob::tensor(&e, DType::F32, &[n, 0]).unwrap();
            x.copy_from(&dense).unwrap();
            dense.copy_from(&x).unwrap();
            x.reorder_from(&dense).unwrap();
            dense.reorder_from(&x).unwrap();
            assert_eq!(x.copy().unwrap().count(), 0);
            let t = x.transposed(0, 1).unwrap();
            assert_eq!(t.export().unwrap().byte_span(), 0);
            let m = x.to_dlpack(0).unwrap();
            // SAFETY: a tensor blobcore just exported, released once by its own deleter.
            unsafe {
                let deleter = m.as_ref().deleter.unwrap();
                deleter(m.as_ptr());
            }
        }
    }

    #[test]
    fn one_element_axes_may_have_strides_past_bytes() {
        use crate::layout::{BlockingDesc, TensorDesc};
        // [1, 2, 3] with the one-element axis strided 2^62 elements apart
        // (more than isize holds in bytes): the stride is never stepped
        // along, so every face describes the same six elements.
        let e = Engine::cpu();
        let b = BlockingDesc::with_strides(&[1, 2, 3], &[0, 1, 2], 0, &[0, 0, 0], &[1 << 62, 3, 1]).unwrap();
        let d = TensorDesc::with_blocking(DType::F32, &[1, 2, 3], b).unwrap();
        let x = Blob::with_desc(&e, &d).unwrap();
        let want = [0f32, 1., 2., 3., 4., 5.];
        x.copy_from_slice(&want).unwrap();
        let ex = x.export().unwrap();
        assert_eq!((ex.shape(), &ex.byte_strides()[..], ex.byte_span()), (&[1, 2, 3][..], &[0, 12, 4][..], 24));
        drop(ex);
        assert_eq!(x.to_vec::<f32>().unwrap(), want);
        assert_eq!(x.copy().unwrap().to_vec::<f32>().unwrap(), want);
        let dense = Blob::tensor(&e, DType::F32, &[1, 2, 3]).unwrap();
        dense.reorder_from(&x).unwrap();
        assert_eq!(dense.to_vec::<f32>().unwrap(), want);
        let t = x.transposed(0, 1).unwrap();
        let ts = t.export().unwrap().byte_strides();
        assert_eq!((t.shape().dims(), ts[0], ts[2]), (&[2, 1, 3][..], 12, 4));
        assert_eq!(t.to_vec::<f32>().unwrap(), want);
        assert_eq!(x.index(&[crate::index::Index::At(0)]).unwrap().to_vec::<f32>().unwrap(), want);
        let m = x.to_dlpack(0).unwrap();
        // SAFETY: a tensor blobcore just exported, read and then released
        // once by its own deleter.
        unsafe {
            let t = &m.as_ref().dl_tensor;
            assert_eq!(std::slice::from_raw_parts(t.strides, 3), [0, 3, 1]);
            let deleter = m.as_ref().deleter.unwrap();
            deleter(m.as_ptr());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(74), ..Default::default() })]
        /// `byte_strides_into` (the buffer protocol's strides, written into
        /// a holder that may hold anything before) against the strides read
        /// off element addresses: dense blobs of rank 0-9 (past the inline
        /// eight), reversed, stepped and reversed-stepped views, four
        /// dtypes, `out` holding 0-11 stale entries (inline or spilled).
        #[test]
        fn byte_strides_into_are_the_element_addresses(
            dims in proptest::collection::vec(1usize..4, 0..=9),
            dtype in proptest::sample::select(vec![DType::U8, DType::I16, DType::F32, DType::F64]),
            view in 0usize..4,
            stale in 0usize..12,
        ) {
            use crate::index::Index;
            let b = Blob::tensor(&Engine::cpu(), dtype, &dims).unwrap();
            let step = |s: i64| Index::Range { start: None, stop: None, step: Some(s) };
            let v = match view {
                0 => b.clone(),
                1 => b.reversed_view().unwrap(),
                2 if !dims.is_empty() => b.index(&[step(2)]).unwrap(),
                3 if !dims.is_empty() => b.index(&[step(-1)]).unwrap(),
                _ => b.clone(),
            };
            let e = v.export().unwrap();
            let mut out: SmallVec<[isize; 8]> = std::iter::repeat_n(7, stale).collect();
            e.byte_strides_into(&mut out);
            let vd = v.shape().dims().to_vec();
            proptest::prop_assert_eq!(out.len(), vd.len());
            proptest::prop_assert_eq!(&out[..], &e.byte_strides()[..]);
            let at = |one: Option<usize>| -> isize {
                let key: Vec<Index> = (0..vd.len()).map(|a| Index::At(i64::from(Some(a) == one))).collect();
                v.index(&key).unwrap().export().unwrap().as_ptr() as isize
            };
            let origin = at(None);
            for (a, &d) in vd.iter().enumerate() {
                if d > 1 {
                    proptest::prop_assert_eq!(out[a], at(Some(a)) - origin, "axis {} of {:?}", a, vd);
                }
            }
        }
    }

    #[test]
    fn export_pins_memory_and_blocks_reallocation() {
        let b = Blob::tensor(&Engine::cpu(), DType::F32, &[2, 3]).unwrap();
        b.copy_from_slice(&[0f32, 1., 2., 3., 4., 5.]).unwrap();
        let e = b.export().unwrap();
        assert_eq!(e.shape(), &[2, 3]);
        assert_eq!(&e.byte_strides()[..], [12, 4]);
        assert_eq!(b.reshape(&[4, 4]).unwrap_err().code(), 8);
        b.reshape(&[3, 2]).unwrap(); // within capacity: same memory, allowed
        let r = b.export_range(4, 2).unwrap();
        // SAFETY: the export is live and covers 2 f32s.
        let tail = unsafe { std::slice::from_raw_parts(r.as_ptr() as *const f32, 2) };
        assert_eq!(tail, [4.0, 5.0]);
        assert_eq!(b.export_range(5, 2).unwrap_err().code(), 6);
        assert_eq!(b.export_range(-1, 1).unwrap_err().code(), 6);
        drop(b);
        // The memory outlives the blob.
        // SAFETY: e pins the storage.
        let all = unsafe { std::slice::from_raw_parts(e.as_ptr() as *const f32, 6) };
        assert_eq!(all[5], 5.0);
        drop((e, r));
    }
}
