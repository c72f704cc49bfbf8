//! Threads inside a GPU driver's process-wide state, as a forked child
//! sees them.
//!
//! Opening a GPU, listing the adapters and closing a device load and
//! unload the driver's libraries and change its process-wide state, for
//! tens to hundreds of milliseconds, inside locks and threads of its own.
//! A child forked while another thread of its parent is in there gets a
//! copy of that state half changed, with its locks held by a thread it
//! does not have: opening a device there hung (lavapipe: about one fork
//! in three during an open; five in six during a close, the sixth ending
//! in the dynamic loader's assertion). So every such section is counted
//! here, with the process it runs in, and in a process forked while one
//! was under way, opening or listing devices is refused with
//! `Error::Device` before the driver is called — as every use of a
//! parent's device in a forked child is (see [`super::gpu::Gpu`]). The
//! count is one atomic word that the child inherits as the fork found it;
//! no lock is involved.
//!
//! Work submitted to an open device is counted too, from the submission
//! until the device reports it done: the driver runs it on threads of
//! its own, and lavapipe compiles each kernel there on its first
//! dispatch on a device, inside LLVM's process-wide locks. With opens
//! and closes counted and work not, one child in about 10,000 forked
//! while another thread opened, used and closed devices in a loop hung
//! (tests/gpu_fork.rs; one in 40 in a CI run): its own first kernel's
//! compile waited in `llvm::MCJIT::generateCodeForModule` for a lock
//! that the parent's queue thread, compiling, held at the fork.
//! Recording commands, allocating and freeing buffers and mapping them
//! go through the device's own state, which a child never uses, and are
//! not counted.

use crate::error::err;
use crate::Result;
use std::sync::atomic::{AtomicU64, Ordering};

/// Sections under way: the process id in the high 32 bits, the number of
/// its threads inside one in the low 32 bits.
static SECTIONS: AtomicU64 = AtomicU64::new(0);

/// A section in progress, counted until dropped (or never counted: see
/// [`close`]).
pub(crate) struct InDriver<'a> {
    sections: Option<&'a AtomicU64>,
}

/// Counts a section that reaches the driver to `what` (open or list
/// devices), or refuses it when this process was forked while a thread
/// of its parent was inside one.
pub(crate) fn enter(what: &str) -> Result<InDriver<'static>> {
    enter_on(&SECTIONS, what)
}

/// Counts the closing of a device. Never refused: a process only closes
/// devices it opened itself, and a child forked mid-section has none
/// (it was refused them); such a call is not counted.
pub(crate) fn close() -> InDriver<'static> {
    enter_on(&SECTIONS, "").unwrap_or(InDriver { sections: None })
}

/// Counts work submitted to a device until it is done (see
/// `Wgpu::submit`). Never refused, as [`close`]: only the process that
/// opened a device submits to it.
pub(crate) fn running() -> InDriver<'static> {
    close()
}

fn enter_on<'a>(sections: &'a AtomicU64, what: &str) -> Result<InDriver<'a>> {
    let me = u64::from(std::process::id());
    let mut cur = sections.load(Ordering::Acquire);
    loop {
        let (pid, n) = (cur >> 32, cur & 0xffff_ffff);
        let next = match (pid == me, n) {
            (true, n) => (me << 32) | (n + 1),
            // No section under way here, or one of another process's (our
            // parent's) that finished before it forked us.
            (false, 0) => (me << 32) | 1,
            (false, _) => {
                return Err(err!(
                    Device,
                    "cannot {what}: this process ({me}) was forked from process {pid} while another of its threads was inside the GPU driver (opening, listing or closing a device), and the driver's state was copied half changed (a driver cannot be used across fork); open devices before forking, or start workers with the spawn or forkserver method"
                ))
            }
        };
        match sections.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Ok(InDriver { sections: Some(sections) }),
            Err(now) => cur = now,
        }
    }
}

