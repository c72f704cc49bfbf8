//! `Blob`: shared storage + shape + view position, with a lazily created
//! diff companion (Caffe) and the NeoML constructors.
//!
//! A `Blob` value is a handle: cloning it (`Clone`) gives another handle to
//! the same blob, as NeoML's `CPtr` and Caffe's `shared_ptr` do. Use
//! [`Blob::copy`] for an independent deep copy and [`Blob::clone_zeroed`]
//! for NeoML's `GetClone`.
//!
//! Every method takes `&self`; blobs are `Send + Sync`. Data access from
//! safe Rust goes through guards that register borrows with the storage, so
//! two handles, windows or slices that alias the same memory can never
//! produce overlapping `&mut` slices: a conflicting access is `Error::Busy`.

use crate::dtype::{DType, Element};
use crate::engine::Engine;
use crate::error::{err, Error, Result};
use crate::layout::TensorDesc;
use crate::placement::Placement;
use crate::shape::{BlobDim, Shape};
use crate::storage::{Borrow, Head, ReleaseFn, Storage};
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// A tensor: dtype + shape over shared, lazily allocated storage.
pub struct Blob {
    /// Released by `Drop for Blob` (below), never by its own drop.
    pub(crate) inner: std::mem::ManuallyDrop<triomphe::Arc<BlobInner>>,
}

impl Clone for Blob {
    #[inline]
    fn clone(&self) -> Blob {
        Blob { inner: std::mem::ManuallyDrop::new(triomphe::Arc::clone(&self.inner)) }
    }
}

impl Drop for Blob {
    /// The last handle frees the record after one plain load of its count
    /// instead of a locked decrement: a temporary view or small blob is
    /// nearly always the only handle to its record when it goes.
    ///
    /// A view's parent is let go by this loop after the view's record,
    /// not from inside it: a chain of views (`x = x[:]` a million times)
    /// is freed in constant stack, where a recursive drop overflowed it.
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `inner` is taken once, here, and not touched after.
        let mut inner = unsafe { std::mem::ManuallyDrop::take(&mut self.inner) };
        loop {
            match triomphe::Arc::try_unique(inner) {
                Ok(mut unique) => {
                    let state = unique.state.get_mut().unwrap_or_else(|e| e.into_inner());
                    let parent = state.view.as_mut().and_then(|v| v.parent.take());
                    let raw = triomphe::Arc::into_raw(unique.shareable()) as *mut BlobInner;
                    // SAFETY: this was the record's only handle (`try_unique`),
                    // so nothing else can reach it: it is dropped in place
                    // once, then its allocation freed as a record of
                    // `ManuallyDrop<BlobInner>` (the same layout), which drops
                    // nothing.
                    unsafe {
                        std::ptr::drop_in_place(raw);
                        let husk = triomphe::Arc::from_raw(raw as *const std::mem::ManuallyDrop<BlobInner>);
                        if let Ok(husk) = triomphe::Arc::try_unique(husk) {
                            let _ = triomphe::UniqueArc::into_inner(husk);
                        }
                    }
                    match parent {
                        Some(p) => {
                            let mut p = std::mem::ManuallyDrop::new(p);
                            // SAFETY: `p` is never dropped (ManuallyDrop), so
                            // its handle is taken out exactly once, here.
                            inner = unsafe { std::mem::ManuallyDrop::take(&mut p.inner) };
                        }
                        None => return,
                    }
                }
                Err(shared) => return drop(shared),
            }
        }
    }
}

pub(crate) struct BlobInner {
    engine: Engine,
    dtype: DType,
    state: RwLock<State>,
    pub(crate) buffers: Mutex<Vec<HeldBuffer>>,
    diff: Mutex<Option<Blob>>,
    /// True for the diff companion of another blob: its shape follows the owner's.
    companion: bool,
    /// The shape's size in bytes, readable without the state lock (see [`Blob::is_small`]).
    bytes_hint: AtomicUsize,
    /// The shape's rank, read without the state lock ([`Blob::rank`]):
    /// stored under the state's write lock whenever the shape changes.
    rank: AtomicU8,
    /// Bumped on every write access to the state (see [`Blob::generation`]).
    generation: AtomicU64,
}

pub(crate) struct State {
    pub(crate) shape: Shape,
    pub(crate) storage: Arc<Storage>,
    /// Offset, in elements, into the storage of element 0 (dense data) or
    /// of the desc's base (from which its padding and offsets count; for
    /// views with reversed axes, the lowest element).
    pub(crate) offset: usize,
    /// Elements available from `offset` (Caffe's capacity).
    pub(crate) capacity: usize,
    pub(crate) view: Option<View>,
    /// Dense row-major (what every fast path assumes), or a non-default
    /// layout (blocked, strided, padded, a region). Read it through
    /// [`State::desc`] and the other accessors below.
    pub(crate) placement: Placement,
}

impl State {
    /// A blob's own dense row-major state (not a view) over `storage`
    /// from its start, `capacity` elements long.
    #[inline]
    pub(crate) fn dense(shape: Shape, storage: Arc<Storage>, capacity: usize) -> State {
        State { shape, storage, offset: 0, capacity, view: None, placement: Placement::Dense }
    }

    /// The desc of a non-default layout (None for dense row-major data);
    /// a strided view's is built on first use.
    #[inline]
    pub(crate) fn desc(&self) -> Option<&TensorDesc> {
        self.placement.desc(self.shape.dims())
    }

    /// True for dense row-major data.
    #[inline]
    pub(crate) fn is_dense(&self) -> bool {
        self.placement.is_dense()
    }

    /// The desc of a blocked layout (no per-dim strides describe it).
    #[inline]
    pub(crate) fn blocked(&self) -> Option<&TensorDesc> {
        self.placement.blocked()
    }

    /// Elements of memory from the base that the data reaches.
    #[inline]
    pub(crate) fn span(&self) -> Result<usize> {
        self.placement.span(self.shape.dims())
    }

    /// The element strides of the logical dims and element 0's offset
    /// from the base; None for blocked layouts.
    #[inline]
    pub(crate) fn planar_strides(&self) -> Option<(crate::axes::Axes<isize>, usize)> {
        self.placement.planar_strides(self.shape.dims())
    }
}

pub(crate) struct View {
    /// The blob this view was made from, kept alive by the view. Always
    /// `Some` while the view lives: `Drop for Blob` takes it out, to free
    /// a chain of views in a loop rather than by recursion.
    pub(crate) parent: Option<Blob>,
    pub(crate) kind: ViewKind,
}

pub(crate) enum ViewKind {
    /// A NeoML window over axis 0: `rows` parent rows of `row` elements
    /// each, starting at parent row `pos`.
    Window { pos: usize, rows: usize, row: usize },
    /// A Serrano slice by these leading indices.
    Slice { index: Vec<usize> },
    /// An OpenVINO region (ROI) starting at this logical index.
    Region { begin: Vec<usize> },
    /// A NumPy basic-indexing view or a transposed view (see `index.rs`).
    Indexed,
}

/// An entry of the LIFO buffer stack (see `buffer.rs`).
pub(crate) struct HeldBuffer {
    pub(crate) addr: usize,
    pub(crate) pos: usize,
    pub(crate) size: usize,
    /// Keeps the memory alive (and the blob busy) while the buffer is
    /// held, and marks it shared with the host so GPU kernels keep the
    /// host copy current.
    pub(crate) pin: crate::storage::Pin,
}

