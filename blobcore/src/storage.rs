//! `Storage`: Caffe's SyncedMemory made safe.
//!
//! - Allocation is lazy: nothing is allocated until the first access, and
//!   the first access sees zeros. Allocations of 1 MiB and up are
//!   anonymous memory maps, so pages that are never touched cost no
//!   resident memory; smaller ones are heap blocks (zeroed when allocated).
//! - Host memory is 64-byte aligned, and page-aligned from one page up.
//! - The head records which side holds current data (Caffe's states). A
//!   CPU-engine storage only ever has the host side; the GPU engine adds a
//!   device side behind the same head.
//! - External memory (a C buffer, a NumPy array) can be wrapped with a
//!   release callback that runs exactly once when the last user lets go.
//! - Safe Rust access goes through a borrow table of byte ranges: any
//!   number of shared borrows, or one exclusive borrow, of overlapping
//!   ranges at a time. This is what keeps two windows over the same memory
//!   from handing out aliasing `&mut [T]`.

use crate::engine::gpu::{DevBuf, Gpu};
use crate::error::{err, Error, Result};
#[cfg(unix)]
use crate::shared::SharedMem;
use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Alignment of every heap allocation.
pub const ALIGN: usize = 64;
/// The alignment heap blocks are requested with (the System allocator's
/// own on x86_64 and aarch64, so they come from malloc/calloc).
const HEAP_ALIGN: usize = 16;
/// Allocations of at least this many bytes are page-aligned.
pub const PAGE: usize = 4096;
/// Allocations of at least this many bytes are anonymous memory maps,
/// zeroed by the kernel page by page on first touch; smaller ones are heap
/// blocks (a map costs a system call, a fault per page and an unmap:
/// microseconds, ten times a 1,000-element cast).
pub const MAP_BYTES: usize = 1 << 20;
/// Maps of at least this many bytes ask for transparent huge pages.
pub const HUGE_PAGE: usize = 2 << 20;

/// Where the current copy of the data lives (Caffe's SyncedMemory heads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Head {
    /// Nothing allocated yet; reads see zeros.
    Uninitialized = 0,
    /// The host copy is current (and the only one, or newer than the device's).
    HeadAtCpu = 1,
    /// The device copy is current.
    HeadAtGpu = 2,
    /// Host and device copies agree.
    Synced = 3,
}

impl Head {
    /// The name Python shows (`"uninitialized"`, `"cpu"`, `"gpu"`, `"synced"`).
    pub fn name(self) -> &'static str {
        match self {
            Head::Uninitialized => "uninitialized",
            Head::HeadAtCpu => "cpu",
            Head::HeadAtGpu => "gpu",
            Head::Synced => "synced",
        }
    }
}

/// A release callback for external memory; runs once when the storage is dropped.
pub type ReleaseFn = Box<dyn FnOnce() + Send>;

enum HostMem {
    /// Not yet allocated.
    None,
    /// A heap block (below [`MAP_BYTES`]): `ptr`, 64-byte aligned and
    /// page-aligned from one page up, is inside the block `base`
    /// allocated with `layout`.
    Heap { ptr: NonNull<u8>, base: NonNull<u8>, layout: Layout },
    /// A page-aligned anonymous map ([`MAP_BYTES`] and up).
    Mapped(memmap2::MmapMut),
    /// At most [`INLINE_BYTES`] inside the storage's own allocation
    /// ([`InlineBytes`]), 64-byte aligned; freed with the storage.
    Inline,
    /// Memory owned by someone else.
    External { ptr: NonNull<u8>, release: Option<ReleaseFn> },
    /// A memory file other processes may map too ([`crate::shared`]).
    #[cfg(unix)]
    Shared(Arc<SharedMem>),
}

struct State {
    head: Head,
    host: HostMem,
    /// The device copy (GPU engine only), allocated on first device use.
    device: Option<DevBuf>,
    /// Live exports (raw pointers handed to NumPy, DLPack, C) whose
    /// holders may write.
    pins: usize,
    /// Live exports whose holders only read.
    read_pins: usize,
    /// Live device exports (DLPack `kDLCUDA`) whose holders may write the
    /// device copy at any time: host reads fetch it again every time, and
    /// host writes are copied to it when they end.
    device_pins: usize,
    /// Live device exports whose holders only read: host writes are copied
    /// to the device when they end.
    device_read_pins: usize,
    /// Live borrows; under the same lock as the memory so that one lock
    /// acquisition both registers a borrow and yields the pointer.
    borrows: BorrowTable,
}

impl State {
    fn new(head: Head, host: HostMem) -> State {
        State { head, host, device: None, pins: 0, read_pins: 0, device_pins: 0, device_read_pins: 0, borrows: BorrowTable::default() }
    }

    /// True when someone outside the storage may write the host memory at
    /// any time: writable exports, wrapped memory, or exclusive host
    /// borrows. The device copy cannot be trusted then: GPU operations
    /// upload the host copy first (even when Synced) and leave the head at
    /// the host.
    fn host_writers(&self) -> bool {
        self.pins > 0 || self.host.foreign_writers() || self.borrows.entries.iter().any(|e| !e.device && e.exclusive)
    }

    /// True when someone outside the storage reads (or writes) the host
    /// memory: any export or host borrow, or wrapped memory. A kernel's
    /// writes are then copied back at once so that they never read stale
    /// data (with readers only, the copies then agree: Synced).
    fn host_users(&self) -> bool {
        self.host_writers() || self.read_pins > 0 || self.borrows.entries.iter().any(|e| !e.device)
    }

    /// True when a device export's holder may write the device copy at
    /// any time: the host copy is never trusted to be current.
    fn device_writers(&self) -> bool {
        self.device_pins > 0
    }

    /// True when a device export's holder reads the device copy: host
    /// writes must reach it.
    fn device_readers(&self) -> bool {
        self.device_pins + self.device_read_pins > 0
    }

    /// The ranges exclusive host borrows are writing, sorted.
    fn host_busy(&self) -> Vec<(usize, usize)> {
        let mut busy: Vec<(usize, usize)> = self.borrows.entries.iter().filter(|e| e.exclusive && !e.device).map(|e| (e.start, e.end)).collect();
        busy.sort_unstable();
        busy
    }
}