impl Drop for InDriver<'_> {
    fn drop(&mut self) {
        // This process's count, raised by `enter_on` (a fork since then
        // does not run this in the child: the child has not this thread).
        if let Some(sections) = self.sections {
            sections.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use crate::fork_child::in_child;
    use std::sync::{Arc, Barrier};

    #[test]
    fn opens_on_many_threads_are_counted_and_released() {
        static SECTIONS: AtomicU64 = AtomicU64::new(0);
        let me = u64::from(std::process::id());
        let start = Arc::new(Barrier::new(9));
        let hold = Arc::new(Barrier::new(9));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (start, hold) = (start.clone(), hold.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let o = enter_on(&SECTIONS, "open a device").expect("an open in this process");
                    hold.wait();
                    hold.wait();
                    drop(o);
                })
            })
            .collect();
        start.wait();
        hold.wait();
        assert_eq!(SECTIONS.load(Ordering::Acquire), (me << 32) | 8);
        hold.wait();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(SECTIONS.load(Ordering::Acquire), me << 32);
    }

    /// A child forked while a thread opens a device refuses to open one;
    /// a child forked after the open finished opens its own.
    #[cfg_attr(miri, ignore = "Miri runs no fork")]
    #[cfg(unix)]
    #[test]
    fn a_child_forked_mid_open_refuses_to_open() {
        static SECTIONS: AtomicU64 = AtomicU64::new(0);
        let (inside, done) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
        let opener = {
            let (inside, done) = (inside.clone(), done.clone());
            std::thread::spawn(move || {
                let o = enter_on(&SECTIONS, "open a device").expect("an open in this process");
                inside.wait();
                done.wait();
                drop(o);
            })
        };
        inside.wait();
        let refused = in_child(10, || match enter_on(&SECTIONS, "open the test's device") {
            Err(e) if e.code() == 10 && e.to_string().contains("forked") && e.to_string().contains("open the test's device") => 0,
            Err(_) => 1,
            Ok(_) => 2,
        });
        assert_eq!(refused, Some(0), "a child forked mid-open opened a device (2), or failed otherwise (1)");
        done.wait();
        opener.join().unwrap();
        let opened = in_child(10, || match enter_on(&SECTIONS, "open a device") {
            Ok(o) => {
                drop(o);
                let me = u64::from(std::process::id());
                if SECTIONS.load(Ordering::Acquire) == me << 32 { 0 } else { 3 }
            }
            Err(_) => 1,
        });
        assert_eq!(opened, Some(0), "a child forked after the open could not open one");
    }

    /// Forks once a thread of this process is inside a section (`worker`'s,
    /// or another test's) or `worker` has finished. The child reads the
    /// count the fork gave it: when the fork split a section it must
    /// refuse to open a GPU (0; 1 if it opened one); when the section had
    /// ended first it is asked nothing (4: sections of other tests end
    /// in a few milliseconds, and their threads in wgpu could have left
    /// locks of theirs held; tests/gpu_fork.rs opens GPUs in such
    /// children). None: it hung.
    #[cfg(unix)]
    fn fork_in_a_section<T>(worker: &std::thread::JoinHandle<T>) -> Option<i32> {
        let me = u64::from(std::process::id());
        loop {
            let now = SECTIONS.load(Ordering::Acquire);
            if (now >> 32 == me && now & 0xffff_ffff > 0) || worker.is_finished() {
                break;
            }
            std::hint::spin_loop();
        }
        in_child(20, || {
            let now = SECTIONS.load(Ordering::Acquire);
            let split = now >> 32 != u64::from(std::process::id()) && now & 0xffff_ffff > 0;
            match split {
                true => match crate::Engine::gpu(None) {
                    Err(e) if e.code() == 10 && e.to_string().contains("forked") => 0,
                    _ => 1,
                },
                false => 4,
            }
        })
    }

    /// Runs the section `make` returns on a thread (`make` runs here,
    /// before; an engine the section returns is dropped here, after the
    /// fork) and forks during it (as [`fork_in_a_section`]) until a fork
    /// falls inside a section, at most 8 times; every child must answer
    /// as it should. Does nothing without a GPU adapter.
    #[cfg(unix)]
    fn a_fork_falls_in(what: &str, make: impl Fn() -> Box<dyn FnOnce() -> Option<crate::Engine> + Send>) {
        if crate::Engine::gpu(None).is_err() {
            return;
        }
        for _ in 0..8 {
            let section = make();
            let go = Arc::new(Barrier::new(2));
            let worker = {
                let go = go.clone();
                std::thread::spawn(move || {
                    go.wait();
                    section()
                })
            };
            go.wait();
            let child = fork_in_a_section(&worker);
            drop(worker.join().unwrap());
            assert!(matches!(child, Some(0 | 4)), "the child hung (None) or opened a GPU mid-{what} (1): {child:?}");
            if child == Some(0) {
                return;
            }
        }
        panic!("no fork fell inside a counted {what} in 8 tries: it is not counted");
    }

    /// The same with a real GPU engine (lavapipe where no GPU is): a fork
    /// while a thread is inside the driver's open, and the child's open
    /// is refused without calling the driver (which hung there before,
    /// about one fork in three). Skipped without an adapter.
    #[cfg_attr(miri, ignore = "Miri runs no fork and no GPU")]
    #[cfg(unix)]
    #[test]
    fn a_child_forked_while_a_gpu_opens_gets_a_device_error() {
        // The engine is closed after the fork, so that only the open is
        // on the worker.
        a_fork_falls_in("open", || Box::new(|| Some(crate::Engine::gpu(None).expect("an adapter"))));
    }

    /// Closing a GPU is counted too: a child forked while a thread closes
    /// one (2-4 ms on lavapipe) refuses to open its own, where it hung
    /// (5 forks in 6) or died in the dynamic loader (the sixth) before.
    /// Skipped without an adapter.
    #[cfg_attr(miri, ignore = "Miri runs no fork and no GPU")]
    #[cfg(unix)]
    #[test]
    fn a_child_forked_while_a_gpu_closes_gets_a_device_error() {
        a_fork_falls_in("close", || {
            let engine = crate::Engine::gpu(None).expect("an adapter");
            Box::new(move || {
                drop(engine);
                None
            })
        });
    }

    /// Listing the adapters loads the drivers: a child forked while a
    /// thread was inside the driver is refused the list (an error, not an
    /// empty list), and a child forked after gets it.
    #[cfg_attr(miri, ignore = "Miri runs no fork")]
    #[cfg(unix)]
    #[test]
    fn a_child_forked_mid_section_is_refused_the_adapter_list() {
        let (inside, done) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
        let holder = {
            let (inside, done) = (inside.clone(), done.clone());
            std::thread::spawn(move || {
                let section = enter("open the test's device").expect("a section in this process");
                inside.wait();
                done.wait();
                drop(section);
            })
        };
        inside.wait();
        let refused = in_child(20, || match super::super::wgpu_device::adapters() {
            Err(e) if e.code() == 10 && e.to_string().contains("list the GPU adapters") => 0,
            Err(_) => 1,
            Ok(_) => 2,
        });
        done.wait();
        holder.join().unwrap();
        assert_eq!(refused, Some(0), "the child listed adapters mid-section (2), or failed otherwise (1), or hung (None)");
        let listed = in_child(60, || match super::super::wgpu_device::adapters() {
            Ok(_) => 0,
            // Another test's open or close was under way at this fork.
            Err(e) if e.code() == 10 => 0,
            Err(_) => 1,
        });
        assert_eq!(listed, Some(0), "a child forked after the section could not list the adapters");
    }
}
