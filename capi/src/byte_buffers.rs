//! Byte buffers that `blob_to_*_bytes` hand to C and `blob_bytes_free`
//! takes back.
//!
//! The caller reads the bytes, so a buffer's handle is its real address and
//! cannot be a token. To keep stale and forged pointers from naming a live
//! buffer all the same (`blob_bytes_free(p)` twice, where the allocator has
//! meanwhile given `p` to a new buffer, would free that one), each buffer
//! is its own anonymous memory map placed at a random page in a large
//! range of the address space (a hint the kernel honours when that range is
//! free, as it nearly always is; otherwise it picks an address itself).
//! Addresses then practically never repeat, and a given garbage value names
//! a live buffer with probability about (live buffer pages) / 2^34 on
//! x86_64. On targets without `mmap` the buffers are plain allocations.

use blobcore::Error;
use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

/// Live buffers by address. `None` once the last one is freed, so nothing
/// stays allocated (valgrind's leak check sees an empty process).
static LIVE: blobcore::fork_locks::HeldAcrossFork<Mutex<Option<BTreeMap<usize, Pages>>>> =
    blobcore::fork_locks::HeldAcrossFork::new(crate::handles::fork_rank::BYTE_BUFFERS, Mutex::new(None));

/// [`LIVE`], held across `fork` (see [`crate::handles::fork_rank`]).
fn live() -> &'static Mutex<Option<BTreeMap<usize, Pages>>> {
    LIVE.get()
}

/// Copies `bytes` into a new buffer for C; returns its address.
pub fn hand_out(bytes: &[u8]) -> Result<*mut u8, Error> {
    let mut pages = Pages::new(bytes.len()).ok_or_else(|| {
        Error::OutOfMemory(format!("cannot map {} bytes for the serialized blob", bytes.len()))
    })?;
    let ptr = pages.as_mut_ptr();
    // SAFETY: `pages` is a fresh, writable mapping of at least `bytes.len()`
    // bytes that nothing else references yet; the two ranges cannot overlap.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr, bytes.len()) };
    live().lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert_with(BTreeMap::new)
        .insert(ptr as usize, pages);
    Ok(ptr)
}

/// Frees a buffer from [`hand_out`]; anything else is `InvalidHandle`.
pub fn free(ptr: *mut u8) -> Result<(), Error> {
    let mut live = live().lock().unwrap_or_else(PoisonError::into_inner);
    let freed = live.as_mut().and_then(|m| m.remove(&(ptr as usize)));
    if live.as_ref().is_some_and(BTreeMap::is_empty) {
        *live = None;
    }
    drop(live);
    match freed {
        Some(pages) => {
            drop(pages);
            Ok(())
        }
        None => Err(Error::InvalidHandle(format!(
            "{ptr:p} is not a buffer from blob_to_*_bytes (or it was freed already)"
        ))),
    }
}

/// A random page-aligned address to ask the kernel for.
#[cfg(unix)]
fn random_hint(page: usize) -> usize {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    // Drawn on first use, never waited for (see `blobcore::first_use`).
    static KEY: blobcore::first_use::FirstUse<RandomState> = blobcore::first_use::FirstUse::new();
    static COUNT: AtomicU64 = AtomicU64::new(0);
    // x86_64 and aarch64 user space reach at least 2^47 (2^39 on some
    // aarch64 kernels, which then ignore higher hints). [2^45, 2^46) lies
    // above AddressSanitizer's shadow memory (which ends near 2^44 on
    // x86_64) and below where the kernel puts libraries and its own maps.
    let (lo, span): (u64, u64) = if usize::BITS == 64 { (1 << 45, 1 << 45) } else { (1 << 28, 1 << 29) };
    let r = KEY.get_or_make(RandomState::new).hash_one(COUNT.fetch_add(1, Ordering::Relaxed));
    ((lo + r % span) as usize) & !(page - 1)
}

#[cfg(unix)]
struct Pages {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: `Pages` owns its mapping exclusively; it is unmapped only in Drop.
#[cfg(unix)]
unsafe impl Send for Pages {}

#[cfg(unix)]
impl Pages {
    fn new(len: usize) -> Option<Pages> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok().filter(|p| p.is_power_of_two())?;
        let map_len = len.max(1).checked_next_multiple_of(page)?;
        // A hint the kernel does not honour (that range is taken) is tried
        // again elsewhere a few times; then any address is taken.
        for attempt in 0..8 {
            let hint = random_hint(page);
            // SAFETY: an anonymous private mapping without MAP_FIXED: the
            // kernel uses the hint only where nothing is mapped, so no
            // existing memory is touched; the result is checked before use.
            let p = unsafe {
                libc::mmap(
                    hint as *mut libc::c_void,
                    map_len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return None;
            }
            let pages = Pages { ptr: std::ptr::NonNull::new(p.cast())?, len: map_len };
            if p as usize == hint || attempt == 7 {
                return Some(pages);
            }
            drop(pages); // unmapped; try another hint
        }
        None
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

#[cfg(unix)]
impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned, unmapped once;
        // C was told (blob_bytes_free) not to use the buffer any more.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Without mmap: a plain allocation (addresses may repeat after a free).
/// Held as the raw pointer `Box::into_raw` gave, not as a `Box`: the
/// buffer moves into the registry after C got its address, and moving a
/// `Box` asserts unique access, which would invalidate that address.
#[cfg(not(unix))]
struct Pages(std::ptr::NonNull<[u8]>);

// SAFETY: `Pages` owns its allocation exclusively; it is freed only in Drop.
#[cfg(not(unix))]
unsafe impl Send for Pages {}

#[cfg(not(unix))]
impl Pages {
    fn new(len: usize) -> Option<Pages> {
        // A non-empty allocation gives every live buffer a unique address.
        let raw = Box::into_raw(vec![0u8; len.max(1)].into_boxed_slice());
        std::ptr::NonNull::new(raw).map(Pages)
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.0.as_ptr().cast()
    }
}

#[cfg(not(unix))]
impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `Box::into_raw` in `new` and is
        // freed once, here; C was told not to use the buffer any more.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}
