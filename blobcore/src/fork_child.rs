//! For tests: run a closure in a forked child under a watchdog. (Compiled
//! into the library's unit tests, and into integration tests through
//! `#[path]`; it uses nothing of the crate.)

use std::time::{Duration, Instant};

/// Forks, runs `child` in the child and ends it with `_exit` of what
/// `child` returns (0 for success). Returns the child's exit status, or
/// None when it ran past `secs` (it is killed then) or died of a signal.
///
/// The child must call only what is usable after `fork` in a process
/// with other threads: the library's own code, the allocator (which
/// glibc's fork leaves usable), no test-harness code.
pub fn in_child(secs: u64, child: impl FnOnce() -> i32) -> Option<i32> {
    // SAFETY: the child runs only `child` (see above) and `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let code = child();
        // SAFETY: ends the child without the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut status = 0;
    loop {
        // SAFETY: `pid` is our child; `status` is a valid out-pointer.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            return libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
        }
        if Instant::now() > deadline {
            // SAFETY: as above; the child is killed and reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return None;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
