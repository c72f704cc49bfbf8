//! Non-temporal copies: runs, rows of runs, merges of parts and fills.

use super::has_avx;
use std::arch::x86_64::*;

/// One contiguous run of `bytes`: with `stream`, whole aligned 32-byte
/// pieces on AVX, written with non-temporal stores (no read for
/// ownership); otherwise `memcpy`.
///
/// # Safety
/// `bytes` readable at `src` and writable at `dst`, not overlapping.
#[inline]
pub(crate) unsafe fn run(dst: *mut u8, src: *const u8, bytes: usize, stream: bool) {
    if stream && bytes >= 64 && bytes.is_multiple_of(32) && (dst as usize).is_multiple_of(32) && has_avx() {
        // SAFETY: forwarded; AVX present, size and alignment checked above.
        unsafe { stream_copy(dst, src, bytes) };
        return;
    }
    // SAFETY: forwarded from the caller.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
}

/// Copies `bytes` (a multiple of 32) to a 32-byte aligned `dst` with
/// non-temporal stores, prefetching its reads ahead.
///
/// # Safety
/// AVX present; `bytes` readable at `src`, writable at `dst`.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn stream_copy(dst: *mut u8, src: *const u8, bytes: usize) {
    // SAFETY: k + 32 <= bytes for every k; dst + k is 32-byte aligned.
    unsafe {
        for k in (0..bytes).step_by(32) {
            // Within the run only: the lines past it are not this
            // copy's (in the packed transposes they are scratch).
            if k % 64 == 0 && k + crate::ops::PREFETCH_BYTES < bytes {
                crate::ops::prefetch(src.add(k + crate::ops::PREFETCH_BYTES), 64);
            }
            let v = _mm256_loadu_ps(src.add(k) as *const f32);
            _mm256_stream_ps(dst.add(k) as *mut f32, v);
        }
    }
}

/// [`stream_copy`] of `rows` runs of `bytes` (a multiple of 32, at
/// least 64), run `r` from `src + r * ss` to `dst + r * ds`, in one loop.
///
/// # Safety
/// AVX present; every run readable at its source and writable at its
/// destination, each destination run 32-byte aligned.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn stream_rows(dst: *mut u8, ds: usize, src: *const u8, ss: usize, bytes: usize, rows: usize) {
    // SAFETY: r < rows and k + 32 <= bytes: inside run r (the contract).
    unsafe {
        // Short runs far apart (a split copied part by part reads half
        // of every row) are fetched about 8 KiB ahead: the hardware
        // prefetcher follows them late, and split Channels at 1 GiB
        // went from 0.82-0.89x of a dense copy to 0.93-1.04x (session
        // 33; channel splits now take stream_split, and this path the
        // splits it refuses). Long or adjacent runs are left to the
        // hardware.
        let ahead = if ss != bytes && bytes <= 1024 { (8192 / ss).clamp(1, 64) } else { 0 };
        for r in 0..rows {
            if ahead > 0 && r + ahead < rows {
                crate::ops::prefetch(src.add((r + ahead) * ss), bytes);
            }
            stream_chunk(dst.add(r * ds), src.add(r * ss), bytes);
        }
    }
}

/// `bytes` (a multiple of 32) from `src` to a 32-byte aligned `dst`
/// with non-temporal stores and no prefetch: the inner loop of the row
/// kernels, which prefetch (or not) for the whole row themselves.
///
/// # Safety
/// AVX present; `bytes` readable at `src` and writable at `dst`.
#[inline]
#[target_feature(enable = "avx")]
unsafe fn stream_chunk(dst: *mut u8, src: *const u8, bytes: usize) {
    // SAFETY: k + 32 <= bytes for every k; dst + k is 32-byte aligned.
    unsafe {
        for k in (0..bytes).step_by(32) {
            let v = _mm256_loadu_ps(src.add(k) as *const f32);
            _mm256_stream_ps(dst.add(k) as *mut f32, v);
        }
    }
}

/// `m` 4-byte elements from `src` to `dst` at any alignment: the
/// 32-byte aligned middle with non-temporal stores ([`stream_chunk`]),
/// the head and tail element by element. For pieces just written to a
/// scratch in L1 (`interleave.rs`'s and `tiles.rs`'s row bursts), so
/// nothing is prefetched.
///
/// # Safety
/// AVX present; `m` elements readable at `src` and writable at `dst`,
/// not overlapping.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn stream_elements(dst: *mut u32, src: *const u32, m: usize) {
    // Elements before the first 32-byte boundary (all of them where
    // `align_offset` gives up, which it may).
    let head = dst.align_offset(32).min(m);
    let body = (m - head) / 8 * 8;
    // SAFETY: every index is below m (the contract); with a body, dst +
    // head is 32-byte aligned (`align_offset` of a u32 pointer counts
    // elements) and the body is whole 32-byte pieces.
    unsafe {
        for b in 0..head {
            *dst.add(b) = *src.add(b);
        }
        stream_chunk(dst.add(head) as *mut u8, src.add(head) as *const u8, body * 4);
        for b in head + body..m {
            *dst.add(b) = *src.add(b);
        }
    }
}