impl HostMem {
    /// True when memory this storage does not own may be written behind
    /// its back: wrapped memory, or shared memory other processes write.
    fn foreign_writers(&self) -> bool {
        match self {
            HostMem::External { .. } => true,
            #[cfg(unix)]
            HostMem::Shared(m) => !m.read_only(),
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct BorrowEntry {
    id: u64,
    start: usize,
    end: usize,
    exclusive: bool,
    /// Held by a GPU kernel rather than host code.
    device: bool,
    /// A hold ([`Storage::hold`]): the thread whose own accesses it lets
    /// through (every other access clashes with it), as [`this_thread`].
    holder: Option<u64>,
}

#[derive(Default)]
struct BorrowTable {
    next_id: u64,
    entries: Vec<BorrowEntry>,
}

/// A block of element memory shared (through `Arc`) by a blob, its views
/// and anything that exports it.
pub struct Storage {
    len: usize,
    /// Wrapped memory its owner lent read-only (a read-only NumPy array,
    /// a read-only DLPack tensor, a pickle buffer): every write is refused.
    read_only: bool,
    state: Mutex<State>,
    /// The GPU of the engine that owns this storage, if any.
    gpu: Option<Arc<Gpu>>,
    /// The memory is part of a memory-mapped file ([`crate::mapped`]): it
    /// cannot be replaced by a reallocation.
    file_backed: bool,
    /// The host memory's address once it exists (0 before): set once, under
    /// the state lock, and never changed (a storage's memory does not move),
    /// so overlap checks read it without locking.
    addr: AtomicUsize,
    /// True once the memory is settled at the host for good: a storage
    /// without a GPU whose host memory exists and whose head is at the
    /// host can never move its head again, so exports pin it without the
    /// state lock and without counting ([`Storage::pin_host`]; nothing
    /// reads the pin counts of a storage without a device copy).
    settled: AtomicBool,
    /// The bytes of a storage of at most [`INLINE_BYTES`] (`HostMem::Inline`).
    inline: InlineBytes,
}

/// Storages of at most this many bytes keep them inside their own
/// allocation (`HostMem::Inline`): a small blob then costs one allocation
/// instead of two (core `from_bytes 8` 60-62 -> 49-50 ns on the Zen 4 VM
/// of docs/speed-history.md's session 88).
const INLINE_BYTES: usize = 64;

/// Whether a storage of `len` bytes keeps them inside its record (an
/// empty one has none to keep; the heap path gives it its aligned
/// one-byte block, as before).
#[inline(always)]
const fn fits_inline(len: usize) -> bool {
    len > 0 && len <= INLINE_BYTES
}

/// Room for [`INLINE_BYTES`] at [`ALIGN`]: the field sits at a multiple of
/// [`HEAP_ALIGN`] (its own alignment), so at most `ALIGN - HEAP_ALIGN`
/// bytes go before the first aligned address. Written only through
/// [`InlineBytes::ptr`], under the storage's rules for its bytes (see
/// `Sync for Storage`).
#[repr(C, align(16))]
struct InlineBytes(std::cell::UnsafeCell<[std::mem::MaybeUninit<u8>; INLINE_BYTES + ALIGN - HEAP_ALIGN]>);

const _: () = assert!(std::mem::align_of::<InlineBytes>() == HEAP_ALIGN);

impl InlineBytes {
    /// Uninitialised room (nothing reads it before `fill` or the zeroing
    /// of a first touch writes it).
    const fn new() -> InlineBytes {
        InlineBytes(std::cell::UnsafeCell::new([std::mem::MaybeUninit::uninit(); INLINE_BYTES + ALIGN - HEAP_ALIGN]))
    }

    /// The first [`ALIGN`]-aligned address inside the room; the
    /// [`INLINE_BYTES`] from it lie inside it (see the type's docs).
    #[inline(always)]
    fn ptr(&self) -> *mut u8 {
        let b = self.0.get() as *mut u8;
        // In bounds: `b` is a multiple of HEAP_ALIGN (the type's
        // alignment), so the step is at most ALIGN - HEAP_ALIGN and the
        // room holds INLINE_BYTES after it. `wrapping_add` keeps the
        // pointer's provenance over the whole room.
        b.wrapping_add(b.addr().wrapping_neg() & (ALIGN - 1))
    }
}

// SAFETY: the raw pointers inside `HostMem` are owned by the storage (or
// by the external owner, who promised they stay valid until release);
// the inline bytes are the storage's own and obey the same rules.
// All mutation of the pointed-to bytes from safe Rust goes through the
// borrow table, which forbids overlapping exclusive borrows across
// threads; the state itself is behind a Mutex.
unsafe impl Send for Storage {}
// SAFETY: see `Send`; shared access to the state is synchronised by Mutexes.
unsafe impl Sync for Storage {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data
    // inconsistent (every critical section is a few field writes), so a
    // poisoned lock is simply taken over.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Storage {
    /// A storage of `len` bytes that allocates on first access.
    pub fn lazy(len: usize) -> Arc<Storage> {
        Storage::lazy_on(len, None)
    }

    /// A lazy storage that also keeps a device copy on `gpu`.
    pub(crate) fn lazy_on(len: usize, gpu: Option<Arc<Gpu>>) -> Arc<Storage> {
        Storage::in_place(|| Storage { len, read_only: false, state: Mutex::new(State::new(Head::Uninitialized, HostMem::None)), gpu, file_backed: false, settled: AtomicBool::new(false), addr: AtomicUsize::new(0), inline: InlineBytes::new() })
    }

    /// A storage of `len` host bytes that `fill` writes, given their
    /// address, before anyone else can see them (a small blob's copy: one
    /// allocation, no lazy step, no second lock), with the head at the
    /// host; a device copy on `gpu` is made on first device use.
    ///
    /// # Safety
    /// `fill` must write every one of the `len` bytes at the address it is
    /// given (they are not zeroed first) and nothing outside them.
    pub(crate) unsafe fn host_filled_on(len: usize, gpu: Option<Arc<Gpu>>, fill: impl FnOnce(*mut u8)) -> Result<Arc<Storage>> {
        if fits_inline(len) {
            let st = Storage::in_place(|| Storage { len, read_only: false, state: Mutex::new(State::new(Head::HeadAtCpu, HostMem::Inline)), settled: AtomicBool::new(gpu.is_none()), gpu, file_backed: false, addr: AtomicUsize::new(0), inline: InlineBytes::new() });
            let p = st.inline.ptr();
            // `p` addresses INLINE_BYTES >= len writable bytes of a storage
            // no one else holds yet; the caller's contract does the rest.
            fill(p);
            // Before the storage is handed out: the `Arc`'s publication
            // orders it for other threads.
            st.addr.store(p as usize, Ordering::Relaxed);
            return Ok(st);
        }
        // Not zeroed: `fill` writes every byte.
        let mut host = Storage::allocate(len, false)?;
        let p = match &mut host {
            HostMem::Heap { ptr, .. } => *ptr,
            HostMem::Mapped(m) => NonNull::new(m.as_mut_ptr()).ok_or_else(|| err!(Internal, "memory map returned null"))?,
            _ => return Err(err!(Internal, "a fresh allocation is neither a heap block nor a map")),
        };
        // `p` addresses `len` writable bytes just allocated (an allocation
        // is never shorter than asked for); the caller's contract does the rest.
        fill(p.as_ptr());
        Ok(Storage::in_place(|| Storage { len, read_only: false, state: Mutex::new(State::new(Head::HeadAtCpu, host)), settled: AtomicBool::new(gpu.is_none()), gpu, file_backed: false, addr: AtomicUsize::new(p.as_ptr() as usize), inline: InlineBytes::new() }))
    }

    /// A new `Arc` of the storage `make` builds, called once its block is
    /// allocated so that the storage is written straight into it:
    /// `Arc::new` built the storage (184 bytes then) on the stack and copied it
    /// over with a `memcpy` call on every small blob's copy.
    #[inline(always)]
    fn in_place(make: impl FnOnce() -> Storage) -> Arc<Storage> {
        let slot = Arc::into_raw(Arc::<Storage>::new_uninit()).cast_mut();
        // SAFETY: `slot` comes from `into_raw` of an `Arc` made just now,
        // so it is the only handle, nothing else reads or writes the value,
        // and the pointer may write it; `write` initialises it whole before
        // `from_raw` takes the handle back and `assume_init` asserts it.
        unsafe {
            (*slot).write(make());
            Arc::from_raw(slot).assume_init()
        }
    }

    /// Wraps `len` bytes at `ptr` owned by the caller; `release` runs once
    /// when the last reference goes.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` bytes until
    /// `release` is called (or forever if it is `None`), and must not be
    /// freed by anyone else meanwhile.
    pub unsafe fn external(ptr: NonNull<u8>, len: usize, release: Option<ReleaseFn>) -> Arc<Storage> {
        // SAFETY: forwarded contract.
        unsafe { Storage::external_on(ptr, len, release, None, false) }
    }

    /// [`Storage::external`] that also keeps a device copy on `gpu`.
    ///
    /// # Safety
    /// As [`Storage::external`].
    /// With `read_only`, `ptr` need only be valid for reads: every write
    /// path ([`Storage::check_writable`]) refuses.
    pub(crate) unsafe fn external_on(ptr: NonNull<u8>, len: usize, release: Option<ReleaseFn>, gpu: Option<Arc<Gpu>>, read_only: bool) -> Arc<Storage> {
        Storage::in_place(|| Storage { len, read_only, state: Mutex::new(State::new(Head::HeadAtCpu, HostMem::External { ptr, release })), settled: AtomicBool::new(gpu.is_none()), gpu, file_backed: false, addr: AtomicUsize::new(ptr.as_ptr() as usize), inline: InlineBytes::new() })
    }

    /// [`Storage::external_on`] for bytes of a memory-mapped file.
    ///
    /// # Safety
    /// As [`Storage::external_on`].
    pub(crate) unsafe fn file_on(ptr: NonNull<u8>, len: usize, release: Option<ReleaseFn>, gpu: Option<Arc<Gpu>>, read_only: bool) -> Arc<Storage> {
        Storage::in_place(|| Storage { len, read_only, state: Mutex::new(State::new(Head::HeadAtCpu, HostMem::External { ptr, release })), settled: AtomicBool::new(gpu.is_none()), gpu, file_backed: true, addr: AtomicUsize::new(ptr.as_ptr() as usize), inline: InlineBytes::new() })
    }

    /// A storage on shared memory (see [`crate::shared`]), read-only when
    /// the map is or `read_only` asks. Its host memory exists from the start.
    #[cfg(unix)]
    pub(crate) fn shared_on(mem: Arc<SharedMem>, gpu: Option<Arc<Gpu>>, read_only: bool) -> Arc<Storage> {
        let addr = mem.ptr().as_ptr() as usize;
        let (len, read_only) = (mem.len(), read_only || mem.read_only());
        Storage::in_place(|| Storage { len, read_only, state: Mutex::new(State::new(Head::HeadAtCpu, HostMem::Shared(mem))), settled: AtomicBool::new(gpu.is_none()), gpu, file_backed: false, addr: AtomicUsize::new(addr), inline: InlineBytes::new() })
    }

    /// The shared memory this storage lives on, if it does.
    #[cfg(unix)]
    pub(crate) fn shared_mem(&self) -> Option<Arc<SharedMem>> {
        match &lock(&self.state).host {
            HostMem::Shared(m) => Some(Arc::clone(m)),
            _ => None,
        }
    }

    /// True when the memory is a shared memory file other processes may map.
    pub fn is_shared(&self) -> bool {
        #[cfg(unix)]
        return matches!(lock(&self.state).host, HostMem::Shared(_));
        #[cfg(not(unix))]
        false
    }

    /// The GPU whose device copy this storage keeps, if any.
    pub(crate) fn gpu(&self) -> Option<&Arc<Gpu>> {
        self.gpu.as_ref()
    }

    /// True when the memory is part of a memory-mapped file.
    pub fn is_file_backed(&self) -> bool {
        self.file_backed
    }

    /// False for memory lent read-only (NumPy's `writeable` flag).
    pub fn is_writable(&self) -> bool {
        !self.read_only
    }

    /// `Error::ReadOnly` when `write` is asked of read-only memory.
    pub(crate) fn check_writable(&self, write: bool) -> Result<()> {
        if write && self.read_only {
            return Err(err!(ReadOnly, "the blob is read-only (it wraps memory lent read-only); copy() gives a writable blob"));
        }
        Ok(())
    }

    /// Size in bytes (the capacity of every blob that uses it).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the storage holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The current head.
    pub fn head(&self) -> Head {
        lock(&self.state).head
    }

    /// The address of the host memory, if it exists yet (nothing is
    /// allocated): what overlap checks compare ([`crate::overlap`]).
    /// A storage over device memory someone else owns (a DLPack `kDLCUDA`
    /// import): the device copy is current, host memory comes on first
    /// host use. Its owner's release runs when the buffer's last user
    /// lets go (see `CudaMem`).
    pub(crate) fn device_only(len: usize, gpu: Arc<Gpu>, buf: DevBuf, read_only: bool) -> Arc<Storage> {
        let mut st = State::new(Head::HeadAtGpu, HostMem::None);
        st.device = Some(buf);
        Storage::in_place(|| Storage { len, read_only, state: Mutex::new(st), gpu: Some(gpu), file_backed: false, settled: AtomicBool::new(false), addr: AtomicUsize::new(0), inline: InlineBytes::new() })
    }

    /// The device address of the CUDA copy, if there is one.
    pub(crate) fn cuda_addr(&self) -> Option<usize> {
        lock(&self.state).device.as_ref().and_then(|d| d.cuda()).map(|m| m.ptr() as usize)
    }

    pub(crate) fn host_addr(&self) -> Option<usize> {
        match self.addr.load(Ordering::Acquire) {
            0 => None,
            a => Some(a),
        }
    }

    /// True once host memory exists (allocated or external).
    pub fn is_host_allocated(&self) -> bool {
        !matches!(lock(&self.state).host, HostMem::None)
    }

    /// True when the memory belongs to a caller (wrapped, not allocated here).
    pub fn is_external(&self) -> bool {
        matches!(lock(&self.state).host, HostMem::External { .. })
    }

    /// Host memory of `len` bytes at [`ALIGN`], reading as zeros when
    /// `zeroed` (else its caller writes every byte before anyone reads).
    ///
    /// More than the machine's memory and swap together is `OutOfMemory`
    /// at once, on every machine: where the kernel overcommits it would
    /// grant the address space, and a copy into it would end with the
    /// process killed.
    ///
    /// Inline, the small heap path hands its block back in registers: out
    /// of line, the `HostMem` came back through memory in 8-byte stores
    /// that the caller read back in 16-byte loads, a store-forwarding
    /// stall on every small blob's copy (a third of `host_filled_on`'s
    /// samples under `perf`).
    #[inline(always)]
    fn allocate(len: usize, zeroed: bool) -> Result<HostMem> {
        if len >= MAP_BYTES {
            return Storage::allocate_map(len);
        }
        // An over-allocated block at the allocator's own 16-byte
        // alignment, aligned up by hand: `posix_memalign` for 64 bytes
        // splits chunks on every call and cost about a quarter of a
        // small blob's copy (glibc). Plain `malloc`, zeroed by hand
        // below where asked: glibc's `calloc` skips the per-thread
        // cache that `free` fills, so every calloc and free of a small
        // blob took the allocator's slow paths (about a tenth of
        // `s.copy()` from Python).
        // From one page up the allocator's own aligned allocation
        // (page-aligned, as maps are).
        let (layout, align) = if len >= PAGE {
            (Layout::from_size_align(len, PAGE), PAGE)
        } else {
            (Layout::from_size_align(len.max(1) + (ALIGN - HEAP_ALIGN), HEAP_ALIGN), ALIGN)
        };
        // Below `MAP_BYTES` the size cannot overflow and both alignments
        // are powers of two: the error is kept for the rule, not the case.
        let Ok(layout) = layout else { return Err(Storage::heap_refused(len)) };
        // SAFETY: the layout has a non-zero size.
        let Some(base) = NonNull::new(unsafe { alloc::alloc(layout) }) else { return Err(Storage::heap_refused(len)) };
        let skip = base.as_ptr().align_offset(align);
        if skip > layout.size() - len {
            // Cannot happen for a block of the layout's alignment;
            // checked so that `ptr` below stays inside it whatever the
            // allocator does.
            // SAFETY: allocated just above with this layout.
            unsafe { alloc::dealloc(base.as_ptr(), layout) };
            return Err(Storage::misaligned(layout));
        }
        // SAFETY: skip + len <= layout.size(), so ptr..ptr+len lies in the block.
        let ptr = unsafe { NonNull::new_unchecked(base.as_ptr().add(skip)) };
        if zeroed {
            // SAFETY: ptr..ptr+len lies in the block just allocated
            // (above); only these bytes are ever read.
            unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, len) };
        }
        Ok(HostMem::Heap { ptr, base, layout })
    }

    /// [`Storage::allocate`] from [`MAP_BYTES`] up: a page-aligned
    /// anonymous map, refused at once past the machine's memory and swap.
    fn allocate_map(len: usize) -> Result<HostMem> {
        if crate::machine_memory::exceeded_by(len) {
            return Err(err!(OutOfMemory, "cannot allocate {len} bytes: more than this machine's memory and swap"));
        }
        // Anonymous maps are zero-filled by the kernel page by page on
        // first touch, so untouched pages cost no resident memory.
        let map = memmap2::MmapMut::map_anon(len).map_err(|e| err!(OutOfMemory, "cannot map {len} bytes: {e}"))?;
        #[cfg(target_os = "linux")]
        if len >= HUGE_PAGE {
            // Transparent huge pages cut TLB misses for strided kernels
            // (transposes); purely advisory, so failure is ignored.
            let _ = map.advise(memmap2::Advice::HugePage);
        }
        Ok(HostMem::Mapped(map))
    }

    /// The allocator's refusal of a heap block of `len` bytes.
    #[cold]
    #[inline(never)]
    fn heap_refused(len: usize) -> Error {
        err!(OutOfMemory, "cannot allocate {len} bytes")
    }

    /// A block the allocator returned below the layout's alignment.
    #[cold]
    #[inline(never)]
    fn misaligned(layout: Layout) -> Error {
        err!(Internal, "the allocator returned a block not {}-byte aligned", layout.align())
    }

    /// The host base pointer, allocating on first use; when the device
    /// copy is newer (HeadAtGpu) it is copied back first and the head
    /// becomes Synced.
    #[inline]
    fn host_ptr_locked(&self, st: &mut State) -> Result<NonNull<u8>> {
        let p = self.host_base(st)?;
        if st.head == Head::HeadAtGpu {
            self.fetch_from_device(st, p)?;
        }
        Ok(p)
    }

    /// [`Storage::host_ptr_locked`]'s copy back from the device into the
    /// host memory at `p` (out of line: host-only blobs never need it, and
    /// inlined it made every small host access slower).
    #[inline(never)]
    fn fetch_from_device(&self, st: &mut State, p: NonNull<u8>) -> Result<()> {
        if let (Some(gpu), Some(dev)) = (&self.gpu, &st.device) {
            // SAFETY: p is valid for len bytes and the storage lock is
            // held; no host borrow exists while the head is at the GPU
            // (GPU operations leave it there only without host users),
            // except under a writable device export, whose host
            // writers' bytes are skipped here.
            let host = unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), self.len) };
            if st.device_writers() {
                let mut at = 0;
                for (s, e) in st.host_busy().into_iter().chain([(self.len, self.len)]) {
                    if at < s {
                        gpu.download(dev, at, &mut host[at..s])?;
                    }
                    at = at.max(e);
                }
            } else {
                gpu.download(dev, 0, host)?;
            }
        }
        // Under a writable device export the device stays the
        // reference: the next host access fetches it again.
        if !st.device_writers() {
            st.head = Head::Synced;
        }
        Ok(())
    }

    /// Copies host bytes `[start, end)` to the device copy after a host
    /// write, when a device export reads or writes it (the export's holder
    /// must see blobcore's writes, as a NumPy view does). On failure the
    /// host stays the reference.
    #[inline]
    fn push_to_device(&self, st: &mut State, start: usize, end: usize) {
        if st.device_readers() && start < end {
            self.push_to_device_now(st, start, end);
        }
    }

    /// The upload behind [`Storage::push_to_device`] (out of line, as
    /// [`Storage::fetch_from_device`]).
    #[inline(never)]
    fn push_to_device_now(&self, st: &mut State, start: usize, end: usize) {
        let base = match &st.host {
            HostMem::None => return,
            HostMem::Inline => self.inline.ptr() as *const u8,
            HostMem::Heap { ptr, .. } | HostMem::External { ptr, .. } => ptr.as_ptr() as *const u8,
            #[cfg(unix)]
            HostMem::Shared(m) => m.ptr().as_ptr() as *const u8,
            HostMem::Mapped(m) => m.as_ptr(),
        };
        let (Some(gpu), Some(dev)) = (&self.gpu, &st.device) else { return };
        // SAFETY: [start, end) lies inside the storage (a borrow's range
        // or a checked one), `base` addresses its len bytes, and the
        // storage lock is held.
        let host = unsafe { std::slice::from_raw_parts(base.add(start), end - start) };
        st.head = match gpu.upload(dev, start, host) {
            Ok(()) if st.device_writers() => Head::HeadAtGpu,
            Ok(()) if !st.host_writers() => Head::Synced,
            _ => Head::HeadAtCpu,
        };
    }

    /// Hands the device copy out raw, for a DLPack `kDLCUDA` export: makes
    /// it current (uploading a newer host copy), and counts the pin until
    /// it drops. A writable pin moves the head to the device, which stays
    /// the reference while the pin lives (see `device_pins`).
    pub(crate) fn pin_device(self: &Arc<Self>, write: bool) -> Result<(Pin, DevBuf)> {
        let gpu = self.gpu.as_ref().ok_or_else(|| err!(Internal, "device export of a storage without a GPU"))?;
        self.check_writable(write)?;
        let mut st = lock(&self.state);
        if st.device.is_none() {
            st.device = Some(gpu.alloc(self.len)?);
        }
        if st.head == Head::HeadAtCpu || (st.head == Head::Synced && st.host_writers()) {
            let p = self.host_base(&mut st)?;
            // SAFETY: p is valid for len bytes and the storage lock is held.
            let host = unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len) };
            let dev = st.device.as_ref().ok_or_else(|| err!(Internal, "device buffer missing"))?;
            gpu.upload(dev, 0, host)?;
            st.head = Head::Synced;
        }
        if write {
            st.head = Head::HeadAtGpu;
            st.device_pins += 1;
        } else {
            if st.head == Head::Uninitialized {
                st.head = Head::Synced;
            }
            st.device_read_pins += 1;
        }
        let buf = st.device.clone().ok_or_else(|| err!(Internal, "device buffer missing"))?;
        Ok((Pin::new(Arc::clone(self), write, true, true), buf))
    }

    fn host_base(&self, st: &mut State) -> Result<NonNull<u8>> {
        let fresh = matches!(st.host, HostMem::None);
        if fresh {
            if fits_inline(self.len) {
                // SAFETY: the room holds INLINE_BYTES >= len bytes from
                // `ptr`; nothing reads or writes them yet (the host memory
                // did not exist), and the state lock is held.
                unsafe { std::ptr::write_bytes(self.inline.ptr(), 0, self.len) };
                st.host = HostMem::Inline;
            } else {
                st.host = Storage::allocate(self.len, true)?;
            }
        }
        let p = match &mut st.host {
            HostMem::None => return Err(err!(Internal, "host memory missing after allocation")),
            HostMem::Inline => NonNull::new(self.inline.ptr()).ok_or_else(|| err!(Internal, "a storage's own bytes at address 0"))?,
            HostMem::Heap { ptr, .. } => *ptr,
            HostMem::External { ptr, .. } => *ptr,
            #[cfg(unix)]
            HostMem::Shared(m) => m.ptr(),
            HostMem::Mapped(m) => NonNull::new(m.as_mut_ptr())
                .ok_or_else(|| err!(Internal, "memory map returned null"))?,
        };
        if fresh {
            self.addr.store(p.as_ptr() as usize, Ordering::Release);
        }
        Ok(p)
    }

    /// Hands the host memory out raw (an export, a held buffer): makes the
    /// host copy current, moves the head to the host when the holder may
    /// write (`write`) or nothing existed yet, and counts the pin until it
    /// drops — all under one lock, so no kernel can finish in between and
    /// leave the device newer than memory someone now holds.
    ///
    /// The settled case (every export of a CPU blob's memory once it
    /// exists) is kept small and apart from the locked one, which is out
    /// of line: `to_dlpack + delete` 45-46 -> 42 ns on session 85's Zen 4
    /// VM (`examples/percall.rs`). Forcing it inline made that 58 ns.
    #[inline]
    pub(crate) fn pin_host(self: Arc<Self>, write: bool) -> Result<(Pin, NonNull<u8>)> {
        self.check_writable(write)?;
        if self.settled.load(Ordering::Acquire) {
            // Settled: the head stays at the host and the address never
            // changes, so there is nothing to make current or to count.
            if let Some(p) = self.host_addr().and_then(|a| NonNull::new(a as *mut u8)) {
                return Ok((Pin::new(self, write, false, false), p));
            }
        }
        self.pin_host_counted(write)
    }

    /// [`Storage::pin_host`] of a storage not settled yet: under its lock.
    #[inline(never)]
    fn pin_host_counted(self: Arc<Self>, write: bool) -> Result<(Pin, NonNull<u8>)> {
        let mut st = lock(&self.state);
        let p = self.host_ptr_locked(&mut st)?;
        if write || st.head == Head::Uninitialized {
            st.head = Head::HeadAtCpu;
        }
        if write {
            st.pins += 1;
        } else {
            st.read_pins += 1;
        }
        if self.gpu.is_none() {
            // The host memory exists and the head is at the host now.
            self.settled.store(true, Ordering::Release);
        }
        drop(st);
        // The caller's reference becomes the pin's (no count to touch).
        Ok((Pin::new(self, write, false, true), p))
    }

    /// Device access to bytes `[start, end)` for a GPU kernel: registers a
    /// device borrow (Busy on a clash, as host operations), allocates the
    /// device buffer on first use and uploads the host copy when it is
    /// newer. Call [`Storage::device_done`] after queueing the kernel.
    pub(crate) fn device(self: &Arc<Self>, start: usize, end: usize, write: bool) -> Result<(Borrow, DevBuf)> {
        let gpu = self.gpu.as_ref().ok_or_else(|| err!(Internal, "device access to a storage without a GPU"))?;
        self.check_writable(write)?;
        let mut st = lock(&self.state);
        Self::check_clash(&st.borrows, self.len, start, end, write)?;
        if st.device.is_none() {
            st.device = Some(gpu.alloc(self.len)?);
        }
        let shared = st.host_writers();
        if st.head == Head::HeadAtCpu || (shared && st.head == Head::Synced) {
            let p = self.host_base(&mut st)?;
            // SAFETY: p is valid for len bytes and the storage lock is held.
            let host = unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len) };
            let dev = st.device.as_ref().ok_or_else(|| err!(Internal, "device buffer missing"))?;
            // Bytes being written elsewhere are skipped: by a host guard
            // (the host stays authoritative while it lives, so the device
            // copy of them is never used), or by a kernel in flight on
            // another thread (uploading stale host bytes there would undo
            // its result). They are not this kernel's: the borrows clash
            // otherwise. A hold writes nothing itself (the accesses made
            // under it register their own borrows), so its bytes upload.
            let mut busy: Vec<(usize, usize)> =
                st.borrows.entries.iter().filter(|e| e.exclusive && e.holder.is_none()).map(|e| (e.start, e.end)).collect();
            if busy.is_empty() {
                gpu.upload(dev, 0, host)?;
            } else {
                busy.sort_unstable();
                let mut at = 0usize;
                for (s, e) in busy.into_iter().chain([(self.len, self.len)]) {
                    // Whole words strictly outside the busy ranges.
                    let (lo, hi) = (at.div_ceil(4) * 4, s / 4 * 4);
                    if lo < hi {
                        gpu.upload(dev, lo, &host[lo..hi])?;
                    }
                    at = at.max(e);
                }
            }
            st.head = if shared { Head::HeadAtCpu } else { Head::Synced };
        }
        let buf = st.device.clone().ok_or_else(|| err!(Internal, "device buffer missing"))?;
        let id = Self::register(&mut st.borrows, self.len, start, end, write, true)?;
        drop(st);
        Ok((Borrow { storage: Arc::clone(self), id }, buf))
    }

    /// Records what a GPU kernel did to `[start, end)`: without host users
    /// the head moves to the GPU (after a write); with them the written
    /// bytes are copied back at once and the host stays authoritative.
    pub(crate) fn device_done(&self, start: usize, end: usize, write: bool) -> Result<()> {
        let mut st = lock(&self.state);
        // The host is newer somewhere when it is shared, or when a host
        // write on another thread moved the head to the CPU while this
        // kernel ran (disjoint bytes: the borrows saw to that). Either way
        // the host must stay authoritative, so the kernel's bytes go there.
        let writers = st.host_writers() || st.head == Head::HeadAtCpu;
        if st.host_users() || writers {
            if write {
                let p = self.host_base(&mut st)?;
                if let (Some(gpu), Some(dev)) = (&self.gpu, &st.device) {
                    // SAFETY: [start, end) lies inside the storage (checked
                    // when the device borrow was registered), no host
                    // borrow overlaps it (the device borrow excludes them),
                    // and the lock is held.
                    let host = unsafe { std::slice::from_raw_parts_mut(p.as_ptr().add(start), end - start) };
                    gpu.download(dev, start, host)?;
                }
                // With readers only, both copies now agree.
                st.head = if writers { Head::HeadAtCpu } else { Head::Synced };
            } else if writers && st.head == Head::Synced {
                st.head = Head::HeadAtCpu;
            }
        } else if write || st.head == Head::Uninitialized {
            st.head = Head::HeadAtGpu;
        }
        Ok(())
    }

    /// The host pointer holding current data, allocating (zeroed) on first
    /// use. The head becomes at least HeadAtCpu (Synced stays Synced).
    pub fn host_read(&self) -> Result<NonNull<u8>> {
        let mut st = lock(&self.state);
        let p = self.host_ptr_locked(&mut st)?;
        if st.head == Head::Uninitialized {
            st.head = Head::HeadAtCpu;
        }
        Ok(p)
    }

    /// The host pointer for writing, allocating on first use; the head
    /// moves to the host.
    pub fn host_write(&self) -> Result<NonNull<u8>> {
        self.check_writable(true)?;
        let mut st = lock(&self.state);
        let p = self.host_ptr_locked(&mut st)?;
        st.head = Head::HeadAtCpu;
        Ok(p)
    }

    /// Registers a borrow of bytes `[start, end)`. Shared borrows may
    /// overlap each other; an exclusive one overlaps nothing.
    pub fn borrow(self: &Arc<Self>, start: usize, end: usize, exclusive: bool) -> Result<Borrow> {
        self.check_writable(exclusive)?;
        let mut st = lock(&self.state);
        let id = Self::register(&mut st.borrows, self.len, start, end, exclusive, false)?;
        Ok(Borrow { storage: Arc::clone(self), id })
    }

    /// Registers a borrow of `[start, end)` and returns it with the host
    /// base pointer, under a single lock: the fast path of every operation.
    /// `write` moves the head to the host (as [`Storage::host_write`]);
    /// otherwise the head becomes at least HeadAtCpu (as [`Storage::host_read`]).
    pub fn acquire(self: Arc<Self>, start: usize, end: usize, exclusive: bool, write: bool) -> Result<(Borrow, NonNull<u8>)> {
        self.check_writable(exclusive || write)?;
        let mut st = lock(&self.state);
        let id = Self::register(&mut st.borrows, self.len, start, end, exclusive, false)?;
        let p = match self.host_ptr_locked(&mut st) {
            Ok(p) => p,
            Err(e) => {
                st.borrows.entries.retain(|b| b.id != id);
                return Err(e);
            }
        };
        if write || st.head == Head::Uninitialized {
            st.head = Head::HeadAtCpu;
        }
        drop(st);
        Ok((Borrow { storage: self, id }, p))
    }

    /// Runs `f` on the host base pointer while holding the storage lock,
    /// after checking that no live borrow conflicts with `[start, end)`
    /// (nothing is registered: the lock itself keeps others out). For
    /// short operations only: everyone else touching this storage waits.
    pub fn with_locked<R>(&self, start: usize, end: usize, exclusive: bool, f: impl FnOnce(NonNull<u8>) -> R) -> Result<R> {
        self.check_writable(exclusive)?;
        let mut st = lock(&self.state);
        Self::check_clash(&st.borrows, self.len, start, end, exclusive)?;
        let p = self.host_ptr_locked(&mut st)?;
        if exclusive || st.head == Head::Uninitialized {
            st.head = Head::HeadAtCpu;
        }
        let out = f(p);
        if exclusive {
            self.push_to_device(&mut st, start, end);
        }
        Ok(out)
    }

    fn check_clash(t: &BorrowTable, len: usize, start: usize, end: usize, exclusive: bool) -> Result<()> {
        if start > end || end > len {
            return Err(err!(Internal, "borrow [{start}, {end}) outside storage of {len} bytes"));
        }
        if start < end {
            // A hold lets its own thread through (the thread id is asked
            // for only when an overlapping hold exists).
            let clash = t.entries.iter().find(|e| {
                e.start < end && start < e.end && (exclusive || e.exclusive) && e.holder.is_none_or(|h| h != this_thread())
            });
            if let Some(e) = clash {
                let (mine, theirs) = (
                    if exclusive { "written" } else { "read" },
                    if e.exclusive { "being written" } else { "being read" },
                );
                return Err(err!(
                    Busy,
                    "memory cannot be {mine}: bytes [{}, {}) are {theirs} through a live guard or view",
                    e.start,
                    e.end
                ));
            }
        }
        Ok(())
    }

    fn register(t: &mut BorrowTable, len: usize, start: usize, end: usize, exclusive: bool, device: bool) -> Result<u64> {
        Self::check_clash(t, len, start, end, exclusive)?;
        t.next_id += 1;
        let id = t.next_id;
        t.entries.push(BorrowEntry { id, start, end, exclusive, device, holder: None });
        Ok(id)
    }

    /// Holds bytes `[start, end)` for the calling thread: every other
    /// thread's access to them is `Busy` until the hold is dropped, while
    /// this thread's own accesses go through (each still registers and
    /// checks against everything else). What a read-modify-write of
    /// memory no single borrow can cover (a copy of a strided or blocked
    /// blob's values, worked on, copied back) holds, so that no other
    /// write lands in between and is overwritten. Fails with `Busy` when
    /// anything else borrows those bytes now, `ReadOnly` for read-only
    /// memory.
    pub(crate) fn hold(self: &Arc<Self>, start: usize, end: usize) -> Result<Borrow> {
        self.check_writable(true)?;
        let mut st = lock(&self.state);
        // Marked as a device borrow: releasing it pushes nothing to a
        // device copy (the accesses made under it did that themselves).
        let id = Self::register(&mut st.borrows, self.len, start, end, true, true)?;
        if let Some(e) = st.borrows.entries.last_mut() {
            e.holder = Some(this_thread());
        }
        Ok(Borrow { storage: Arc::clone(self), id })
    }

    fn release_borrow(&self, id: u64) {
        let mut st = lock(&self.state);
        // Borrows are mostly released in reverse order: look from the end.
        if let Some(i) = st.borrows.entries.iter().rposition(|e| e.id == id) {
            let e = st.borrows.entries.swap_remove(i);
            if e.exclusive && !e.device {
                self.push_to_device(&mut st, e.start, e.end);
            }
        }
    }

    /// Number of live borrows (guards) of this storage.
    pub fn borrow_count(&self) -> usize {
        lock(&self.state).borrows.entries.len()
    }
}

