//! x86-64 kernels: register transposes of 4-byte elements (8x8 with AVX,
//! checked once at run time; 4x4 with SSE2, part of x86-64), the tiles
//! built on them (packed, unpacked, and grouped for rows of a few groups
//! of eight), interleaves of few rows, and non-temporal copies.

mod groups;
mod interleave;
mod registers;
mod stream;
mod tiles;

#[cfg(test)]
pub(crate) use groups::takes as groups_take;
#[cfg(test)]
pub(crate) use interleave::{deinterleave_regs, interleave_regs};
pub(crate) use stream::{run, stream_copy, stream_fill, stream_merge, stream_rows, stream_split, MERGE_PARTS};
pub(crate) use tiles::{packed_scratch, runs32, tile_f32};
use std::arch::x86_64::_mm_sfence;

/// Whether the CPU has AVX (`std` detects it once and keeps the answer in
/// an atomic: one load, no lock a fork could catch).
pub(crate) fn has_avx() -> bool {
    is_x86_feature_detected!("avx")
}

/// Whether the CPU has AVX2 (detected once, as [`has_avx`]).
pub(crate) fn has_avx2() -> bool {
    is_x86_feature_detected!("avx2")
}

/// Orders earlier non-temporal stores before what follows (they are
/// weakly ordered); called once at the end of each task that streamed.
pub(crate) fn fence() {
    // SAFETY: SSE is part of x86-64; the fence has no other effect.
    unsafe { _mm_sfence() }
}