/// The most parts [`stream_merge`] takes.
pub(crate) const MERGE_PARTS: usize = 16;

/// Row `r` of `dst` is chunk `r` of each part side by side (`from[i]`
/// is part `i`'s start and chunk bytes), written in order with
/// non-temporal stores. With `ahead` > 0, each part's chunk `ahead`
/// bytes further on is hinted into L2 as its chunk is copied (a hint:
/// no result depends on it; see `tuning::merge_ahead_bytes`).
///
/// # Safety
/// AVX present; rows * chunk bytes readable at each part; rows * (sum
/// of chunks) writable at `dst`, 32-byte aligned; chunks multiples of
/// 32.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn stream_merge(dst: *mut u8, from: &[(*const u8, usize)], rows: usize, ahead: usize) {
    // Without `ahead` the parts' reads are left to the hardware
    // prefetcher. Session 33 fetched each part's chunks 32 rows ahead (a
    // gain on that host); on session 45's (Intel, AVX-512, 48 KiB L1d)
    // the hints cost: merge Channels at 1 GiB 0.82-0.94x of a dense copy
    // with them, 0.96-1.05x without (alternated, six rounds), and
    // 0.87-0.92x -> 0.97-1.00x at 128 MiB. Software prefetches hold
    // line-fill buffers that the streamed stores also need. Parts
    // exactly 512 MiB apart (halves of one blob) merge as fast as
    // separate allocations without them. AMD Zen 4 wants them (session
    // 82). wrapping_add: the hint may point past the part.
    let mut d = dst;
    for r in 0..rows {
        for &(p, c) in from {
            if ahead > 0 {
                crate::ops::prefetch_l2(p.wrapping_add(r * c).wrapping_add(ahead), c);
            }
            // SAFETY: row r < rows of this part and of dst (the
            // contract); d stays 32-byte aligned (chunks of 32-byte
            // multiples from an aligned start).
            unsafe {
                stream_chunk(d, p.add(r * c), c);
                d = d.add(c);
            }
        }
    }
}

/// The inverse of [`stream_merge`]: row `r` of `src` (the parts'
/// chunks side by side) is read in order and chunk `i` written to part
/// `i`'s row `r` (`to[i]` is part `i`'s start and chunk bytes) with
/// non-temporal stores.
///
/// # Safety
/// AVX present; rows * (sum of chunks) readable at `src`; rows * chunk
/// bytes writable at each part, 32-byte aligned, none overlapping
/// another or `src`; chunks multiples of 32.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn stream_split(src: *const u8, to: &[(*mut u8, usize)], rows: usize) {
    // One read stream, fetched into L2 ahead (crate::ops::L2_AHEAD_BYTES).
    // Into L1 instead (0.5-8 KiB ahead) it was slower than no hint,
    // down to 0.57x of a dense copy at 8 KiB, as were blocks of 16-64
    // rows per part, one part lagging the other and 64-byte stores
    // (session 45). wrapping_add: the hint may point past the source.
    let row: usize = to.iter().map(|&(_, c)| c).sum();
    let mut s = src;
    for r in 0..rows {
        crate::ops::prefetch_l2(s.wrapping_add(crate::ops::L2_AHEAD_BYTES), row);
        for &(p, c) in to {
            // SAFETY: row r < rows of this part and of src (the
            // contract); p + r * c stays 32-byte aligned (an aligned
            // start, chunks of 32-byte multiples).
            unsafe {
                stream_chunk(p.add(r * c), s, c);
                s = s.add(c);
            }
        }
    }
}

/// Writes the 32 bytes at `pattern` over `bytes` (a multiple of 32) at
/// a 32-byte aligned `dst` with non-temporal stores, then fences.
///
/// # Safety
/// AVX present; `bytes` writable at `dst`; 32 readable at `pattern`.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn stream_fill(dst: *mut u8, bytes: usize, pattern: *const u8) {
    // SAFETY: forwarded from the contract.
    unsafe {
        let v = _mm256_loadu_ps(pattern as *const f32);
        for k in (0..bytes).step_by(32) {
            _mm256_stream_ps(dst.add(k) as *mut f32, v);
        }
        _mm_sfence();
    }
}
