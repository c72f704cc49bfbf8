//! A child forked while another thread opens the GPU that
//! `BLOBCORE_ENGINE` names gets an answer from `Engine::default_engine`,
//! never a wait: the engine is made on first use without a lock
//! (`blobcore::first_use`), so the child does not wait for an opening it
//! does not have, and its own opening is refused (`engine::opening`)
//! before it reaches a driver whose state the fork copied half changed.
//! (Its own test binary: the variable is read once per process.)

use blobcore::{Blob, DType, Engine};
use std::time::{Duration, Instant};

/// The child's exit status, or None when it ran past `secs` and was killed.
fn wait_child(pid: libc::pid_t, secs: u64) -> Option<i32> {
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

#[test]
fn a_child_forked_while_the_default_gpu_opens_gets_an_answer() {
    // A GPU (lavapipe where there is none) is needed for a slow opening.
    let started = Instant::now();
    if Engine::gpu(None).is_err() {
        return;
    }
    let open_took = started.elapsed();
    // This binary's only test: nothing else reads the environment meanwhile.
    std::env::set_var("BLOBCORE_ENGINE", "gpu");
    let opener = std::thread::spawn(|| Engine::default_engine().map(|e| e.is_gpu()));
    // Fork about a quarter into the opening (77 ms on lavapipe on the 2-core VM).
    std::thread::sleep(open_took / 4);
    // SAFETY: the child runs blobcore calls on this thread only and leaves
    // through `_exit` (no test-harness code, no atexit handlers).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let forked = |e: &blobcore::Error| e.code() == 10 && e.to_string().contains("fork");
        let code = match Engine::default_engine() {
            // Forked mid-opening: the child's own opening is refused.
            Err(e) if forked(&e) => 0,
            Err(_) => 1,
            // Forked after it: the parent's engine, unusable here.
            Ok(e) if !e.is_gpu() => 2,
            Ok(e) => match Blob::tensor(&e, DType::F32, &[64]).and_then(|b| b.fill(1.0)) {
                Err(e) if forked(&e) => 0,
                _ => 3,
            },
        };
        // SAFETY: ends the child without unwinding into the harness.
        unsafe { libc::_exit(code) };
    }
    let child = wait_child(pid, 30);
    assert_eq!(opener.join().unwrap().ok(), Some(true), "the parent's default engine is its GPU");
    assert_eq!(child, Some(0), "the child hung (None) or got an answer other than a fork error");
    // The parent's engine works.
    let e = Engine::default_engine().unwrap();
    let b = Blob::tensor(&e, DType::F32, &[64]).unwrap();
    b.fill(2.0).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![2.0; 64]);
}