/// A number naming the calling thread for holds, never reused: a
/// constant-initialized thread-local (no allocation, no destructor, unlike
/// `std::thread::current`, whose handle a process's main thread never
/// frees).
fn this_thread() -> u64 {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local!(static ID: Cell<u64> = const { Cell::new(0) });
    ID.with(|id| match id.get() {
        0 => {
            let fresh = NEXT.fetch_add(1, Ordering::Relaxed);
            id.set(fresh);
            fresh
        }
        known => known,
    })
}

impl Drop for Storage {
    fn drop(&mut self) {
        let st = self.state.get_mut().unwrap_or_else(|e| e.into_inner());
        if self.gpu.as_ref().is_some_and(|g| g.forked()) {
            // A child forked from the process that opened the GPU: the
            // device buffer (and an imported tensor's deleter behind it)
            // belongs to the parent's driver state, so it is left as it is.
            std::mem::forget(st.device.take());
        }
        // Matched in place, not moved out (a 32-byte copy read back at
        // once): a heap block's fields are plain values with no drop of
        // their own, a release callback is taken out to run, and a map
        // goes with the field's own drop after this.
        match &mut st.host {
            &mut HostMem::Heap { base, layout, .. } => {
                // SAFETY: allocated by `alloc` with this layout (`allocate`) and
                // freed only here, once: the storage is going.
                unsafe { alloc::dealloc(base.as_ptr(), layout) }
            }
            HostMem::External { release, .. } => {
                if let Some(release) = release.take() {
                    // A panicking callback must not abort the process from a destructor.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(release));
                }
            }
            HostMem::Mapped(_) | HostMem::None | HostMem::Inline => {}
            // The map goes with the last storage that uses it.
            #[cfg(unix)]
            HostMem::Shared(_) => {}
        }
    }
}

