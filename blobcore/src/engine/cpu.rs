//! The CPU engine: host memory, operations on all cores for large data.

use super::Engine;
use std::sync::OnceLock;

/// Ops on at least this many bytes split their work across threads.
pub const PARALLEL_BYTES: usize = 1 << 20;

pub(crate) fn default_engine() -> Engine {
    static CPU: OnceLock<Engine> = OnceLock::new();
    CPU.get_or_init(Engine::new_cpu).clone()
}
