//! The CPU engine: host memory, operations on all cores for large data.

/// Ops on at least this many bytes split their work across threads.
pub const PARALLEL_BYTES: usize = 1 << 20;

