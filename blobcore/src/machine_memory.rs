//! The machine's memory and swap, and the rule blobcore applies with them:
//! more than they hold together is refused before anything is allocated
//! or copied. Linux's default overcommit heuristic refuses such a request
//! itself; with `vm.overcommit_memory = 1` (common on GPU servers) the
//! kernel grants the address space, and filling it ends with the process
//! killed instead of an error.

/// Sizes up to this are never checked (no system call on small paths).
const CHECKED_FROM: usize = 1 << 30;

/// The machine's memory and swap in bytes (Linux `sysinfo`); None where
/// unknown (other systems, Miri).
pub(crate) fn total() -> Option<u64> {
    // Miri has no `sysinfo`: unknown there.
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        // SAFETY: sysinfo only writes the struct it is given, which is
        // plain data (all-zero is a valid value).
        let mut i: libc::sysinfo = unsafe { std::mem::zeroed() };
        // SAFETY: `i` is a valid, writable sysinfo struct.
        if unsafe { libc::sysinfo(&mut i) } == 0 {
            return Some((i.totalram as u64).saturating_add(i.totalswap as u64).saturating_mul(u64::from(i.mem_unit.max(1))));
        }
    }
    None
}

/// True when `len` bytes (past 1 GiB) exceed `limit` (a [`total`] read
/// earlier).
pub(crate) fn beyond(len: usize, limit: Option<u64>) -> bool {
    len > CHECKED_FROM && limit.is_some_and(|m| len as u64 > m)
}

/// True when `len` bytes (past 1 GiB) exceed the machine's memory and swap.
pub(crate) fn exceeded_by(len: usize) -> bool {
    len > CHECKED_FROM && beyond(len, total())
}
