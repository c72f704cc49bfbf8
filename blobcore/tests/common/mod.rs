//! Shared by the integration tests that run on every engine: the engine
//! under test is the default one, so `BLOBCORE_ENGINE=gpu cargo test`
//! runs the same tests on the GPU engine (`make test` does both).

use blobcore::Engine;

/// The engine the tests create their blobs on.
#[allow(dead_code)]
pub fn engine() -> Engine {
    Engine::default_engine().expect("BLOBCORE_ENGINE names an engine this machine has")
}
