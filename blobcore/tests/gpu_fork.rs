//! Forks during GPU work on another thread: a child always gets an
//! answer. (Its own test binary: the forks must not fall into other
//! tests' work, and the backtrace setting below is read once per process.)
#![cfg(unix)]

use blobcore::{Blob, DType, Engine};
use std::sync::atomic::{AtomicBool, Ordering};

#[path = "../src/fork_child.rs"]
mod fork_child;

/// Children forked while another thread opens, uses and closes GPU
/// engines in a loop each get an answer: the fork's `Error::Device` when
/// the fork fell while that thread was inside the driver (opening or
/// closing), a working GPU of their own otherwise. Before closes were
/// counted, 6 of 100 such forks fell in a close (2-4 ms on lavapipe):
/// five children hung and one died in the dynamic loader. (wgpu only: a CUDA child cannot open a device
/// once its parent has.)
#[test]
fn children_forked_while_engines_open_and_close_get_an_answer() {
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
    for i in 0..60u64 {
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