/// An export's hold on a storage: keeps it alive and counted as shared
/// with the host until dropped.
pub(crate) struct Pin {
    storage: Arc<Storage>,
    /// What the pin is, as bits of one word: [`Pin::WRITE`], [`Pin::DEVICE`],
    /// [`Pin::COUNTED`]. A word rather than three `bool`s: the pin comes
    /// back from [`Storage::pin_host`] through memory, and three byte
    /// stores read back as one word stall (store forwarding).
    bits: u64,
}

impl Pin {
    /// The holder may write (a writable export); otherwise it only reads.
    const WRITE: u64 = 1;
    /// A pin of the device copy (a `kDLCUDA` export) rather than the host's.
    const DEVICE: u64 = 2;
    /// Counted in the storage's state (not set for a settled storage's
    /// pins, whose drop takes no lock).
    const COUNTED: u64 = 4;

    #[inline]
    fn new(storage: Arc<Storage>, write: bool, device: bool, counted: bool) -> Pin {
        let bits = if write { Pin::WRITE } else { 0 } | if device { Pin::DEVICE } else { 0 } | if counted { Pin::COUNTED } else { 0 };
        Pin { storage, bits }
    }

    fn counted(&self) -> bool {
        self.bits & Pin::COUNTED != 0
    }

    /// The pinned storage.
    pub(crate) fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    /// Ends the pin and hands its reference to the storage to the caller.
    pub(crate) fn into_storage(self) -> Arc<Storage> {
        let pin = std::mem::ManuallyDrop::new(self);
        pin.unpin();
        // SAFETY: `pin` is never dropped, so its Arc is moved out exactly
        // once and not released by `Pin`'s drop as well.
        unsafe { std::ptr::read(&pin.storage) }
    }

