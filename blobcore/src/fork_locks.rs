//! Process-wide locks held across `fork`, so a child never finds one taken.
//!
//! A forked child has only the thread that called `fork`, and a copy of
//! every lock as it stood. A process-wide table whose lock another thread
//! held at that moment (a C program's handle table while a worker thread
//! creates a blob, the registry of mapped files while a thread maps one)
//! stays locked in the child for ever: its next call that needs the table
//! waits for a thread it does not have. So every such lock is a
//! [`HeldAcrossFork`], registered here on its first use, and a
//! `pthread_atfork` handler takes them all before the fork —
//! waiting for the threads that hold them to finish their short critical
//! sections — and releases them in parent and child after it. The child
//! gets whole tables (its maps and memory are inherited, so are their
//! entries) and free locks.
//!
//! Locks are taken in order of their rank, lowest first, and released in
//! the reverse order. A lock that code takes while holding another must
//! have the higher rank, or the fork could wait on a thread that waits on
//! it: the C API's handle tables (taken first, and held while the core
//! works on a blob) rank below the core's own tables. Per-object locks —
//! a blob's — are not held across a fork: a blob that another thread
//! works on at the moment of the fork may stay busy (its borrow is never
//! returned there) or locked in the child. Values made once per process
//! (the handle key, the CPU's tuning, the engine `BLOBCORE_ENGINE` names)
//! need no lock held across fork: they are [`crate::first_use::FirstUse`]
//! values, which no thread waits for, so a child forked while another
//! thread made one makes its own.
//!
//! (Miri runs no fork and no `pthread_atfork`: there the functions here
//! only record.)

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};

/// The core's own tables rank from here up. A caller's lock that is held
/// while it calls into the core ranks below.
pub const CORE_RANK: u32 = 1_000;

