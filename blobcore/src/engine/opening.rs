//! Devices being opened, as a forked child sees them.
//!
//! Opening a GPU takes a driver tens to hundreds of milliseconds, inside
//! locks and threads of its own. A child forked while another thread of
//! its parent is in there gets a copy of the driver's state half changed,
//! with its locks held by a thread it does not have: opening a device
//! there hung (lavapipe, about one fork in three). So every open is
//! counted here, with the process it runs in, and an open in a process
//! forked while one was under way is refused with `Error::Device` before
//! the driver is called — as every use of a parent's device is in a
//! forked child (see [`super::gpu::Gpu`]). The count is one atomic word
//! that the child inherits as the fork found it; no lock is involved.

use crate::error::err;
use crate::Result;
use std::sync::atomic::{AtomicU64, Ordering};

/// Opens under way: the process id in the high 32 bits, the number of
/// its threads opening a device in the low 32 bits.
static OPENS: AtomicU64 = AtomicU64::new(0);

/// An open in progress, counted until dropped.
pub(crate) struct Opening<'a> {
    opens: &'a AtomicU64,
}

/// Counts an open of `what` on this thread, or refuses it when this
/// process was forked while a thread of its parent was opening a device.
pub(crate) fn begin(what: &str) -> Result<Opening<'static>> {
    begin_on(&OPENS, what)
}

fn begin_on<'a>(opens: &'a AtomicU64, what: &str) -> Result<Opening<'a>> {
    let me = u64::from(std::process::id());
    let mut cur = opens.load(Ordering::Acquire);
    loop {
        let (pid, n) = (cur >> 32, cur & 0xffff_ffff);
        let next = match (pid == me, n) {
            (true, n) => (me << 32) | (n + 1),
            // No open under way here, or one of another process's (our
            // parent's) that finished before it forked us.
            (false, 0) => (me << 32) | 1,
            (false, _) => {
                return Err(err!(
                    Device,
                    "cannot open {what}: this process ({me}) was forked from process {pid} while another of its threads was opening a device, and the driver's state was copied half changed (a driver cannot be used across fork); open devices before forking, or start workers with the spawn or forkserver method"
                ))
            }
        };
        match opens.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Ok(Opening { opens }),
            Err(now) => cur = now,
        }
    }
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        // This process's count, raised by `begin_on` (a fork since then
        // does not run this in the child: the child has not this thread).
        self.opens.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use crate::fork_child::in_child;
    use std::sync::{Arc, Barrier};
    use std::time::{Duration, Instant};

    #[test]
    fn opens_on_many_threads_are_counted_and_released() {
        static OPENS: AtomicU64 = AtomicU64::new(0);
        let me = u64::from(std::process::id());
        let start = Arc::new(Barrier::new(9));
        let hold = Arc::new(Barrier::new(9));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (start, hold) = (start.clone(), hold.clone());
                std::thread::spawn(move || {
                    start.wait();
                    let o = begin_on(&OPENS, "a device").expect("an open in this process");
                    hold.wait();
                    hold.wait();
                    drop(o);
                })
            })
            .collect();
        start.wait();
        hold.wait();
        assert_eq!(OPENS.load(Ordering::Acquire), (me << 32) | 8);
        hold.wait();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(OPENS.load(Ordering::Acquire), me << 32);
    }

    /// A child forked while a thread opens a device refuses to open one;
    /// a child forked after the open finished opens its own.
    #[cfg_attr(miri, ignore = "Miri runs no fork")]
    #[cfg(unix)]
    #[test]
    fn a_child_forked_mid_open_refuses_to_open() {
        static OPENS: AtomicU64 = AtomicU64::new(0);
        let (inside, done) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
        let opener = {
            let (inside, done) = (inside.clone(), done.clone());
            std::thread::spawn(move || {
                let o = begin_on(&OPENS, "a device").expect("an open in this process");
                inside.wait();
                done.wait();
                drop(o);
            })
        };
        inside.wait();
        let refused = in_child(10, || match begin_on(&OPENS, "the test's device") {
            Err(e) if e.code() == 10 && e.to_string().contains("forked") && e.to_string().contains("the test's device") => 0,
            Err(_) => 1,
            Ok(_) => 2,
        });
        assert_eq!(refused, Some(0), "a child forked mid-open opened a device (2), or failed otherwise (1)");
        done.wait();
        opener.join().unwrap();
        let opened = in_child(10, || match begin_on(&OPENS, "a device") {
            Ok(o) => {
                drop(o);
                let me = u64::from(std::process::id());
                if OPENS.load(Ordering::Acquire) == me << 32 { 0 } else { 3 }
            }
            Err(_) => 1,
        });
        assert_eq!(opened, Some(0), "a child forked after the open could not open one");
    }

    /// The same with a real GPU engine (lavapipe where no GPU is): the
    /// fork falls while a thread is inside the driver's open, and the
    /// child's open is refused without calling the driver (which hung
    /// there before, about one fork in three). Skipped without an adapter.
    #[cfg_attr(miri, ignore = "Miri runs no fork and no GPU")]
    #[cfg(unix)]
    #[test]
    fn a_child_forked_while_a_gpu_opens_gets_a_device_error() {
        let me = u64::from(std::process::id());
        let opener = std::thread::spawn(|| crate::Engine::gpu(None).map(drop));
        let deadline = Instant::now() + Duration::from_secs(60);
        // Wait until a thread of this process is inside an open (this one,
        // or another test's).
        loop {
            let opens = OPENS.load(Ordering::Acquire);
            if opens >> 32 == me && opens & 0xffff_ffff > 0 {
                break;
            }
            if opener.is_finished() || Instant::now() > deadline {
                return; // no adapter here (the open failed at once), or it was too quick to catch
            }
            std::hint::spin_loop();
        }
        let child = in_child(10, || match crate::Engine::gpu(None) {
            Err(e) if e.code() == 10 && e.to_string().contains("forked") => 0,
            Err(_) => 1,
            Ok(_) => 2,
        });
        let parent = opener.join().unwrap();
        assert_eq!(child, Some(0), "the child hung (None), failed otherwise (1) or opened a GPU mid-fork (2)");
        assert!(parent.is_ok(), "the parent's open failed: {parent:?}");
    }
}
