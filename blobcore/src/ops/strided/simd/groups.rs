//! Streamed transpose tiles of 4-byte elements whose destination rows
//! are a few groups of eight, read from far source rows (NCHW -> NHWC
//! with C = 16, 24, ... 64 channels in a tile): for each eight source
//! columns, every group's 8 x 8 transpose first, then the eight
//! destination rows they make written front to back, so that every
//! 64-byte line is finished by consecutive streamed stores.
//!
//! The packed tiles (`tiles.rs`) write rows of partial lines through a
//! scratch, in bursts after their transposes, and took NCHW -> NHWC at C
//! = 24, 40 and 56 to 0.35-0.55x of the streamed copy; this form keeps
//! a few lines in flight between the reads (session 77, 2-core Emerald
//! Rapids VM, 256 MiB: C = 24 0.43 -> 1.2x, C = 40 0.45 -> 1.1x, C = 56
//! 0.52 -> 0.82x, C = 192 0.77 -> 1.2x).

use super::registers::t8;
use crate::ops::strided::nest::FAR_ROW_BYTES;
use crate::ops::strided::Axis;
use std::arch::x86_64::*;

/// Source rows of a tile that may share one set of the L2 (counted by
/// `nest::rows_per_set`). Rows a large power of two apart (C = 32, 64
/// or 256 channels of 512 x 512, 256 x 256 ... pixels) in tiles of 32
/// all fall in one or two sets, and each line, read in two halves, is
/// evicted between them (C = 64 fell from 0.6x to 0.35x of the streamed
/// copy at 256 MiB); such rows come in tiles of 16 (`nest::far_rows`),
/// which the L2 holds (C = 64 0.53-0.60x -> 0.73-0.79x, C = 256
/// 0.68-0.76x -> 0.85x), or are packed by `tiles.rs`.
const ROWS_PER_SET: usize = 16;

/// Elements ahead of the current column that each source row is
/// prefetched into L1 (or into L2 only: `groups_f32`'s `into_l2`), every
/// 16 columns (256 bytes: level with none or 128 at C = 24, 40, 192,
/// better at 40). Some processors also want a hint into L2 further ahead
/// (`groups_f32`'s `l2_ahead`).
const AHEAD: usize = 64;

/// Whether [`groups_f32`] takes a streamed tile of `j` destination rows
/// (the groups' columns) and `i` source columns, the destination's
/// rows `di` elements apart from `dst`, the source's `sj` apart, with
/// `per_set` of the largest tile's rows in one L2 set at most
/// (`nest::rows_per_set`, counted once per task).
pub(crate) fn takes(j: usize, i: usize, di: usize, sj: usize, dst: *mut u32, per_set: usize) -> bool {
    j.is_multiple_of(8)
        && (16..=64).contains(&j)
        && i >= 8
        && di.is_multiple_of(8)
        && (dst as usize).is_multiple_of(32)
        && sj.saturating_mul(4) >= FAR_ROW_BYTES
        && per_set <= ROWS_PER_SET
        && super::has_avx()
}

/// `dst[a*i.ds + b] = src[a + b*sj]` for `a < i.n`, `b < j.n`, streamed
/// (the columns past the last eight with plain stores), for a tile
/// [`takes`] accepts. Each source row is hinted [`AHEAD`] elements ahead
/// into L1, or into L2 only with `into_l2` (`Tuning::groups_hint_into_l2`:
/// rows that crowd an L1 set, whose hinted lines would evict each other
/// before they are read); with `l2_ahead` > 0 also into L2 that many
/// elements ahead (`tuning::groups_ahead_elements`). Hints: no result
/// depends on them.
///
/// # Safety
/// Every element named is inside its memory; `takes(j.n, i.n, i.ds,
/// sj, dst, _)` holds (AVX present, `dst` and `i.ds * 4` 32-byte aligned).
pub(super) unsafe fn groups_f32(j: Axis, i: Axis, dst: *mut u32, src: *const u32, sj: usize, into_l2: bool, l2_ahead: usize) {
    let di = i.ds as usize;
    // SAFETY: forwarded; j.n is 8 times the group count (takes). Where
    // the hints go is a constant of each kernel, not a branch in its
    // loop.
    unsafe {
        match j.n / 8 {
            2 => hinted::<2>(i.n, dst, di, src, sj, into_l2, l2_ahead),
            3 => hinted::<3>(i.n, dst, di, src, sj, into_l2, l2_ahead),
            4 => hinted::<4>(i.n, dst, di, src, sj, into_l2, l2_ahead),
            5 => hinted::<5>(i.n, dst, di, src, sj, into_l2, l2_ahead),
            6 => hinted::<6>(i.n, dst, di, src, sj, into_l2, l2_ahead),
            7 => hinted::<7>(i.n, dst, di, src, sj, into_l2, l2_ahead),
            _ => hinted::<8>(i.n, dst, di, src, sj, into_l2, l2_ahead),
        }
    }
}