/// A lock the fork handler can hold: a [`Mutex`], or an [`RwLock`] (held
/// for writing). A poisoned lock is held too: the tables' critical
/// sections leave them consistent.
pub trait Holdable: Sync {
    /// Takes the lock and returns its guard (boxed: locks of every type
    /// are held in one list).
    fn hold(&'static self) -> Box<dyn Any>;
}

impl<T: Send + 'static> Holdable for Mutex<T> {
    fn hold(&'static self) -> Box<dyn Any> {
        Box::new(self.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl<T: Send + Sync + 'static> Holdable for RwLock<T> {
    fn hold(&'static self) -> Box<dyn Any> {
        Box::new(self.write().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The registered locks, sorted by rank.
static LOCKS: Mutex<Vec<(u32, &'static dyn Holdable)>> = Mutex::new(Vec::new());

/// A process-wide lock held across every `fork` of the process: the
/// handler takes it before the fork (waiting for a thread in its critical
/// section to finish) and releases it in parent and child after. It is
/// reached only through [`HeldAcrossFork::get`], which registers it on
/// first use, so no use can come before its registration. Lower ranks are
/// taken first (see the module's docs).
///
/// ```
/// use blobcore::fork_locks::{HeldAcrossFork, CORE_RANK};
/// use std::sync::Mutex;
/// static TABLE: HeldAcrossFork<Mutex<Vec<u32>>> = HeldAcrossFork::new(CORE_RANK + 100, Mutex::new(Vec::new()));
/// TABLE.get().lock().unwrap().push(1);
/// ```
pub struct HeldAcrossFork<L: 'static> {
    lock: L,
    rank: u32,
    /// False until the lock is in [`LOCKS`]. (No `Once` here: a `Once`
    /// caught running by a fork would stay running in the child, and wait
    /// for ever.)
    registered: AtomicBool,
}

impl<L> HeldAcrossFork<L> {
    /// `lock`, to be held across forks at `rank`.
    pub const fn new(rank: u32, lock: L) -> Self {
        HeldAcrossFork { lock, rank, registered: AtomicBool::new(false) }
    }
}

impl<L: Holdable> HeldAcrossFork<L> {
    /// The lock, registered with the fork handler (after the first call,
    /// one atomic load).
    pub fn get(&'static self) -> &'static L {
        if !self.registered.load(Ordering::Acquire) {
            self.register();
        }
        &self.lock
    }

    #[cold]
    fn register(&'static self) {
        #[cfg(all(unix, not(miri)))]
        handlers::install();
        let mut locks = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
        if self.registered.load(Ordering::Acquire) {
            return;
        }
        let at = locks.partition_point(|(r, _)| *r <= self.rank);
        locks.insert(at, (self.rank, &self.lock));
        self.registered.store(true, Ordering::Release);
    }
}

#[cfg(all(unix, not(miri)))]
mod handlers {
    use super::{PoisonError, LOCKS};
    use std::any::Any;
    use std::cell::RefCell;

    thread_local! {
        /// The guards the forking thread holds across the fork, in the
        /// order they were taken (the list's own guard first).
        static HELD: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
    }

    extern "C" fn prepare() {
        // The list's lock is held too: a registration cannot slip between.
        let locks = LOCKS.lock().unwrap_or_else(PoisonError::into_inner);
        let takes: Vec<&'static dyn super::Holdable> = locks.iter().map(|(_, l)| *l).collect();
        let mut held: Vec<Box<dyn Any>> = Vec::with_capacity(takes.len() + 1);
        held.push(Box::new(locks));
        held.extend(takes.iter().map(|lock| lock.hold()));
        // A thread being torn down has no slot for them: it forks without
        // the locks (as it would without these handlers).
        let _ = HELD.try_with(|h| *h.borrow_mut() = held);
    }

    extern "C" fn release() {
        // Dropped in the reverse order of taking. A futex-based lock has no
        // owner to check, so the child's copy of the forking thread may
        // unlock what the parent's took; glibc leaves the allocator usable
        // in the child, so the boxes may be freed there.
        let _ = HELD.try_with(|h| {
            let mut held = std::mem::take(&mut *h.borrow_mut());
            while let Some(guard) = held.pop() {
                drop(guard);
            }
        });
    }

    /// Installs the handlers, once per process tree (a child inherits
    /// them). A thread of this process already installing them is waited
    /// for; one of a parent — caught inside `pthread_atfork` by the fork,
    /// so absent here and its handlers never added — is taken over.
    pub(super) fn install() {
        use std::sync::atomic::{AtomicU64, Ordering};
        const DONE: u64 = u64::MAX;
        /// DONE, 0 (never started), or 1 + the id of the process whose
        /// thread is installing them.
        static STATE: AtomicU64 = AtomicU64::new(0);
        loop {
            let state = STATE.load(Ordering::Acquire);
            if state == DONE {
                return;
            }
            let me = 1 + u64::from(std::process::id());
            if state == me {
                std::thread::yield_now();
                continue;
            }
            if STATE.compare_exchange(state, me, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                // SAFETY: the handlers are plain functions of this library
                // that touch only the registered locks and a thread-local;
                // glibc drops them if the library is unloaded. A failure
                // (ENOMEM) only leaves forks unguarded, as they were before.
                unsafe { libc::pthread_atfork(Some(prepare), Some(release), Some(release)) };
                STATE.store(DONE, Ordering::Release);
                return;
            }
        }
    }
}

#[cfg(all(test, unix))]
pub(crate) mod tests {
    use super::*;
    use std::sync::Arc;

    /// Forks `forks` times while `busy` runs in a loop on another thread;
    /// each child runs `child` and exits 0 when it returns true. Returns
    /// how many children hung (killed after 10 s: the first ends the run).
    pub(crate) fn fork_while_busy(forks: usize, busy: fn(), child: fn() -> bool) -> usize {
        let stop = Arc::new(AtomicBool::new(false));
        let worker = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    busy();
                }
            })
        };
        let mut hung = 0;
        for _ in 0..forks {
            match crate::fork_child::in_child(10, || if child() { 0 } else { 1 }) {
                Some(0) => {}
                Some(_) => panic!("the child failed"),
                None => {
                    hung += 1;
                    break;
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        worker.join().unwrap();
        hung
    }

    // OUTER is held while INNER is taken (as the C API's handle table is
    // held while the core works), so it ranks lower.
    static OUTER: HeldAcrossFork<RwLock<u64>> = HeldAcrossFork::new(10, RwLock::new(0));
    static INNER: HeldAcrossFork<Mutex<u64>> = HeldAcrossFork::new(CORE_RANK + 50, Mutex::new(0));

    #[cfg_attr(miri, ignore = "Miri runs no fork")]
    #[test]
    fn nested_locks_are_free_in_a_child() {
        fn both() -> bool {
            let mut o = OUTER.get().write().unwrap_or_else(PoisonError::into_inner);
            *o += 1;
            *INNER.get().lock().unwrap_or_else(PoisonError::into_inner) += 1;
            drop(o);
            let _r = OUTER.get().read().unwrap_or_else(PoisonError::into_inner);
            true
        }
        both();
        let hung = fork_while_busy(200, || assert!(both()), both);
        assert_eq!(hung, 0, "a forked child hung on a process-wide lock");
    }
}
