//! The CPU engine's worker pool, safe across `fork`.
//!
//! A forked child has only the thread that called `fork`: the workers of a
//! pool made before are gone, and work handed to them would wait for ever
//! (data-loader workers made by `multiprocessing`'s fork start method hit
//! this after the parent ran one large operation). So the pool remembers
//! the process it was made in, and a process that finds someone else's
//! pool makes its own (as PyTorch does). The check is one atomic load and
//! `getpid`, taken only by operations large enough to run in parallel; no
//! lock is involved, so a fork in the middle of another thread's call
//! cannot leave one held in the child.

use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::atomic::{AtomicPtr, Ordering};

struct Owned {
    pid: u32,
    pool: ThreadPool,
    /// The pool this one replaced (another process's, abandoned): kept
    /// reachable, never freed — its workers do not exist here.
    _prev: *mut Owned,
}

/// The pool of this process (leaked: it lives as long as the process).
static POOL: AtomicPtr<Owned> = AtomicPtr::new(std::ptr::null_mut());

fn pool() -> Option<&'static ThreadPool> {
    let pid = std::process::id();
    let cur = POOL.load(Ordering::Acquire);
    // SAFETY: non-null pointers in POOL come from Box::into_raw below and
    // are never freed (a pool of another process is abandoned, not dropped:
    // its threads do not exist here).
    if let Some(o) = unsafe { cur.as_ref() } {
        if o.pid == pid {
            return Some(&o.pool);
        }
    }
    let pool = ThreadPoolBuilder::new().thread_name(|i| format!("blobcore-{i}")).build().ok()?;
    let fresh = Box::into_raw(Box::new(Owned { pid, pool, _prev: cur }));
    match POOL.compare_exchange(cur, fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: `fresh` was just leaked and is now published for good.
        Ok(_) => Some(unsafe { &(*fresh).pool }),
        Err(other) => {
            // Another thread of this process won the race: use its pool.
            // SAFETY: `fresh` was never published; we own it.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: as above, published pointers are never freed.
            unsafe { other.as_ref() }.filter(|o| o.pid == pid).map(|o| &o.pool)
        }
    }
}

/// Runs `f` (which may use rayon's parallel iterators) on this process's
/// worker pool; inline when already on a pool thread, or when no pool can
/// be made (then rayon's own pool serves, as before).
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        return f();
    }
    match pool() {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// The number of worker threads operations split their work across.
pub(crate) fn threads() -> usize {
    match pool() {
        Some(p) => p.current_num_threads(),
        None => rayon::current_num_threads(),
    }
}

/// Runs `f` on the calling thread with a scope whose spawned jobs run on
/// this process's worker pool; returns once they have all finished. Unlike
/// [`install`], the calling thread stays itself (it may call back into its
/// caller, e.g. to report progress) and works alongside the pool.
pub(crate) fn in_place_scope<'s, R>(f: impl FnOnce(&rayon::Scope<'s>) -> R) -> R {
    match pool() {
        Some(p) => p.in_place_scope(f),
        None => rayon::in_place_scope(f),
    }
}
