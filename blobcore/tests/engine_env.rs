//! `BLOBCORE_ENGINE` naming no engine is an InvalidArgument error naming
//! the value, and changes nothing: `set_default` still works afterwards.
//! (Its own test binary: the variable is read once per process.)

use blobcore::Engine;

#[test]
fn a_bad_blobcore_engine_value_is_a_clear_error() {
    // This binary's only test: nothing else reads the environment meanwhile.
    std::env::set_var("BLOBCORE_ENGINE", "tpu");
    let e = Engine::default_engine().unwrap_err();
    assert_eq!(e.code(), 3);
    assert!(e.to_string().contains("\"tpu\""), "{e}");
    // Asked again: the same answer, not a different engine.
    assert_eq!(Engine::default_engine().unwrap_err(), e);
    Engine::set_default(&Engine::cpu());
    assert!(!Engine::default_engine().unwrap().is_gpu());
}