/// A snapshot of where a blob's elements are: what every operation works on.
#[derive(Clone)]
pub(crate) struct Region {
    /// False for blobs with a non-default layout: such a region refuses
    /// dense access (see [`Region::checked_range`]).
    pub(crate) dense: bool,
    pub(crate) storage: Arc<Storage>,
    /// In elements.
    pub(crate) offset: usize,
    pub(crate) shape: Shape,
    pub(crate) dtype: DType,
}

/// A blob's state, read-locked. In the crate's own tests the lock is also
/// recorded per thread ([`lock_check`]), so that an operation taking the
/// same blob's lock twice (`x.op(x)`) fails at once instead of waiting for
/// ever behind a queued writer.
pub(crate) struct StateRef<'a> {
    guard: RwLockReadGuard<'a, State>,
    #[cfg(test)]
    _held: lock_check::Held,
}

/// A blob's state, write-locked (see [`StateRef`]).
pub(crate) struct StateMut<'a> {
    guard: RwLockWriteGuard<'a, State>,
    #[cfg(test)]
    _held: lock_check::Held,
}

impl std::ops::Deref for StateRef<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.guard
    }
}

impl std::ops::Deref for StateMut<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.guard
    }
}

impl std::ops::DerefMut for StateMut<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.guard
    }
}

/// The per-thread record of held blob state locks (tests only): the lock
/// discipline's "never the same lock twice in one call", checked
/// deterministically rather than by waiting for a deadlock.
#[cfg(test)]
#[allow(clippy::items_after_test_module)] // a test helper the code above calls, not a test module
pub(crate) mod lock_check {
    use std::cell::RefCell;

    thread_local! {
        static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    }

    /// One recorded lock; forgotten when dropped.
    pub(crate) struct Held(usize);

    /// Records that this thread takes the lock at `addr`; panics when it
    /// already holds it.
    pub(crate) fn enter(addr: usize) -> Held {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            assert!(!h.contains(&addr), "a blob's state lock was taken twice by one thread: with a writer queued in between this waits for ever");
            h.push(addr);
        });
        Held(addr)
    }

    impl Drop for Held {
        fn drop(&mut self) {
            HELD.with(|h| {
                let mut h = h.borrow_mut();
                if let Some(i) = h.iter().rposition(|&a| a == self.0) {
                    h.remove(i);
                }
            });
        }
    }
}

pub(crate) fn read_lock<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    // Critical sections only assign fields, so a poisoned lock holds consistent data.
    l.read().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn write_lock<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn mutex<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Region {
    pub(crate) fn count(&self) -> usize {
        self.shape.count()
    }

    /// Byte range `[start, end)` in the storage.
    pub(crate) fn byte_range(&self) -> (usize, usize) {
        let es = self.dtype.size();
        let start = self.offset * es;
        (start, start + self.count() * es)
    }

    /// Byte range of a dense region in one address space: relative to
    /// `base`'s storage when both share it, else at its canonical address
    /// ([`crate::file_alias`]; None when the storage has no host memory
    /// yet, which nothing else can reach).
    fn span_from(&self, same_storage: bool) -> Option<(u128, u128)> {
        let (s, e) = self.byte_range();
        if same_storage {
            return Some((s as u128, e as u128));
        }
        self.storage.host_addr().map(crate::file_alias::canonical).map(|a| (a + s as u128, a + e as u128))
    }

    /// For dense regions (only: a strided view's region is not its bytes):
    /// true when they share no byte of memory, however
    /// each reaches it (by address; two atomic loads, no lock).
    pub(crate) fn apart(&self, other: &Region) -> bool {
        let same = Arc::ptr_eq(&self.storage, &other.storage);
        match (self.span_from(same), other.span_from(same)) {
            (Some((a0, a1)), Some((b0, b1))) => a0 == a1 || b0 == b1 || a1 <= b0 || b1 <= a0,
            _ => true,
        }
    }

    /// For dense regions: true when both are exactly the same bytes (a
    /// copy between them changes nothing), however each reaches them.
    pub(crate) fn same_memory(&self, other: &Region) -> bool {
        let same = Arc::ptr_eq(&self.storage, &other.storage);
        match (self.span_from(same), other.span_from(same)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// True when both regions are the same bytes of the same storage (what
    /// the GPU engine needs: an alias is another storage, another buffer).
    pub(crate) fn same_bytes(&self, other: &Region) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage) && self.byte_range() == other.byte_range()
    }

    fn checked_range(&self) -> Result<(usize, usize)> {
        if !self.dense {
            return Err(needs_dense());
        }
        let (s, e) = self.byte_range();
        if e > self.storage.len() {
            return Err(err!(Internal, "region [{s}, {e}) exceeds storage of {} bytes", self.storage.len()));
        }
        Ok((s, e))
    }

    /// Shared access to the region's bytes, synced to the host.
    pub(crate) fn read(&self) -> Result<HostRef> {
        self.clone().into_read()
    }

    /// Exclusive access to the region's bytes; the head moves to the host.
    pub(crate) fn write(&self) -> Result<HostMut> {
        self.clone().into_write()
    }

    /// As [`Region::read`], consuming the region (saves a reference count).
    pub(crate) fn into_read(self) -> Result<HostRef> {
        let (s, e) = self.checked_range()?;
        let (borrow, base) = self.storage.acquire(s, e, false, false)?;
        // SAFETY: s <= storage.len(), so the offset stays inside the allocation.
        let ptr = unsafe { base.as_ptr().add(s) };
        Ok(HostRef { _borrow: Some(borrow), ptr, len: e - s })
    }

    /// As [`Region::write`], consuming the region.
    pub(crate) fn into_write(self) -> Result<HostMut> {
        let (s, e) = self.checked_range()?;
        let (borrow, base) = self.storage.acquire(s, e, true, true)?;
        // SAFETY: s <= storage.len(), so the offset stays inside the allocation.
        let ptr = unsafe { base.as_ptr().add(s) };
        Ok(HostMut { _borrow: Some(borrow), ptr, len: e - s })
    }
}

/// Regions up to this many bytes (16 KiB) are worked on under the storage
/// lock without registering a borrow and on the calling thread: the
/// per-call fast path of small operations. [`Blob::is_small`] compares
/// with it; bindings use it to decide which work is short enough to do
/// without letting go of their own lock (Python's GIL).
pub const SMALL_BYTES: usize = 16 << 10;

impl Blob {
    /// The state (read-locked) and the byte range of a dense blob's elements.
    fn dense_bytes(&self) -> Result<(StateRef<'_>, usize, usize)> {
        let st = self.state();
        if !st.is_dense() {
            return Err(needs_dense());
        }
        let es = self.inner.dtype.size();
        let (start, len) = (st.offset * es, st.shape.count() * es);
        Ok((st, start, len))
    }

