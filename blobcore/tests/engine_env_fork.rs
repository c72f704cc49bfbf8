//! A child forked while another thread opens the GPU that
//! `BLOBCORE_ENGINE` names gets an answer from `Engine::default_engine`,
//! never a wait: the engine is made on first use without a lock
//! (`blobcore::first_use`), so the child does not wait for an opening it
//! does not have, and its own opening is refused (`engine::in_driver`)
//! before it reaches a driver whose state the fork copied half changed.
//! (Its own test binary: the variable is read once per process.)

use blobcore::{Blob, DType, Engine};
use std::time::Instant;

#[path = "../src/fork_child.rs"]
mod fork_child;

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
    assert!(!Engine::default_engine_is_made(), "nothing has asked for the default engine yet");
    let opener = std::thread::spawn(|| Engine::default_engine().map(|e| e.is_gpu()));
    // Fork about a quarter into the opening (77 ms on lavapipe on the 2-core VM).
    std::thread::sleep(open_took / 4);
    let child = fork_child::in_child(30, || {
        let forked = |e: &blobcore::Error| e.code() == 10 && e.to_string().contains("fork");
        match Engine::default_engine() {
            // Forked mid-opening: the child's own opening is refused.
            Err(e) if forked(&e) => 0,
            Err(_) => 1,
            // Forked after it: the parent's engine, unusable here.
            Ok(e) if !e.is_gpu() => 2,
            Ok(e) => match Blob::tensor(&e, DType::F32, &[64]).and_then(|b| b.fill(1.0)) {
                Err(e) if forked(&e) => 0,
                _ => 3,
            },
        }
    });
    assert_eq!(opener.join().unwrap().ok(), Some(true), "the parent's default engine is its GPU");
    assert!(Engine::default_engine_is_made());
    assert_eq!(child, Some(0), "the child hung (None) or got an answer other than a fork error");
    // The parent's engine works.
    let e = Engine::default_engine().unwrap();
    let b = Blob::tensor(&e, DType::F32, &[64]).unwrap();
    b.fill(2.0).unwrap();
    assert_eq!(b.to_vec::<f32>().unwrap(), vec![2.0; 64]);
}
