//! Forks during GPU work: a child always gets an answer. (Their own test
//! binary, one test at a time: the forks must not fall into other tests'
//! work, and the backtrace setting below is read once per process.)
#![cfg(unix)]

use blobcore::{Blob, DType, Engine};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

#[path = "../src/fork_child.rs"]
mod fork_child;

/// One test at a time (see above).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Children forked while another thread opens, uses and closes GPU
/// engines in a loop each get an answer: the fork's `Error::Device` when
/// the fork fell while that thread was inside the driver (opening or
/// closing), a working GPU of their own otherwise. Before closes were
/// counted, 6 of 100 such forks fell in a close (2-4 ms on lavapipe):
/// five children hung and one died in the dynamic loader. (wgpu only: a CUDA child cannot open a device
/// once its parent has.)
#[test]
fn children_forked_while_engines_open_and_close_get_an_answer() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // Before any backtrace is asked for: wgpu-core's debug builds capture
    // one on every lock of a resource, under std's process-wide backtrace
    // lock, when RUST_BACKTRACE is set; a child forked while another
    // thread held that lock waits for it for ever (not a blobcore lock;
    // release builds trace nothing).
    std::env::set_var("RUST_LIB_BACKTRACE", "0");
    if Engine::gpu(None).is_err() {
        return;
    }
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let worker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let e = Engine::gpu(None).unwrap();
                let b = Blob::tensor(&e, DType::F32, &[4096]).unwrap();
                b.fill(1.0).unwrap();
                assert_eq!(b.to_vec::<f32>().unwrap()[4095], 1.0);
            }
        })
    };
    let mut answers = std::collections::BTreeMap::new();
    for i in 0..std::env::var("BLOBCORE_TEST_FORKS").ok().and_then(|v| v.parse().ok()).unwrap_or(60u64) {
        std::thread::sleep(std::time::Duration::from_micros(500 + i * 997 % 20_000));
        let child = fork_child::in_child(30, || match Engine::gpu(None) {
            Err(e) if e.code() == 10 && e.to_string().contains("forked") => 0,
            Err(_) => 1,
            Ok(e) => match Blob::tensor(&e, DType::F32, &[64]).and_then(|b| b.fill(2.0).and_then(|()| b.to_vec::<f32>())) {
                Ok(v) if v == vec![2.0; 64] => 0,
                _ => 2,
            },
        });
        *answers.entry(child).or_insert(0) += 1;
        if child != Some(0) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    worker.join().unwrap();
    assert_eq!(answers.keys().collect::<Vec<_>>(), [&Some(0)], "children that hung (None), failed to open (1) or got wrong values (2): {answers:?}");
}

/// What a forked child makes of opening and using a GPU of its own: 0
/// refused naming the fork, 3 opened and computed right, 1 another
/// error, 2 wrong values.
fn open_in_child() -> i32 {
    match Engine::gpu(None) {
        Err(e) if e.code() == 10 && e.to_string().contains("forked") => 0,
        Err(_) => 1,
        Ok(e) => match Blob::tensor(&e, DType::F32, &[64]).and_then(|b| b.fill(2.0).and_then(|()| b.to_vec::<f32>())) {
            Ok(v) if v == vec![2.0; 64] => 3,
            _ => 2,
        },
    }
}

/// Work submitted to a GPU and not yet seen done counts as a thread in
/// the driver (which runs it on threads of its own, compiling kernels
/// there under process-wide locks): a child forked right after a fill
/// was submitted is refused a GPU of its own, naming the fork; once
/// `synchronize` has seen the work done, a child opens and uses one.
#[test]
fn a_child_forked_while_submitted_work_runs_is_refused_until_it_is_done() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    std::env::set_var("RUST_LIB_BACKTRACE", "0");
    let Ok(e) = Engine::gpu(None) else { return };
    let b = Blob::tensor(&e, DType::F32, &[1 << 24]).unwrap();
    e.synchronize().unwrap();
    // Submitted, and not waited for: the count ends only at a later
    // submission or wait that sees it done, however fast the device.
    b.fill(1.0).unwrap();
    let during = fork_child::in_child(30, open_in_child);
    e.synchronize().unwrap();
    let after = fork_child::in_child(60, open_in_child);
    assert_eq!(b.to_vec::<f32>().unwrap()[(1 << 24) - 1], 1.0);
    assert_eq!((during, after), (Some(0), Some(3)), "a child forked while work ran, then one forked after it was done: 0 refused, 3 worked, 1 failed, 2 wrong values, None hung");
}