/// [`groups`] of `G` groups with the hints `into_l2` asks for.
///
/// # Safety
/// As [`groups`].
#[inline(always)]
unsafe fn hinted<const G: usize>(n: usize, dst: *mut u32, di: usize, src: *const u32, sj: usize, into_l2: bool, l2_ahead: usize) {
    // SAFETY: forwarded.
    unsafe {
        if into_l2 {
            groups::<G, true>(n, dst, di, src, sj, l2_ahead)
        } else {
            groups::<G, false>(n, dst, di, src, sj, l2_ahead)
        }
    }
}

/// [`groups_f32`] with `G` groups of eight destination columns. Each
/// source row is hinted into L1 just before its first read of a line
/// ahead; with `INTO_L2`, all the tile's rows are hinted into L2 only,
/// one after the other, before the first group's reads of that column
/// (the hints interleaved with the reads measured slower for rows that
/// crowd an L1 set: see `Tuning::groups_hint_into_l2`).
///
/// # Safety
/// As [`groups_f32`], with `j.n == 8 * G`.
#[target_feature(enable = "avx")]
unsafe fn groups<const G: usize, const INTO_L2: bool>(n: usize, dst: *mut u32, di: usize, src: *const u32, sj: usize, l2_ahead: usize) {
    let whole = n / 8 * 8;
    // SAFETY: a + 8 <= whole <= n and g * 8 + k < 8 * G = j.n: inside
    // the tile (the contract); the streamed stores are 32-byte aligned
    // (dst and di * 4 are, and every offset from them is a multiple of
    // 8 elements); a prefetch never faults.
    unsafe {
        for a in (0..whole).step_by(8) {
            let mut t = [[_mm256_setzero_ps(); 8]; G];
            if INTO_L2 && a % 16 == 0 {
                for row in 0..8 * G {
                    _mm_prefetch::<_MM_HINT_T1>(src.wrapping_add(a + row * sj + AHEAD) as *const i8);
                }
            }
            for (g, tg) in t.iter_mut().enumerate() {
                let mut r = [_mm256_setzero_ps(); 8];
                for (k, rk) in r.iter_mut().enumerate() {
                    let s = src.add(a + (g * 8 + k) * sj);
                    if a % 16 == 0 {
                        if !INTO_L2 {
                            _mm_prefetch::<_MM_HINT_T0>(s.wrapping_add(AHEAD) as *const i8);
                        }
                        if l2_ahead > 0 {
                            _mm_prefetch::<_MM_HINT_T1>(s.wrapping_add(l2_ahead) as *const i8);
                        }
                    }
                    *rk = _mm256_loadu_ps(s as *const f32);
                }
                *tg = t8(r);
            }
            for k in 0..8 {
                let d = dst.add((a + k) * di) as *mut f32;
                for (g, tg) in t.iter().enumerate() {
                    _mm256_stream_ps(d.add(g * 8), tg[k]);
                }
            }
        }
        for a in whole..n {
            for b in 0..8 * G {
                *dst.add(a * di + b) = *src.add(a + b * sj);
            }
        }
    }
}
