//! Two maps of one file are one memory: the addresses overlap checks
//! compare.
//!
//! A file mapped twice in one process (`load_npy(path, mmap_mode="r+")`
//! twice, or `"r+"` and `"r"`) lies at two addresses, yet a write through
//! one map is seen through the other: by address they share nothing. So
//! overlap checks ([`crate::overlap`], the copy kernels' aliasing checks)
//! compare *canonical* addresses: a byte of a registered file map is
//! placed at its offset in the file, in a space of its own for that file
//! (above every real address), and any other address is itself. Maps
//! register when made and unregister when dropped ([`crate::mapped`]).
//! A copy-on-write map registers too: until a page is written it shows
//! the file's bytes, so saying it shares them is the safe answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use crate::fork_locks::HeldAcrossFork;
use std::sync::RwLock;

/// One registered map: `len` bytes from `start` show the bytes of file
/// `file` (a process-local number per (device, inode)) from offset 0.
struct Map {
    start: usize,
    len: usize,
    key: (u64, u64),
    file: u64,
}

struct Registry {
    /// Sorted by `start` (maps never overlap: a binary search finds one).
    maps: Vec<Map>,
    next_file: u64,
}

/// Held across forks: a child whose parent forked mid-update would
/// otherwise wait for ever on its next map.
static REGISTRY: HeldAcrossFork<RwLock<Registry>> =
    HeldAcrossFork::new(crate::fork_locks::CORE_RANK + 1, RwLock::new(Registry { maps: Vec::new(), next_file: 1 }));
/// How many maps are registered: 0 lets `canonical` skip the lock.
static COUNT: AtomicUsize = AtomicUsize::new(0);

// Every critical section leaves the registry consistent: a poisoned lock
// is taken over.
fn registry() -> std::sync::RwLockWriteGuard<'static, Registry> {
    REGISTRY.get().write().unwrap_or_else(|e| e.into_inner())
}

/// Registers `len` bytes at `start` as a map of the file `key` (device,
/// inode) from its offset 0.
pub(crate) fn register(start: usize, len: usize, key: (u64, u64)) {
    if len == 0 {
        return;
    }
    let mut r = registry();
    let file = match r.maps.iter().find(|m| m.key == key) {
        Some(m) => m.file,
        None => {
            r.next_file += 1;
            r.next_file
        }
    };
    let at = r.maps.partition_point(|m| m.start < start);
    r.maps.insert(at, Map { start, len, key, file });
    COUNT.store(r.maps.len(), Ordering::Release);
}

/// Unregisters the map registered at `start` (when it is unmapped).
pub(crate) fn unregister(start: usize) {
    let mut r = registry();
    if let Ok(i) = r.maps.binary_search_by_key(&start, |m| m.start) {
        r.maps.remove(i);
    }
    COUNT.store(r.maps.len(), Ordering::Release);
}

/// The canonical place of the byte at `addr`: its offset in the file,
/// in that file's own space (`file << 64`, above every address), when a
/// registered map holds it; else `addr` itself.
pub(crate) fn canonical(addr: usize) -> u128 {
    if COUNT.load(Ordering::Acquire) == 0 {
        return addr as u128;
    }
    let r = REGISTRY.get().read().unwrap_or_else(|e| e.into_inner());
    // The last map starting at or below `addr`, if it reaches it.
    let at = r.maps.partition_point(|m| m.start <= addr);
    match at.checked_sub(1).map(|i| &r.maps[i]).filter(|m| addr - m.start < m.len) {
        Some(m) => ((m.file as u128) << 64) + (addr - m.start) as u128,
        None => addr as u128,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_of_one_file_meet_in_its_space() {
        // Kernel-half addresses no user-space map can have (the registry
        // never dereferences them), so other tests' canonical addresses
        // stay their own while these are registered.
        let a = usize::MAX - 0x3fff_ffff;
        let (b, c) = (a + 0x1000_0000, a + 0x2000_0000);
        register(a, 4096, (7, 42));
        register(b, 8192, (7, 42));
        register(c, 4096, (7, 43));
        assert_eq!(canonical(a + 100), canonical(b + 100));
        assert_ne!(canonical(a + 100), canonical(b + 101));
        assert_ne!(canonical(a + 100), canonical(c + 100), "another file");
        assert_eq!(canonical(b + 5000) - canonical(a), 5000);
        assert_eq!(canonical(a + 4096), (a + 4096) as u128, "past the map: the address itself");
        assert!(canonical(a) > u64::MAX as u128);
        unregister(a);
        unregister(b);
        unregister(c);
        assert_eq!(canonical(b + 100), (b + 100) as u128);
    }

    /// A child forked while another thread of the parent holds the
    /// registry's lock must still map files (and find them): it must not
    /// wait for a thread it does not have.
    #[cfg(unix)]
    #[cfg_attr(miri, ignore = "Miri runs no fork")]
    #[test]
    fn a_child_forked_mid_update_can_use_the_registry() {
        // Kernel-half addresses apart from the other test's.
        const BUSY_AT: usize = usize::MAX - 0x7fff_ffff;
        const CHILD_AT: usize = BUSY_AT + 0x1000_0000;
        let hung = crate::fork_locks::tests::fork_while_busy(
            200,
            || {
                register(BUSY_AT, 4096, (9, 1));
                unregister(BUSY_AT);
            },
            || {
                register(CHILD_AT, 4096, (9, 2));
                let ok = canonical(CHILD_AT + 1) > u64::MAX as u128;
                unregister(CHILD_AT);
                ok
            },
        );
        assert_eq!(hung, 0, "a forked child hung on the registry's lock");
    }
}