    /// Takes back the count the pin holds (nothing for a settled pin).
    fn unpin(&self) {
        if !self.counted() {
            return;
        }
        let mut st = lock(&self.storage.state);
        let count = match (self.bits & Pin::DEVICE != 0, self.bits & Pin::WRITE != 0) {
            (false, true) => &mut st.pins,
            (false, false) => &mut st.read_pins,
            (true, true) => &mut st.device_pins,
            (true, false) => &mut st.device_read_pins,
        };
        *count = count.saturating_sub(1);
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        self.unpin();
    }
}

/// A registered borrow of a byte range; released when dropped.
pub struct Borrow {
    storage: Arc<Storage>,
    id: u64,
}

impl Borrow {
    /// The storage this borrow is of.
    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }
}

impl std::fmt::Debug for Borrow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Borrow").field("id", &self.id).finish()
    }
}

impl Drop for Borrow {
    fn drop(&mut self) {
        self.storage.release_borrow(self.id);
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Storage").field("len", &self.len).field("head", &self.head()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// More host memory than the machine has with its swap is refused by
    /// blobcore itself (not left to the kernel, which grants it where it
    /// overcommits: the device host), and nothing is allocated.
    #[test]
    #[cfg_attr(miri, ignore = "no sysinfo")]
    fn more_than_the_machine_holds_is_refused_before_the_kernel_is_asked() {
        let total = crate::machine_memory::total().expect("sysinfo");
        let len = usize::try_from(total).unwrap() + (1 << 30);
        let s = Storage::lazy(len);
        let e = s.host_read().expect_err("refused");
        assert!(matches!(&e, crate::Error::OutOfMemory(m) if m.contains("more than this machine's memory")), "{e}");
        assert!(!s.is_host_allocated());
    }

    #[test]
    fn lazy_zeroed_and_aligned() {
        for len in [0usize, 1, 100, 4095, 4096, 8193, MAP_BYTES - 1, MAP_BYTES, 1 << 21] {
            let s = Storage::lazy(len);
            assert_eq!(s.head(), Head::Uninitialized);
            assert!(!s.is_host_allocated());
            let p = s.host_read().unwrap();
            assert_eq!(s.head(), Head::HeadAtCpu);
            assert_eq!(p.as_ptr() as usize % ALIGN, 0, "len {len}");
            if len >= PAGE {
                assert_eq!(p.as_ptr() as usize % PAGE, 0);
            }
            // SAFETY: p is valid for len bytes.
            let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), len) };
            assert!(bytes.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn reused_heap_blocks_read_as_zeros() {
        // Heap blocks come back from the allocator dirty: a storage over
        // one a dropped storage filled must still read as zeros, and a
        // copy must hold exactly its bytes.
        for len in [1usize, 63, 64, 65, 100, 4095, 4096, 8193, 100_000, MAP_BYTES - 1] {
            for _ in 0..3 {
                let dirty = Storage::lazy(len);
                let p = dirty.host_write().unwrap();
                // SAFETY: p is valid for len bytes, written only here.
                unsafe { std::ptr::write_bytes(p.as_ptr(), 0xA5, len) };
                drop(dirty);
                let s = Storage::lazy(len);
                let q = s.host_read().unwrap();
                // SAFETY: q is valid for len bytes.
                let bytes = unsafe { std::slice::from_raw_parts(q.as_ptr(), len) };
                assert!(bytes.iter().all(|&b| b == 0), "len {len}");
                let src: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
                // SAFETY: fill writes exactly the len new bytes, from `src`.
                let c = unsafe { Storage::host_filled_on(len, None, |p| std::ptr::copy_nonoverlapping(src.as_ptr(), p, len)) }.unwrap();
                let r = c.host_read().unwrap();
                // SAFETY: r is valid for len bytes.
                assert_eq!(unsafe { std::slice::from_raw_parts(r.as_ptr(), len) }, &src[..], "len {len}");
                assert_eq!(r.as_ptr() as usize % ALIGN, 0, "len {len}");
                if len >= PAGE {
                    assert_eq!(r.as_ptr() as usize % PAGE, 0);
                }
            }
        }
    }

    /// Whether a storage's bytes lie inside its own allocation.
    fn bytes_inside(s: &Arc<Storage>, p: NonNull<u8>) -> bool {
        let start = Arc::as_ptr(s) as usize;
        (start..start + std::mem::size_of::<Storage>()).contains(&(p.as_ptr() as usize))
    }

    #[test]
    fn small_storages_keep_their_bytes_inside_aligned_and_apart() {
        // Up to INLINE_BYTES, both ways a storage gets its bytes (lazily,
        // zeroed, and filled at creation) put them inside the storage's
        // own allocation, 64-byte aligned, every byte of them the storage's
        // alone: many live at once, each written with its own pattern,
        // read back intact; one byte more goes to the heap. A lazy one
        // reads as zeros first (under Miri, an unwritten byte read is an
        // error).
        for len in 1..=INLINE_BYTES + 1 {
            let mut live = Vec::new();
            for k in 0..16u8 {
                let lazy = Storage::lazy(len);
                let z = lazy.host_read().unwrap();
                // SAFETY: z is valid for len bytes. Zeros, though the
                // storage may sit where a dropped one's dirty bytes were.
                assert!(unsafe { std::slice::from_raw_parts(z.as_ptr(), len) }.iter().all(|&b| b == 0), "len {len}");
                let p = lazy.host_write().unwrap();
                // SAFETY: p is valid for len bytes, written only here.
                unsafe { std::ptr::write_bytes(p.as_ptr(), k, len) };
                let src = vec![k ^ 0x5A; len];
                // SAFETY: fill writes exactly the len new bytes, from `src`.
                let filled = unsafe { Storage::host_filled_on(len, None, |q| std::ptr::copy_nonoverlapping(src.as_ptr(), q, len)) }.unwrap();
                let q = filled.host_read().unwrap();
                for (s, ptr) in [(&lazy, p), (&filled, q)] {
                    assert_eq!(ptr.as_ptr() as usize % ALIGN, 0, "len {len}");
                    assert_eq!(bytes_inside(s, ptr), len <= INLINE_BYTES, "len {len}");
                    assert_eq!(s.host_addr(), Some(ptr.as_ptr() as usize), "len {len}");
                }
                live.push((k, lazy, filled));
            }
            for (k, lazy, filled) in &live {
                for (s, want) in [(lazy, *k), (filled, k ^ 0x5A)] {
                    let p = s.host_read().unwrap();
                    // SAFETY: p is valid for len bytes.
                    let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), len) };
                    assert!(bytes.iter().all(|&b| b == want), "len {len}");
                }
            }
        }
    }

    #[test]
    fn host_only_pins_settle_after_the_first() {
        // A lazy storage without a GPU: the first pin allocates, moves the
        // head to the host and is counted under the lock; later pins take
        // the settled path (uncounted, no lock), on the same memory, and
        // keep the storage alive as the first does.
        let s = Storage::lazy(64);
        assert!(!s.settled.load(Ordering::Acquire));
        let (first, p) = Arc::clone(&s).pin_host(false).unwrap();
        assert!(first.counted() && s.settled.load(Ordering::Acquire));
        assert_eq!((s.head(), lock(&s.state).read_pins), (Head::HeadAtCpu, 1));
        let (second, q) = Arc::clone(&s).pin_host(true).unwrap();
        assert!(!second.counted());
        assert_eq!(p, q);
        assert_eq!((lock(&s.state).pins, Arc::strong_count(&s)), (0, 3));
        drop((first, second));
        assert_eq!((lock(&s.state).read_pins, Arc::strong_count(&s)), (0, 1));
        // A read-only storage still refuses a writable pin on that path.
        let mut mem = [0u8; 16];
        // SAFETY: `mem` outlives `ro` (dropped first, at the end of the
        // test) and is only read through it.
        let ro = unsafe { Storage::external_on(NonNull::new(mem.as_mut_ptr()).unwrap(), 16, None, None, true) };
        assert!(ro.settled.load(Ordering::Acquire));
        let refused = Arc::clone(&ro).pin_host(true).err().map(|e| e.code());
        assert_eq!(refused, Some(crate::Error::ReadOnly(String::new()).code()));
        assert!(Arc::clone(&ro).pin_host(false).is_ok());
    }

    #[test]
    fn huge_allocation_is_an_error_not_an_abort() {
        let s = Storage::lazy(1usize << 50);
        let e = s.host_write().unwrap_err();
        assert_eq!(e.code(), 9);
        assert!(!s.is_host_allocated());
    }

    #[test]
    fn borrow_rules() {
        let s = Storage::lazy(100);
        let a = s.borrow(0, 50, false).unwrap();
        let b = s.borrow(10, 60, false).unwrap();
        assert_eq!(s.borrow(40, 70, true).unwrap_err().code(), 8);
        let c = s.borrow(60, 100, true).unwrap();
        assert!(s.borrow(99, 100, false).is_err());
        let _empty = s.borrow(70, 70, true).unwrap();
        drop((a, b));
        let d = s.borrow(0, 60, true).unwrap();
        drop((c, d));
        assert_eq!(s.borrow_count(), 1);
    }

    #[test]
    fn release_runs_once() {
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        let mut buf = vec![0u8; 16];
        let ptr = NonNull::new(buf.as_mut_ptr()).unwrap();
        // SAFETY: buf outlives the storage.
        let s = unsafe {
            Storage::external(ptr, 16, Some(Box::new(|| {
                CALLS.fetch_add(1, Ordering::SeqCst);
            })))
        };
        let s2 = Arc::clone(&s);
        drop(s);
        assert_eq!(CALLS.load(Ordering::SeqCst), 0);
        assert!(s2.is_external());
        drop(s2);
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
    }
}