    /// Runs `f` with exclusive access to all of the blob's elements (head
    /// moves to the host). Small blobs run under the storage lock; larger
    /// ones take a registered borrow so that no lock is held while working.
    pub(crate) fn with_write<R>(&self, f: impl FnOnce(&mut HostMut) -> R) -> Result<R> {
        let (st, start, len) = self.dense_bytes()?;
        if len <= SMALL_BYTES {
            return st.storage.with_locked(start, start + len, true, |base| {
                // SAFETY: start + len <= storage.len() (checked by with_locked),
                // the lock keeps every other access out while `f` runs, and
                // the HostMut does not outlive this closure.
                let mut h = HostMut { _borrow: None, ptr: unsafe { base.as_ptr().add(start) }, len };
                f(&mut h)
            });
        }
        let region = Region { dense: true, storage: Arc::clone(&st.storage), offset: st.offset, shape: st.shape.clone(), dtype: self.inner.dtype };
        drop(st);
        Ok(f(&mut region.into_write()?))
    }

    /// A copy of a small dense blob made in one step: its bytes are copied
    /// under its storage lock straight into a new storage, which never
    /// goes through the lazy, zeroed state (`None` when the blob is not
    /// dense or not small: [`Blob::copy`] takes another path).
    pub(crate) fn small_dense_copy(&self) -> Result<Option<Blob>> {
        let (st, start, len) = match self.dense_bytes() {
            Ok(d) if d.2 <= SMALL_BYTES => d,
            _ => return Ok(None),
        };
        // SAFETY: the `len` bytes from `start` lie inside the locked range,
        // and `fill` writes exactly the `len` new bytes.
        let out = unsafe { self.copy_locked(st, start, start + len, len, |base, dst| std::ptr::copy_nonoverlapping(base.add(start), dst, len)) };
        out.map(Some)
    }

    /// A new dense blob with this blob's shape, dtype and engine, whose
    /// `len` bytes `fill` writes (given the storage's base and the new
    /// bytes) while the storage lock keeps writers off the bytes
    /// `[start, end)` of the storage `st` names: the small copies of
    /// [`Blob::copy`]. `st` is released once the copy is made.
    ///
    /// # Safety
    /// `len` is the shape's size in bytes; `fill` reads only inside
    /// `[start, end)` from the base and writes every one of the `len` new
    /// bytes and nothing else.
    pub(crate) unsafe fn copy_locked(&self, st: StateRef<'_>, start: usize, end: usize, len: usize, fill: impl FnOnce(*const u8, *mut u8)) -> Result<Blob> {
        let gpu = self.inner.engine.gpu_device().cloned();
        let storage = st.storage.with_locked(start, end, false, |base| {
            // SAFETY: with_locked checked `end <= storage.len()`; the caller's
            // contract keeps `fill` inside the bytes it may touch.
            unsafe { Storage::host_filled_on(len, gpu, |dst| fill(base.as_ptr(), dst)) }
        })??;
        let shape = st.shape.clone();
        drop(st);
        let count = shape.count();
        Ok(Blob::dense_in_place(&self.inner.engine, self.inner.dtype, shape, storage, 0, count, false))
    }

    /// Runs `f` with shared access to all of the blob's elements (as
    /// [`Blob::with_write`], for reading).
    pub(crate) fn with_read<R>(&self, f: impl FnOnce(&HostRef) -> R) -> Result<R> {
        let (st, start, len) = self.dense_bytes()?;
        if len <= SMALL_BYTES {
            return st.storage.with_locked(start, start + len, false, |base| {
                // SAFETY: as in with_write; no writer can run while we hold the lock.
                let h = HostRef { _borrow: None, ptr: unsafe { base.as_ptr().add(start) }, len };
                f(&h)
            });
        }
        let region = Region { dense: true, storage: Arc::clone(&st.storage), offset: st.offset, shape: st.shape.clone(), dtype: self.inner.dtype };
        drop(st);
        Ok(f(&region.into_read()?))
    }
}

/// Shared, borrow-registered access to a byte range of host memory.
pub(crate) struct HostRef {
    _borrow: Option<Borrow>,
    ptr: *const u8,
    len: usize,
}

/// Exclusive, borrow-registered access to a byte range of host memory.
pub(crate) struct HostMut {
    _borrow: Option<Borrow>,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the borrow registration makes the access exclusive (HostMut) or
// shared-with-readers-only (HostRef) across all threads, like &mut / &.
unsafe impl Send for HostRef {}
// SAFETY: see above.
unsafe impl Sync for HostRef {}
// SAFETY: see above.
unsafe impl Send for HostMut {}
// SAFETY: see above.
unsafe impl Sync for HostMut {}

impl HostRef {
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes while the storage lives (the
        // borrow holds an Arc), and no exclusive borrow overlaps ours.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub(crate) fn typed<T: Element>(&self) -> &[T] {
        debug_assert_eq!(self.ptr as usize % std::mem::align_of::<T>(), 0);
        // SAFETY: storage bases are 64-aligned (or checked at wrap time to be
        // element-aligned) and offsets are whole elements, so ptr is aligned
        // for T; T is plain old data (Element's contract).
        unsafe { std::slice::from_raw_parts(self.ptr as *const T, self.len / std::mem::size_of::<T>()) }
    }
}

impl HostMut {
    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as HostRef::bytes, and our borrow is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub(crate) fn typed_mut<T: Element>(&mut self) -> &mut [T] {
        debug_assert_eq!(self.ptr as usize % std::mem::align_of::<T>(), 0);
        // SAFETY: see HostRef::typed; the borrow is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr as *mut T, self.len / std::mem::size_of::<T>()) }
    }

    pub(crate) fn typed<T: Element>(&self) -> &[T] {
        // SAFETY: see HostRef::typed.
        unsafe { std::slice::from_raw_parts(self.ptr as *const T, self.len / std::mem::size_of::<T>()) }
    }
}

impl Blob {
    // ----------------------------------------------------------------- creation

    #[inline(always)]
    fn from_parts(engine: &Engine, dtype: DType, state: State, companion: bool) -> Blob {
        Blob {
            inner: std::mem::ManuallyDrop::new(triomphe::Arc::new(BlobInner {
                bytes_hint: AtomicUsize::new(state.shape.count() * dtype.size()),
                rank: AtomicU8::new(state.shape.rank() as u8),
                generation: AtomicU64::new(0),
                engine: engine.clone(),
                dtype,
                state: RwLock::new(state),
                buffers: Mutex::new(Vec::new()),
                diff: Mutex::new(None),
                companion,
            })),
        }
    }

    /// [`Blob::from_parts`] with the record allocated before `make`
    /// builds the state, which is then written straight into it. A state
    /// built first (about 250 bytes of fields just stored on the stack)
    /// has to live across the allocator's call and is copied in through
    /// `memcpy`, whose wide loads wait on those narrow stores (store
    /// forwarding): `index [0]` 43.5-44 -> 31-34 ns on session 84's
    /// Zen 4 VM, alternated runs of `examples/percall.rs`.
    #[inline(always)]
    fn from_parts_with(engine: &Engine, dtype: DType, companion: bool, make: impl FnOnce() -> State) -> Blob {
        let mut slot = triomphe::UniqueArc::<BlobInner>::new_uninit();
        let inner = slot.as_mut_ptr() as *mut BlobInner;
        // SAFETY: `inner` points to the slot's record, uninitialised and
        // owned by `slot` alone; each field is written exactly once, by
        // pointer (no reference to the partial record is made), before
        // `assume_init`. A panic in `make` leaves the slot uninitialised,
        // which frees its memory and drops nothing.
        unsafe {
            let lock = std::ptr::addr_of_mut!((*inner).state);
            lock.write(RwLock::new(make()));
            // The lock is initialised and nothing else can reach it.
            let state = (*lock).get_mut().unwrap_or_else(|e| e.into_inner());
            let (count, rank) = (state.shape.count(), state.shape.rank());
            std::ptr::addr_of_mut!((*inner).bytes_hint).write(AtomicUsize::new(count * dtype.size()));
            std::ptr::addr_of_mut!((*inner).rank).write(AtomicU8::new(rank as u8));
            std::ptr::addr_of_mut!((*inner).generation).write(AtomicU64::new(0));
            std::ptr::addr_of_mut!((*inner).engine).write(engine.clone());
            std::ptr::addr_of_mut!((*inner).dtype).write(dtype);
            std::ptr::addr_of_mut!((*inner).buffers).write(Mutex::new(Vec::new()));
            std::ptr::addr_of_mut!((*inner).diff).write(Mutex::new(None));
            std::ptr::addr_of_mut!((*inner).companion).write(companion);
        }
        // SAFETY: every field of the record was written above.
        Blob { inner: std::mem::ManuallyDrop::new(unsafe { triomphe::UniqueArc::assume_init(slot) }.shareable()) }
    }

    /// [`Blob::from_parts`] of a dense state over `storage` (element 0 at
    /// `offset`, `capacity` elements), written straight into the blob's
    /// allocation (`UniqueArc::write` of the record, with the state built
    /// inside it): new blobs, small copies, wraps and the DLPack import of
    /// blobcore's own export. Passed in whole to `Arc::new`, the state (about 300
    /// bytes, just written on the stack) is copied through `memcpy`,
    /// which stalls on store forwarding: `copy()` of 8 floats 113-133 ns ->
    /// 98-112 ns on the 2-core VM, a new 8-float blob 68 -> 62-65 ns
    /// (session 43). The views build theirs through
    /// [`Blob::from_parts_with`] (session 84); this path measured 5%
    /// faster than that one for `new 8` and `copy 8`, so it stays.
    #[inline(always)]
    pub(crate) fn dense_in_place(engine: &Engine, dtype: DType, shape: Shape, storage: Arc<Storage>, offset: usize, capacity: usize, companion: bool) -> Blob {
        let mut slot = triomphe::UniqueArc::<BlobInner>::new_uninit();
        let bytes_hint = AtomicUsize::new(shape.count() * dtype.size());
        let rank = AtomicU8::new(shape.rank() as u8);
        slot.write(BlobInner {
            bytes_hint,
            rank,
            generation: AtomicU64::new(0),
            engine: engine.clone(),
            dtype,
            state: RwLock::new(State { offset, ..State::dense(shape, storage, capacity) }),
            buffers: Mutex::new(Vec::new()),
            diff: Mutex::new(None),
            companion,
        });
        // SAFETY: `write` just initialised the whole value.
        Blob { inner: std::mem::ManuallyDrop::new(unsafe { triomphe::UniqueArc::assume_init(slot) }.shareable()) }
    }

    fn new_impl(engine: &Engine, dtype: DType, shape: Shape, companion: bool) -> Result<Blob> {
        let bytes = shape.byte_size(dtype)?;
        let capacity = shape.count();
        Ok(Blob::dense_in_place(engine, dtype, shape, Storage::lazy_on(bytes, engine.gpu_device().cloned()), 0, capacity, companion))
    }

    /// A blob laid out as `desc` says (OpenVINO `make_shared_blob(desc)`):
    /// its memory is sized by the blocked dims and strides, padding
    /// included, and reads as zeros. A dense row-major desc gives a plain blob.
    pub fn with_desc(engine: &Engine, desc: &TensorDesc) -> Result<Blob> {
        let shape = Shape::new(desc.dims())?;
        if desc.is_dense() {
            return Blob::new(engine, desc.dtype(), shape);
        }
        let span = desc.span()?;
        let bytes = span
            .checked_mul(desc.dtype().size())
            .filter(|&b| isize::try_from(b).is_ok())
            .ok_or_else(|| err!(Shape, "{desc} needs more memory than can be addressed"))?;
        let state = State { capacity: shape.count(), shape, storage: Storage::lazy_on(bytes, engine.gpu_device().cloned()), offset: 0, view: None, placement: Placement::Desc(Box::new(desc.clone())) };
        Ok(Blob::from_parts(engine, desc.dtype(), state, false))
    }

    /// A blob of this shape on `engine`. Nothing is allocated until the
    /// data is first touched, and it then reads as zeros.
    pub fn new(engine: &Engine, dtype: DType, shape: Shape) -> Result<Blob> {
        Blob::new_impl(engine, dtype, shape, false)
    }

    /// A blob with these dims (any rank 0..=32; NeoML's `CreateTensor`,
    /// whose dims fill the named dims from BatchLength on).
    pub fn tensor(engine: &Engine, dtype: DType, dims: &[usize]) -> Result<Blob> {
        Blob::new(engine, dtype, Shape::new(dims)?)
    }

    /// A rank-1 blob of `n` elements (NeoML `CreateVector`: BatchLength = n).
    pub fn vector(engine: &Engine, dtype: DType, n: usize) -> Result<Blob> {
        Blob::tensor(engine, dtype, &[n])
    }

    /// A rank-2 blob (NeoML `CreateMatrix`: BatchLength = height, BatchWidth = width).
    pub fn matrix(engine: &Engine, dtype: DType, height: usize, width: usize) -> Result<Blob> {
        Blob::tensor(engine, dtype, &[height, width])
    }

    /// NeoML `CreateDataBlob`: rank 7 with BatchLength, BatchWidth and Channels set.
    pub fn data(engine: &Engine, dtype: DType, batch_length: usize, batch_width: usize, channels: usize) -> Result<Blob> {
        Blob::tensor(engine, dtype, &[batch_length, batch_width, 1, 1, 1, 1, channels])
    }

    /// NeoML `CreateListBlob`: rank 7 with BatchLength, BatchWidth, ListSize and Channels set.
    pub fn list(
        engine: &Engine,
        dtype: DType,
        batch_length: usize,
        batch_width: usize,
        list_size: usize,
        channels: usize,
    ) -> Result<Blob> {
        Blob::tensor(engine, dtype, &[batch_length, batch_width, list_size, 1, 1, 1, channels])
    }

    /// NeoML `Create2DImageBlob`: rank 7 with Height and Width set.
    pub fn image2d(
        engine: &Engine,
        dtype: DType,
        batch_length: usize,
        batch_width: usize,
        height: usize,
        width: usize,
        channels: usize,
    ) -> Result<Blob> {
        Blob::tensor(engine, dtype, &[batch_length, batch_width, 1, height, width, 1, channels])
    }

    /// NeoML `Create3DImageBlob`: rank 7 with Height, Width and Depth set.
    #[allow(clippy::too_many_arguments)]
    pub fn image3d(
        engine: &Engine,
        dtype: DType,
        batch_length: usize,
        batch_width: usize,
        height: usize,
        width: usize,
        depth: usize,
        channels: usize,
    ) -> Result<Blob> {
        Blob::tensor(engine, dtype, &[batch_length, batch_width, 1, height, width, depth, channels])
    }

    /// Serrano's shape equality: the same dims (exactly, as NumPy's
    /// `shape ==`) and, when `with_dtype`, the same dtype.
    pub fn same_shape(&self, other: &Blob, with_dtype: bool) -> bool {
        self.dims() == other.dims() && (!with_dtype || self.dtype() == other.dtype())
    }

    /// A blob holding a copy of `data` (length must equal the element
    /// count; any other is an `InvalidArgument` error). Small blobs take
    /// one allocation, filled before the blob exists ([`Blob::from_bytes`]).
    pub fn from_slice<T: Element>(engine: &Engine, dims: &[usize], data: &[T]) -> Result<Blob> {
        let count = Shape::new(dims)?.count();
        if data.len() != count {
            return Err(err!(InvalidArgument, "from_slice: {} elements given for a blob of {}", data.len(), count));
        }
        // SAFETY: an Element is plain old data without padding (the
        // trait's contract), so its slice is `size_of_val` initialized bytes.
        let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr() as *const u8, std::mem::size_of_val(data)) };
        Blob::from_bytes(engine, T::DTYPE, dims, bytes)
    }

    /// A dense blob of `dims` holding a copy of `bytes`: the elements in
    /// row-major order and native byte order, exactly the shape's byte size
    /// (any other length is an `InvalidArgument` error). What a binding
    /// calls with a foreign array's memory: a small one is copied into
    /// memory allocated for it before anyone can see the blob (one
    /// allocation, no lock), a large one with the streamed copy.
    pub fn from_bytes(engine: &Engine, dtype: DType, dims: &[usize], bytes: &[u8]) -> Result<Blob> {
        let shape = Shape::new(dims)?;
        let len = shape.byte_size(dtype)?;
        if bytes.len() != len {
            return Err(err!(InvalidArgument, "{} bytes given for a blob of {} bytes ({} {})", bytes.len(), len, shape, dtype.name()));
        }
        if len == 0 || len > SMALL_BYTES {
            let b = Blob::new(engine, dtype, shape)?;
            b.copy_from_bytes(bytes)?;
            return Ok(b);
        }
        // SAFETY: `fill` writes exactly the `len` bytes it is given, from
        // `bytes`, which holds `len` bytes (checked above) and cannot
        // overlap memory allocated just now.
        let storage = unsafe { Storage::host_filled_on(len, engine.gpu_device().cloned(), |dst| std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len)) }?;
        let capacity = shape.count();
        Ok(Blob::dense_in_place(engine, dtype, shape, storage, 0, capacity, false))
    }

    /// Wraps memory the caller owns, without copying (Caffe `set_cpu_data`,
    /// OpenVINO `make_shared_blob(desc, ptr)`). `release` runs exactly once
    /// when the last blob, view or buffer using the memory lets go. On error
    /// nothing is taken: `release` is dropped without being called.
    ///
    /// `byte_len` may exceed the shape's size (the rest is capacity); `ptr`
    /// must be aligned to the element size.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `byte_len` bytes until
    /// `release` runs (forever if it is `None`).
    pub unsafe fn wrap(
        engine: &Engine,
        dtype: DType,
        shape: Shape,
        ptr: NonNull<u8>,
        byte_len: usize,
        release: Option<ReleaseFn>,
    ) -> Result<Blob> {
        // SAFETY: forwarded from this function's contract.
        unsafe { Blob::wrap_lent(engine, dtype, shape, ptr, byte_len, release, false) }
    }

    /// As [`Blob::wrap`] for memory lent read-only (a read-only NumPy
    /// array, a DLPack tensor flagged READ_ONLY, a received pickle buffer):
    /// the blob's [`Blob::is_writable`] is false and every write — fill,
    /// arithmetic, copies into it, write guards, writable exports and
    /// buffers, growing reshapes — is `Error::ReadOnly`, changing nothing.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `byte_len` bytes until `release`
    /// runs (forever if it is `None`).
    pub unsafe fn wrap_read_only(
        engine: &Engine,
        dtype: DType,
        shape: Shape,
        ptr: NonNull<u8>,
        byte_len: usize,
        release: Option<ReleaseFn>,
    ) -> Result<Blob> {
        // SAFETY: forwarded; read-only storage is never written.
        unsafe { Blob::wrap_lent(engine, dtype, shape, ptr, byte_len, release, true) }
    }

    /// [`Blob::wrap`] or, when `read_only`, [`Blob::wrap_read_only`]: for
    /// callers that learn at run time whether the lender allows writes
    /// (the buffer protocol, DLPack flags, C callers).
    ///
    /// # Safety
    /// `ptr` must be valid for reads (and writes unless `read_only`) of
    /// `byte_len` bytes until `release` runs (forever if it is `None`).
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn wrap_lent(
        engine: &Engine,
        dtype: DType,
        shape: Shape,
        ptr: NonNull<u8>,
        byte_len: usize,
        release: Option<ReleaseFn>,
        read_only: bool,
    ) -> Result<Blob> {
        let need = shape.byte_size(dtype)?;
        if byte_len < need {
            return Err(err!(
                InvalidArgument,
                "{byte_len} bytes cannot hold {shape} of {dtype} ({need} bytes needed)"
            ));
        }
        if !(ptr.as_ptr() as usize).is_multiple_of(dtype.size()) {
            return Err(err!(
                InvalidArgument,
                "memory at {:p} is not aligned to the {}-byte elements of {dtype}",
                ptr.as_ptr(),
                dtype.size()
            ));
        }
        // SAFETY: forwarded from this function's contract.
        let storage = unsafe { Storage::external_on(ptr, byte_len, release, engine.gpu_device().cloned(), read_only) };
        Ok(Blob::on_storage(engine, dtype, shape, storage, byte_len))
    }

    /// A blob over bytes of a memory-mapped file (see [`crate::mapped`]):
    /// as [`Blob::wrap_lent`], but the memory can never be reallocated
    /// (growing is `Busy`).
    ///
    /// # Safety
    /// As [`Blob::wrap_lent`]; the caller has checked size and alignment.
    pub(crate) unsafe fn wrap_file(engine: &Engine, dtype: DType, shape: Shape, ptr: NonNull<u8>, byte_len: usize, release: ReleaseFn, read_only: bool) -> Blob {
        // SAFETY: forwarded from this function's contract.
        let storage = unsafe { Storage::file_on(ptr, byte_len, Some(release), engine.gpu_device().cloned(), read_only) };
        Blob::on_storage(engine, dtype, shape, storage, byte_len)
    }

    /// A blob (not a view) with this state.
    #[inline(always)] // builds the state in place, as `derived` does
    pub(crate) fn from_state(engine: &Engine, dtype: DType, state: State) -> Blob {
        Blob::from_parts(engine, dtype, state, false)
    }

    fn on_storage(engine: &Engine, dtype: DType, shape: Shape, storage: Arc<Storage>, byte_len: usize) -> Blob {
        let capacity = byte_len / dtype.size();
        Blob::dense_in_place(engine, dtype, shape, storage, 0, capacity, false)
    }

    // ---------------------------------------------------------------- internals

    /// A new blob (a view) on this blob's engine and dtype with `state`.
    #[inline(always)]
    pub(crate) fn derived(&self, state: State) -> Blob {
        Blob::from_parts(&self.inner.engine, self.dtype(), state, false)
    }

    /// [`Blob::derived`] with the state `make` builds, written straight
    /// into the new record (see [`Blob::from_parts_with`]): the views
    /// made on every index call.
    #[inline(always)]
    pub(crate) fn derived_with(&self, make: impl FnOnce() -> State) -> Blob {
        Blob::from_parts_with(&self.inner.engine, self.dtype(), false, make)
    }

    pub(crate) fn state(&self) -> StateRef<'_> {
        #[cfg(test)]
        let held = lock_check::enter(self.lock_addr());
        StateRef { guard: read_lock(&self.inner.state), #[cfg(test)] _held: held }
    }

    pub(crate) fn state_mut(&self) -> StateMut<'_> {
        #[cfg(test)]
        let held = lock_check::enter(self.lock_addr());
        let guard = write_lock(&self.inner.state);
        // Bumped under the write lock, before any change is visible: a
        // reader that sees the new shape under its read lock has either
        // read this generation or an older one, never a newer one.
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        StateMut { guard, #[cfg(test)] _held: held }
    }

    /// A number that changes whenever the blob's state (shape, layout,
    /// memory, view relation) may have changed: read it before reading
    /// the shape, and anything derived from that shape stays current for
    /// as long as the generation reads the same. Bindings use it to reuse
    /// what they built from the shape (Python's `b.shape` tuple).
    pub fn generation(&self) -> u64 {
        self.inner.generation.load(Ordering::Acquire)
    }

    #[cfg(test)]
    fn lock_addr(&self) -> usize {
        &self.inner.state as *const RwLock<State> as usize
    }

    pub(crate) fn snapshot(&self) -> Region {
        let st = self.state();
        Region { dense: st.is_dense(), storage: Arc::clone(&st.storage), offset: st.offset, shape: st.shape.clone(), dtype: self.inner.dtype }
    }

    pub(crate) fn check_dtype<T: Element>(&self) -> Result<()> {
        if T::DTYPE != self.dtype() {
            return Err(err!(DType, "blob holds {} but {} was requested", self.dtype(), T::DTYPE));
        }
        Ok(())
    }

    /// Why memory the blob does not own cannot be moved or grown: its
    /// owner keeps using it, and would stop seeing the blob's writes.
    pub(crate) const LENT: &'static str = "the memory is lent by its owner (a wrapped buffer, or memory shared with NumPy or DLPack), which would no longer see the blob's writes";

    /// Why reallocating (or replacing) this blob's memory would break
    /// something that shares it, if anything does.
    pub(crate) fn busy_reason(&self, st: &State) -> Option<String> {
        if st.storage.is_file_backed() {
            return Some("the blob lives on a memory-mapped file, whose bytes cannot be reallocated; copy() it first".to_string());
        }
        let held = mutex(&self.inner.buffers).len();
        if held > 0 {
            return Some(format!("{held} buffer(s) are held; release them first"));
        }
        let refs = Arc::strong_count(&st.storage);
        if refs > 1 {
            return Some(format!(
                "the memory is shared with {} view(s), guard(s), export(s) or blob(s)",
                refs - 1
            ));
        }
        None
    }

    // ------------------------------------------------------------------ queries

    /// The engine the blob lives on.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.inner.dtype
    }

    /// A copy of the current shape.
    pub fn shape(&self) -> Shape {
        self.state().shape.clone()
    }

    /// The current dims.
    pub fn dims(&self) -> Vec<usize> {
        self.state().shape.dims().to_vec()
    }

    /// Number of axes.
    pub fn rank(&self) -> usize {
        // Stored with every shape change, under the state's write lock.
        usize::from(self.inner.rank.load(Ordering::Acquire))
    }

    /// Number of elements (NeoML `GetDataSize`, Caffe `count()`).
    pub fn count(&self) -> usize {
        self.state().shape.count()
    }

    /// Size of the data in bytes.
    pub fn byte_size(&self) -> usize {
        self.count() * self.dtype().size()
    }

    /// The blob's layout: dtype, logical dims and blocking (the default is
    /// dense row-major with the layout `layout_by_dims` gives).
    pub fn desc(&self) -> TensorDesc {
        let st = self.state();
        match st.desc() {
            Some(d) => d.clone(),
            // A Shape is always a valid dense desc (rank and count checked).
            None => TensorDesc::dense(self.dtype(), st.shape.dims()).unwrap_or_else(|_| unreachable_desc()),
        }
    }

    /// The blob's layout (OpenVINO's enum).
    pub fn layout(&self) -> crate::layout::Layout {
        let st = self.state();
        match st.desc() {
            Some(d) => d.layout(),
            None => crate::layout::layout_by_dims(st.shape.rank()),
        }
    }

    /// True for dense row-major data (what every operation accepts);
    /// false for blocked, strided, padded layouts and regions.
    pub fn is_dense(&self) -> bool {
        self.state().is_dense()
    }

    /// True for blocked layouts (a dim split into blocks, as nChw8c): no
    /// per-dim strides describe them, so NumPy, DLPack and the buffer
    /// protocol get a copy of their logical values.
    pub fn is_blocked(&self) -> bool {
        self.state().blocked().is_some()
    }

    /// True when the blob's elements take at most 16 KiB, so that a
    /// whole-blob operation on it (fill, scale, a reduction) finishes in
    /// well under a microsecond. Read without taking any lock: a hint for
    /// callers (the C API) that decide whether to hold a lock of their own
    /// around such an operation; it may be stale while another thread reshapes.
    pub fn is_small(&self) -> bool {
        self.inner.bytes_hint.load(Ordering::Relaxed) <= SMALL_BYTES
    }

    /// Elements the memory can hold without reallocating (Caffe's capacity).
    pub fn capacity(&self) -> usize {
        self.state().capacity
    }

    /// Size of an axis; negative counts from the end.
    pub fn dim(&self, axis: isize) -> Result<usize> {
        self.state().shape.dim(axis)
    }

    /// Size of a named dim (1 beyond the rank; Shape error for rank > 7).
    pub fn named_dim(&self, d: BlobDim) -> Result<usize> {
        self.state().shape.named_dim(d)
    }

    /// BatchLength * BatchWidth * ListSize.
    pub fn object_count(&self) -> Result<usize> {
        self.state().shape.object_count()
    }

    /// Height * Width * Depth * Channels.
    pub fn object_size(&self) -> Result<usize> {
        self.state().shape.object_size()
    }

    /// Height * Width * Depth.
    pub fn geometrical_size(&self) -> Result<usize> {
        self.state().shape.geometrical_size()
    }

    /// NeoML `HasEqualDimensions`: true when the 7 padded named dims are
    /// equal (`[2, 3]` and `[2, 3, 1]` are); blobs of rank > 7 compare
    /// their dims exactly. Compare [`Blob::dims`] for NumPy's shape
    /// equality.
    pub fn has_equal_dims(&self, other: &Blob) -> bool {
        self.shape().has_equal_dims(&other.shape())
    }

    /// Caffe `count(start, end)`.
    pub fn count_range(&self, start: usize, end: usize) -> Result<usize> {
        self.state().shape.count_range(start, end)
    }

    /// Caffe `count(start_axis)`: the product of dims from `start` to the
    /// end (1 when `start` is the rank).
    pub fn count_from(&self, start: usize) -> Result<usize> {
        let st = self.state();
        st.shape.count_range(start, st.shape.rank())
    }

    /// Caffe `shape_string()`: the dims separated by spaces, then the
    /// element count in parentheses (`"64 3 28 28 (150528)"`; `"(1)"` for
    /// a scalar).
    pub fn shape_string(&self) -> String {
        let st = self.state();
        let mut out = String::new();
        for d in st.shape.dims() {
            out.push_str(&d.to_string());
            out.push(' ');
        }
        out.push_str(&format!("({})", st.shape.count()));
        out
    }

    /// Caffe `CanonicalAxisIndex`.
    pub fn canonical_axis(&self, axis: isize) -> Result<usize> {
        self.state().shape.canonical_axis(axis)
    }

    /// Caffe `offset(indices)`.
    pub fn offset(&self, indices: &[usize]) -> Result<usize> {
        self.state().shape.offset(indices)
    }

    /// Caffe `LegacyShape(index)`.
    pub fn legacy_shape(&self, index: isize) -> Result<usize> {
        self.state().shape.legacy_shape(index)
    }

    /// Caffe `offset(n, c, h, w)` over the legacy shape (see
    /// [`Shape::legacy_offset`]).
    pub fn legacy_offset(&self, n: usize, c: usize, h: usize, w: usize) -> Result<usize> {
        self.state().shape.legacy_offset(n, c, h, w)
    }

    /// The element at row-major position `at` of the logical dims, as f64:
    /// read where the layout puts it (one element, whatever the layout).
    fn element_f64(&self, at: usize) -> Result<f64> {
        let st = self.state();
        st.shape.check_element(at)?;
        let element = match st.desc() {
            None => st.offset + at,
            Some(d) => st.offset + d.offset_linear(at)?,
        };
        Ok(self.read_stored(&st, element)?.to_f64())
    }

    /// Caffe `data_at(n, c, h, w)`: the element at the legacy offset, as
    /// f64 (exact for every dtype but i64 beyond 2^53), whatever the layout.
    pub fn data_at(&self, n: usize, c: usize, h: usize, w: usize) -> Result<f64> {
        let at = self.legacy_offset(n, c, h, w)?;
        self.element_f64(at)
    }

    /// Caffe `data_at(index)`: the element at the leading `index` (missing
    /// trailing indices read as 0, as Caffe's `offset(indices)`), as f64.
    pub fn data_at_index(&self, index: &[usize]) -> Result<f64> {
        let at = self.state().shape.element_offset(index)?;
        self.element_f64(at)
    }

    /// Caffe `diff_at(index)`: [`Blob::data_at_index`] of the diff (0 when
    /// no diff exists yet; reading creates none).
    pub fn diff_at_index(&self, index: &[usize]) -> Result<f64> {
        self.state().shape.element_offset(index)?;
        match self.diff_if_created() {
            Some(d) => d.data_at_index(index),
            None => Ok(0.0),
        }
    }

    /// Caffe `diff_at(n, c, h, w)`: [`Blob::data_at`] of the diff (zeros
    /// until something writes it).
    pub fn diff_at(&self, n: usize, c: usize, h: usize, w: usize) -> Result<f64> {
        self.legacy_offset(n, c, h, w)?;
        // Reading creates nothing: a diff that does not exist yet reads 0.
        match self.diff_if_created() {
            Some(d) => d.data_at(n, c, h, w),
            None => Ok(0.0),
        }
    }

    /// Caffe `num()` = `legacy_shape(0)`.
    pub fn num(&self) -> Result<usize> {
        self.legacy_shape(0)
    }

    /// Caffe `channels()` = `legacy_shape(1)`.
    pub fn channels(&self) -> Result<usize> {
        self.legacy_shape(1)
    }

    /// Caffe `height()` = `legacy_shape(2)`.
    pub fn height(&self) -> Result<usize> {
        self.legacy_shape(2)
    }

    /// Caffe `width()` = `legacy_shape(3)`.
    pub fn width(&self) -> Result<usize> {
        self.legacy_shape(3)
    }

    /// NumPy's `writeable`: false for blobs over memory lent read-only
    /// (see [`Blob::wrap_read_only`]) and their views.
    pub fn is_writable(&self) -> bool {
        self.state().storage.is_writable()
    }

    /// `Ok` when the blob's memory may be written, else the `ReadOnly`
    /// error every write into it returns (what bindings raise before
    /// they convert a value for a read-only blob).
    pub fn check_writable(&self) -> Result<()> {
        self.state().storage.check_writable(true)
    }

    /// Where the current data lives.
    pub fn head(&self) -> Head {
        self.state().storage.head()
    }

    /// True once host memory exists for the data.
    pub fn is_allocated(&self) -> bool {
        self.state().storage.is_host_allocated()
    }

    /// True when both handles refer to the same blob.
    pub fn ptr_eq(&self, other: &Blob) -> bool {
        triomphe::Arc::ptr_eq(&self.inner, &other.inner)
    }

    // ------------------------------------------------------------ shape changes

    fn refuse_companion(&self, what: &str) -> Result<()> {
        if self.inner.companion {
            return Err(err!(
                InvalidArgument,
                "cannot {what} a diff: it follows the shape of the blob it belongs to"
            ));
        }
        Ok(())
    }

    /// Caffe `Reshape`: keeps the memory and its contents when the new count
    /// fits the capacity (which never shrinks); otherwise allocates new,
    /// zero-reading memory, which is `Error::Busy` while views, buffers,
    /// guards or exports share the old memory, and for writable memory the
    /// blob does not own ([`Blob::wrap`], DLPack imports: its owner would
    /// stop seeing the blob). A view can only change its
    /// dims at the same count. The diff, if any, follows. On error nothing
    /// changes.
    pub fn reshape(&self, dims: &[usize]) -> Result<()> {
        self.refuse_companion("reshape")?;
        let shape = Shape::new(dims)?;
        shape.byte_size(self.dtype())?;
        // The diff slot stays locked until the shape is stored, so a
        // `diff()` racing this call either exists before (and follows
        // below) or is created after (with the new dims). Lock order:
        // diff slot, then this blob's state, then the diff's state, as in
        // `diff()`.
        let slot = mutex(&self.inner.diff);
        let diff = slot.clone();
        let mut st = self.state_mut();
        if !st.is_dense() {
            return Err(err!(Unsupported, "cannot reshape a blob with a non-default layout; reorder it into a dense blob first"));
        }
        if st.view.is_some() && shape.count() != st.shape.count() {
            return Err(err!(
                InvalidArgument,
                "cannot reshape a view from {} to {shape} elements; reshape the blob that owns the memory",
                st.shape.count()
            ));
        }
        let grow = shape.count() > st.capacity;
        if grow {
            st.storage.check_writable(true)?;
            if st.storage.is_shared() {
                return Err(err!(
                    Busy,
                    "cannot grow from capacity {} to {}: the blob is in shared memory that other processes may map, which cannot be reallocated",
                    st.capacity,
                    shape.count()
                ));
            }
            if let Some(why) = self.busy_reason(&st) {
                return Err(err!(Busy, "cannot grow from capacity {} to {}: {why}", st.capacity, shape.count()));
            }
            if st.storage.is_external() {
                return Err(err!(Busy, "cannot grow from capacity {} to {}: {}; reshape a copy() instead", st.capacity, shape.count(), Self::LENT));
            }
        }
        let mut diff_st = diff.as_ref().map(|d| d.state_mut());
        if let (Some(d), Some(dst)) = (&diff, &diff_st) {
            if shape.count() > dst.capacity {
                if let Some(why) = d.busy_reason(dst) {
                    return Err(err!(Busy, "cannot grow the diff: {why}"));
                }
            }
        }
        let es = self.dtype().size();
        // Replaced memory is dropped only after the locks are released:
        // dropping it may run a release callback (foreign code).
        let mut old: Vec<Arc<Storage>> = Vec::new();
        let mut apply = |st: &mut State| {
            if shape.count() > st.capacity {
                let fresh = Storage::lazy_on(shape.count() * es, self.engine().gpu_device().cloned());
                old.push(std::mem::replace(&mut st.storage, fresh));
                st.offset = 0;
                st.capacity = shape.count();
            }
            st.shape = shape.clone();
        };
        apply(&mut st);
        self.inner.bytes_hint.store(shape.count() * es, Ordering::Relaxed);
        self.inner.rank.store(shape.rank() as u8, Ordering::Release);
        if let Some(dst) = diff_st.as_deref_mut() {
            apply(dst);
        }
        if let Some(d) = &diff {
            d.inner.bytes_hint.store(shape.count() * es, Ordering::Relaxed);
            d.inner.rank.store(shape.rank() as u8, Ordering::Release);
        }
        drop((st, diff_st, slot));
        drop(old);
        Ok(())
    }

    /// Changes the dims without touching the data (NeoML
    /// `ReinterpretDimensions`): the element count must stay the same. The
    /// diff, if any, follows.
    pub fn reinterpret(&self, dims: &[usize]) -> Result<()> {
        self.refuse_companion("reinterpret")?;
        let shape = Shape::new(dims)?;
        // Held to the end, as in `reshape`: a racing `diff()` follows.
        let slot = mutex(&self.inner.diff);
        let diff = slot.clone();
        let mut st = self.state_mut();
        if !st.is_dense() {
            return Err(err!(Unsupported, "cannot reinterpret a blob with a non-default layout; reorder it into a dense blob first"));
        }
        if shape.count() != st.shape.count() {
            return Err(err!(
                Shape,
                "reinterpret keeps the element count: {} has {} elements, {shape} has {}",
                st.shape,
                st.shape.count(),
                shape.count()
            ));
        }
        st.shape = shape.clone();
        self.inner.rank.store(shape.rank() as u8, Ordering::Release);
        if let Some(d) = diff {
            let mut dst = d.state_mut();
            d.inner.rank.store(shape.rank() as u8, Ordering::Release);
            dst.shape = shape;
        }
        Ok(())
    }

    /// Caffe `ShareData`: this blob uses `other`'s data memory from now on.
    /// Counts and dtypes must match, and nothing may share this blob's
    /// current memory (Busy otherwise).
    pub fn share_data(&self, other: &Blob) -> Result<()> {
        self.refuse_companion("share_data on")?;
        self.share_from(other)
    }

    fn share_from(&self, other: &Blob) -> Result<()> {
        if !self.engine().same(other.engine()) {
            return Err(err!(
                InvalidArgument,
                "cannot share memory between blobs on different engines ({} and {}); copy_from copies across engines",
                self.engine().name(),
                other.engine().name()
            ));
        }
        if self.ptr_eq(other) {
            return Ok(());
        }
        if self.dtype() != other.dtype() {
            return Err(err!(DType, "cannot share {} memory with a {} blob", other.dtype(), self.dtype()));
        }
        let src = other.snapshot();
        if !src.dense || !self.state().is_dense() {
            return Err(needs_dense());
        }
        let mut st = self.state_mut();
        if st.view.is_some() {
            return Err(err!(InvalidArgument, "a view cannot share another blob's memory"));
        }
        if src.count() != st.shape.count() {
            return Err(err!(
                Shape,
                "share_data needs equal counts: {} has {}, {} has {}",
                st.shape,
                st.shape.count(),
                src.shape,
                src.count()
            ));
        }
        if Arc::ptr_eq(&st.storage, &src.storage) && st.offset == src.offset {
            return Ok(());
        }
        if let Some(why) = self.busy_reason(&st) {
            return Err(err!(Busy, "cannot replace this blob's memory: {why}"));
        }
        let old = std::mem::replace(&mut st.storage, src.storage);
        st.offset = src.offset;
        st.capacity = src.shape.count();
        // The old memory goes after the lock (its release may run foreign code).
        drop(st);
        drop(old);
        Ok(())
    }

    /// Caffe `ShareDiff`: this blob's diff uses `other`'s diff memory.
    pub fn share_diff(&self, other: &Blob) -> Result<()> {
        self.diff()?.share_from(&other.diff()?)
    }

    /// The diff companion (Caffe): same dims and dtype, created on first
    /// use, reading as zeros until written. It follows this blob's reshapes.
    /// A view's diff is its own memory, not a view of its parent's diff.
    pub fn diff(&self) -> Result<Blob> {
        let mut slot = mutex(&self.inner.diff);
        if let Some(d) = slot.as_ref() {
            return Ok(d.clone());
        }
        let d = Blob::new_impl(&self.inner.engine, self.dtype(), self.shape(), true)?;
        *slot = Some(d.clone());
        Ok(d)
    }

    /// The diff if it was ever created.
    pub fn diff_if_created(&self) -> Option<Blob> {
        mutex(&self.inner.diff).clone()
    }

    /// True for a blob obtained through [`Blob::diff`].
    pub fn is_diff(&self) -> bool {
        self.inner.companion
    }
}

impl fmt::Debug for Blob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.state();
        write!(f, "Blob(dtype={}, shape={}, engine={}", self.dtype(), st.shape, self.engine().name())?;
        if st.view.is_some() {
            f.write_str(", view")?;
        }
        f.write_str(")")
    }
}

/// Checks that an `i64` from a caller is a non-negative count or position.
#[cold]
fn unreachable_desc() -> TensorDesc {
    // Only reachable if Shape's invariants (rank <= 32, count fits i64) broke.
    TensorDesc::new(DType::U8, &[], crate::layout::Layout::Scalar).unwrap_or_else(|_| panic!("a scalar desc is always valid"))
}

/// The error of dense-only operations on blobs with another layout.
pub(crate) fn needs_dense() -> crate::Error {
    err!(
        Unsupported,
        "this operation needs dense row-major data, but the blob has a blocked, strided or padded layout; reorder it into a dense blob first (reorder_from)"
    )
}

pub(crate) fn non_negative(v: i64, what: &str) -> Result<usize> {
    usize::try_from(v).map_err(|_| err!(OutOfRange, "{what} {v} is negative"))
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Blob>();
    is::<Error>();
}
