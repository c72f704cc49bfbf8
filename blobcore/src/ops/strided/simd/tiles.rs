//! Transpose tiles of 4-byte elements (packed through a scratch tile,
//! or straight from the source), and tiles of 32-byte runs.

use super::interleave::{deinterleave, deinterleave_regs, interleave, interleave_regs, BURST};
use super::registers::{t4x4, t8x16, t8x8};
use super::{has_avx, has_avx2};
use super::stream::{run, stream_elements};
use crate::ops::strided::tuning::Tuning;
use crate::ops::strided::nest::Crowding;
use crate::ops::strided::Axis;
// Source rows a page or more apart are packed (often a power of two
// apart, they share cache sets); the planner caps a tile's count of them.
use crate::ops::strided::nest::FAR_ROW_BYTES;
use std::arch::x86_64::*;

/// The packed form's scratch for a tile of `j` destination rows, `i`
/// source rows and `c` batch steps: the row stride of the copied source
/// rows, that of the transposed rows, and the elements it needs in all
/// (growing with each argument, so the largest tile of a nest bounds them).
fn packed_layout(j: usize, i: usize, c: usize) -> (usize, usize, usize) {
    let bs = i.next_multiple_of(8) + 8;
    let rb = (c * j).next_multiple_of(16) + 16;
    (bs, rb, j * c * bs + i * rb)
}

/// Whether [`tile_f32`] packs a tile of `j` destination rows of `i`
/// source rows, the destination's rows `sj` elements apart in the source
/// (given AVX and scratch enough).
fn packs(j: usize, i: usize, sj: usize) -> bool {
    j >= 16 && i >= 8 && sj * 4 >= FAR_ROW_BYTES
}

/// Elements of scratch [`tile_f32`] may use on the tiles of a nest, whose
/// largest tile has `j` destination rows, `i` source rows and `c` batch
/// steps, the destination's rows `sj` elements apart in the source: none
/// when no tile can be packed (a small copy's tiles; a block of more than
/// a KiB is one of glibc's slower requests), else the largest tile's need.
pub(crate) fn packed_scratch(j: usize, i: usize, c: usize, sj: usize) -> usize {
    if has_avx() && packs(j, i, sj) {
        packed_layout(j, i, c).2
    } else {
        0
    }
}

/// `dst[a*i.ds + b] = src[a + b*j.ss]` for `a < i.n`, `b < j.n`.
/// With `stream`, whole 64-byte destination lines are written with
/// non-temporal stores (no read for ownership) where aligned. `tuning`
/// (the plan's) says where the next tile's source is prefetched to,
/// whether a streamed packed tile with a batch writes each destination
/// row's part in one burst (`Tuning::batched_rows_in_bursts`), and
/// whether streamed deinterleaves and unpacked tiles do
/// (`Tuning::rows_in_bursts`): hints, on which no result depends; as is
/// `crowding`, the most of the nest's largest tile's source rows that
/// share one L2 set and one L1 set (`nest::Crowding`: few enough in an
/// L2 set, and a streamed tile of a few groups of eight columns takes
/// `groups.rs`, which the tuning and the L1's count tell where to
/// prefetch: `Tuning::groups_hint_into_l2`).
///
/// # Safety
/// Every element named is inside its memory (the caller's contract).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn tile_f32(j: Axis, i: Axis, c: Axis, dst: *mut u32, src: *const u32, next: usize, stream: bool, tuning: Tuning, crowding: Crowding, scratch: &mut Vec<u32>) {
    // The caller checked all strides non-negative, i and j positive.
    let (sj, di) = (j.ss as usize, i.ds as usize);
    let (cs, cd) = (c.ss as usize, c.ds as usize);
    let avx = has_avx();
    // The tile's source rows (each `c.n` runs of `i.n`, usually one
    // long run) are first copied one after the other into a scratch
    // tile with a padded row stride: the source is read in long
    // sequential runs, and rows far apart (a large power of two apart
    // map to the same cache sets) are not re-read 32 bytes at a time.
    // The register transposes then write each destination row's part
    // of the tile (`c.n` runs of `j.n`) from start to end.
    let (bs, rb, need) = packed_layout(j.n, i.n, c.n);
    // Few short destination rows side by side (NCHW -> NHWC with C =
    // 2..8): an interleave of C source rows into one contiguous run.
    if has_avx2() && (2..=8).contains(&j.n) && di == j.n && (c.n == 1 || cd == i.n * di) && (c.n == 1 || cs == i.n) {
        let n = i.n * c.n;
        // SAFETY: forwarded; with these strides the tile (and its
        // batch) is n elements of each of the j.n source rows and one
        // run of n * j.n destination elements.
        unsafe {
            match j.n {
                2 => interleave_regs::<2>(n, dst, src, sj, stream),
                3 => interleave_regs::<3>(n, dst, src, sj, stream),
                4 => interleave_regs::<4>(n, dst, src, sj, stream),
                5 => interleave::<5>(n, dst, src, sj, stream),
                6 => interleave::<6>(n, dst, src, sj, stream),
                7 => interleave::<7>(n, dst, src, sj, stream),
                _ => interleave_regs::<8>(n, dst, src, sj, stream),
            }
        }
        return;
    }
    // The reverse: one interleaved run split into few destination rows
    // (NHWC -> NCHW with C = 2..8).
    if has_avx2() && (2..=8).contains(&i.n) && sj == i.n && c.n == 1 {
        let bursts = tuning.rows_in_bursts();
        // SAFETY: forwarded; the tile is one run of j.n * i.n source
        // elements and j.n elements of each of the i.n destination rows.
        unsafe {
            match i.n {
                2 => deinterleave_regs::<2>(j.n, dst, di, src, stream, bursts),
                3 => deinterleave_regs::<3>(j.n, dst, di, src, stream, bursts),
                4 => deinterleave_regs::<4>(j.n, dst, di, src, stream, bursts),
                5 => deinterleave::<5>(j.n, dst, di, src, stream),
                6 => deinterleave::<6>(j.n, dst, di, src, stream),
                7 => deinterleave::<7>(j.n, dst, di, src, stream),
                _ => deinterleave_regs::<8>(j.n, dst, di, src, stream, bursts),
            }
        }
        return;
    }
    // Streamed, from far rows that spread over the L2's sets, with 2 to
    // 8 groups of eight destination columns (NCHW -> NHWC with C = 24,
    // 40, 56, or 32 of more channels): each eight columns' rows written
    // whole from the registers (see `groups.rs`), partial lines included.
    if stream && c.n == 1 && super::groups::takes(j.n, i.n, di, sj, dst, crowding.l2) {
        let into_l2 = tuning.groups_hint_into_l2(j.n, crowding.l1);
        // SAFETY: forwarded; AVX present and the stores aligned (takes).
        unsafe { super::groups::groups_f32(j, i, dst, src, sj, into_l2, crate::ops::strided::tuning::groups_ahead_elements()) };
        return;
    }
    if avx && packs(j.n, i.n, sj) && need <= scratch.capacity() {
        // SAFETY: forwarded; AVX present; the scratch holds `need`.
        unsafe { packed(j, i, c, dst, src, next, stream, tuning, scratch.as_mut_ptr(), bs, rb) };
        return;
    }
    // The next tile's source lines are prefetched a few per register
    // block, spread over this tile's work.
    let lines = (i.n * 4).div_ceil(64);
    let total = if next != 0 { j.n * c.n * lines } else { 0 };
    let blocks = c.n * (i.n / 8).max(1) * (j.n / 16).max(1);
    let mut pf = Ahead { base: next, sj: sj * 4, cs: cs * 4, rows: j.n, steps: c.n, lines, b: 0, k: 0, line: 0, l1: tuning.next_tile_into_l1() };
    let per = total.div_ceil(blocks);
    for k in 0..c.n {
        // SAFETY: forwarded; step k of the batch is inside the tile.
        unsafe { tile_f32_from(j, i, dst.add(k * cd), src.add(k * cs), sj, stream, tuning.rows_in_bursts(), &mut pf, per) }
    }
}

/// The packed form of [`tile_f32`]: source rows into the scratch
/// (stride `bs` per run), register transposes into the scratch's
/// destination rows (stride `rb`, after the source rows), then each
/// destination row's part written front to back. A streamed tile of
/// whole 64-byte destination lines skips the scratch's destination
/// rows: the register transposes stream the lines themselves, unless
/// it has a batch and `tuning` asks for each row's part in one burst.
///
/// # Safety
/// As [`tile_f32`]; AVX present; `buf` holds `j.n * c.n * bs + i.n *
/// rb` elements, `bs >= i.n`, `rb >= c.n * j.n`.
#[target_feature(enable = "avx")]
#[allow(clippy::too_many_arguments)]
unsafe fn packed(j: Axis, i: Axis, c: Axis, dst: *mut u32, src: *const u32, next: usize, stream: bool, tuning: Tuning, buf: *mut u32, bs: usize, rb: usize) {
    let (sj, di) = (j.ss as usize, i.ds as usize);
    let (cs, cd) = (c.ss as usize, c.ds as usize);
    let na = j.n * c.n * bs;
    let rs = c.n * bs; // scratch stride of one source row
    // SAFETY: row b, step k of the tile is i.n readable elements
    // at src + b*sj + k*cs (the caller's contract); the scratch
    // holds na + nb elements: the source rows (runs of i.n < bs,
    // not overlapping) then the destination rows (runs of c.n *
    // j.n < rb); every scratch element read below was written
    // first; destination row a, step k is j.n writable elements at
    // dst + a*di + k*cd (the direct write-out's lines start at
    // multiples of 16 elements from a 64-byte aligned `dst`, as the
    // streamed t8x16 needs).
    unsafe {
        let ahead = AHEAD_ROWS;
        for b in 0..j.n {
            if ahead > 0 && b + ahead < j.n {
                for k in 0..c.n {
                    let row = src.add((b + ahead) * sj + k * cs) as *const i8;
                    for off in (0..i.n * 4).step_by(64) {
                        _mm_prefetch::<_MM_HINT_T0>(row.add(off));
                    }
                }
            }
            for k in 0..c.n {
                std::ptr::copy_nonoverlapping(src.add(b * sj + k * cs), buf.add(b * rs + k * bs), i.n);
            }
        }
        let (ai, bj) = (i.n / 8 * 8, j.n / 16 * 16);
        // Prefetch the next tile's source rows (same shape assumed;
        // a prefetch never faults) spread over the writes below.
        let lines = (i.n * 4).div_ceil(64);
        let total = if next != 0 { j.n * c.n * lines } else { 0 };
        let per_row = total.div_ceil(i.n);
        let mut pf = Ahead { base: next, sj: sj * 4, cs: cs * 4, rows: j.n, steps: c.n, lines, b: 0, k: 0, line: 0, l1: tuning.next_tile_into_l1() };
        // Streamed, with every destination row's part made of whole
        // 64-byte lines (no edges): the register transposes write
        // each line straight to the destination, eight rows at a
        // time, instead of through a destination tile in the scratch
        // (an L2 round trip per element; `transposed (0,3)` of
        // `[64, 128, 256, 128]` f32 in a C model of this kernel,
        // 2 threads: 147-150 -> 120-131 ms).
        // (Not for a batch where the tuning wants bursts per row: see
        // `Tuning::batched_rows_in_bursts`.)
        let lined = |n: usize| n.is_multiple_of(16);
        let direct = c.n == 1 || !tuning.batched_rows_in_bursts();
        if direct && stream && ai == i.n && bj == j.n && (dst as usize).is_multiple_of(64) && lined(di) && (c.n == 1 || lined(cd)) {
            for a in (0..ai).step_by(8) {
                pf.issue(per_row * 8);
                for k in 0..c.n {
                    for b in (0..bj).step_by(16) {
                        t8x16::<true>(dst.add(a * di + k * cd + b), di, buf.add(b * rs + k * bs + a), rs);
                    }
                }
            }
            return;
        }
        let out = buf.add(na);
        for a in (0..ai).step_by(8) {
            for k in 0..c.n {
                for b in (0..bj).step_by(16) {
                    t8x16::<false>(out.add(a * rb + k * j.n + b), rb, buf.add(b * rs + k * bs + a), rs);
                }
            }
        }
        // Edges: columns past bj of rows below ai, then rows past ai.
        for k in 0..c.n {
            let (d, s) = (out.add(k * j.n), buf.add(k * bs));
            let ri = Axis { n: rb as isize as usize, ds: rb as isize, ss: 1 };
            if bj < j.n {
                tile_f32_from(Axis { n: j.n - bj, ..j }, Axis { n: ai, ..ri }, d.add(bj), s.add(bj * rs), rs, false, false, &mut Ahead::none(), 0);
            }
            if ai < i.n {
                tile_f32_from(Axis { n: j.n, ..j }, Axis { n: i.n - ai, ..ri }, d.add(ai * rb), s.add(ai), rs, false, false, &mut Ahead::none(), 0);
            }
        }
        // Each destination row's part of the tile, front to back.
        let whole = c.n == 1 || cd == j.n;
        for a in 0..i.n {
            pf.issue(per_row);
            let (d, s) = (dst.add(a * di) as *mut u8, out.add(a * rb) as *const u8);
            if whole {
                run(d, s, c.n * j.n * 4, stream);
            } else {
                for k in 0..c.n {
                    run(d.add(k * cd * 4), s.add(k * j.n * 4), j.n * 4, stream);
                }
            }
        }
    }
}

/// Rows of a tile's source prefetched ahead of the one being packed.
const AHEAD_ROWS: usize = 2;

/// Prefetches the lines of a tile's source rows a few at a time
/// (`rows` rows of `steps` runs of `lines` lines; byte strides).
struct Ahead {
    base: usize,
    sj: usize,
    cs: usize,
    rows: usize,
    steps: usize,
    lines: usize,
    b: usize,
    k: usize,
    line: usize,
    /// Into L1 rather than L2 (the plan's tuning: see
    /// `Tuning::next_tile_into_l1`).
    l1: bool,
}

impl Ahead {
    /// Prefetches nothing.
    fn none() -> Self {
        Ahead { base: 0, sj: 0, cs: 0, rows: 0, steps: 0, lines: 0, b: 0, k: 0, line: 0, l1: false }
    }

    #[inline]
    fn issue(&mut self, n: usize) {
        if self.base == 0 {
            return;
        }
        for _ in 0..n {
            if self.b >= self.rows {
                return;
            }
            let at = self.base.wrapping_add(self.b * self.sj + self.k * self.cs + self.line * 64) as *const i8;
            // SAFETY: a prefetch is a hint; it never faults.
            unsafe {
                if self.l1 {
                    _mm_prefetch::<_MM_HINT_T0>(at)
                } else {
                    _mm_prefetch::<_MM_HINT_T1>(at)
                }
            };
            self.line += 1;
            if self.line == self.lines {
                self.line = 0;
                self.k += 1;
                if self.k == self.steps {
                    self.k = 0;
                    self.b += 1;
                }
            }
        }
    }
}

/// [`tile_f32`] reading source row `b` at `src + b * sj`. With `bursts`
/// (the plan's `Tuning::rows_in_bursts`, a hint) a streamed tile of at
/// least [`BURST_COLUMNS`] whole columns goes through [`bursts_of_8`].
///
/// # Safety
/// As [`tile_f32`].
#[allow(clippy::too_many_arguments)]
unsafe fn tile_f32_from(j: Axis, i: Axis, dst: *mut u32, src: *const u32, sj: usize, stream: bool, bursts: bool, pf: &mut Ahead, per: usize) {
    let di = i.ds as usize;
    let avx = has_avx();
    let (wa, wb) = if avx { (8, 16) } else { (4, 4) };
    let (ai, bj) = (i.n / wa * wa, j.n / wb * wb);
    let aligned = stream && avx && (dst as usize).is_multiple_of(64) && (di * 4).is_multiple_of(64);
    // SAFETY (whole body): indices stay below i.n and j.n.
    unsafe {
        if aligned && bursts && bj >= BURST_COLUMNS {
            bursts_of_8(ai, bj, dst, di, src, sj, pf, per);
        } else {
            for a in (0..ai).step_by(wa) {
                for b in (0..bj).step_by(wb) {
                    pf.issue(per);
                    let (d, s) = (dst.add(a * di + b), src.add(a + b * sj));
                    if !avx {
                        t4x4(d, di, s, sj);
                    } else if aligned {
                        t8x16::<true>(d, di, s, sj);
                    } else {
                        t8x16::<false>(d, di, s, sj);
                    }
                }
            }
        }
        // Columns past bj in groups of eight (blocked layouts such as
        // nChw8c have rows of exactly eight).
        let mut bj = bj;
        if avx {
            let bj8 = bj + (j.n - bj) / 8 * 8;
            // Rows of exactly 32 bytes, side by side: whole lines are
            // written by consecutive stores, so streaming works.
            let nt = stream && di == 8 && (dst as usize).is_multiple_of(32);
            for a in (0..ai).step_by(8) {
                for b in (bj..bj8).step_by(8) {
                    let (d, s) = (dst.add(a * di + b), src.add(a + b * sj));
                    if nt {
                        t8x8::<true>(d, di, s, sj);
                    } else {
                        t8x8::<false>(d, di, s, sj);
                    }
                }
            }
            bj = bj8;
        }
        // Edges: the columns past bj for every row, the rows past ai.
        for a in 0..i.n {
            let from = if a < ai { bj } else { 0 };
            for b in from..j.n {
                *dst.add(a * di + b) = *src.add(a + b * sj);
            }
        }
    }
}

/// Columns a streamed unpacked tile needs for [`bursts_of_8`]: 256
/// bytes per destination row. Tiles of 32 columns (`permute [1, 3, 5,
/// 0, 2, 4]`: 128 bytes per row) were slower through the scratch on the
/// Zen 3 VM (session 73: 73 -> 85 ms at 1 GiB) and keep the direct
/// stores.
const BURST_COLUMNS: usize = 64;

/// The whole 8 x 16 blocks of an unpacked tile (`ai` rows, a multiple of
/// 8; `bj` columns, a multiple of 16), eight destination rows at a
/// time: transposed into a scratch of eight rows of [`BURST`] (in L1),
/// then each row's piece streamed out whole, rather than 64 bytes to
/// each of the eight rows in turn (see `Tuning::rows_in_bursts`).
///
/// # Safety
/// As [`tile_f32`]; AVX present; `dst` and `di * 4` 64-byte aligned.
#[target_feature(enable = "avx")]
#[allow(clippy::too_many_arguments)]
unsafe fn bursts_of_8(ai: usize, bj: usize, dst: *mut u32, di: usize, src: *const u32, sj: usize, pf: &mut Ahead, per: usize) {
    // Eight rows of BURST, 64-byte aligned; each element is written by
    // the transposes before the row is streamed out (never read
    // uninitialised).
    #[repr(C, align(64))]
    struct Rows8([[u32; BURST]; 8]);
    let mut rows = std::mem::MaybeUninit::<Rows8>::uninit();
    let r = rows.as_mut_ptr() as *mut u32;
    // SAFETY: a + 8 <= ai <= i.n and b + 16 <= bj <= j.n: inside the
    // tile (the contract); the scratch's rows hold BURST >= w columns
    // from b0, whole 8 x 16 blocks, so every element streamed out was
    // written; the streamed stores are 64-byte aligned (the contract,
    // and b0 a multiple of 16).
    unsafe {
        for a in (0..ai).step_by(8) {
            for b0 in (0..bj).step_by(BURST) {
                let w = (bj - b0).min(BURST);
                for b in (0..w).step_by(16) {
                    pf.issue(per);
                    t8x16::<false>(r.add(b), BURST, src.add(a + (b0 + b) * sj), sj);
                }
                for k in 0..8 {
                    stream_elements(dst.add((a + k) * di + b0), r.add(k * BURST), w);
                }
            }
        }
    }
}

/// A tile of runs of `bytes` (a multiple of 32): for `a < i.n`, `b <
/// j.n`, the run at `src + (a*i.ss + b*j.ss)*es` goes to `dst +
/// (a*i.ds + b*j.ds)*es`, in 32-byte registers, with non-temporal
/// stores when `stream` and the destination is 32-byte aligned.
///
/// # Safety
/// AVX present; every run named is inside its memory (the caller's
/// contract) and runs do not overlap.
#[target_feature(enable = "avx")]
pub(crate) unsafe fn runs32(bytes: usize, i: Axis, j: Axis, es: isize, dst: *mut u8, src: *const u8, stream: bool) {
    let nt = stream && (dst as usize).is_multiple_of(32) && (i.ds * es) % 32 == 0 && (j.ds * es) % 32 == 0;
    // Runs read nearly in order along j (their source rows at most 256
    // bytes apart: nChw16c -> nChw8c reads 32 of every 64 bytes, twice
    // per tile) are fetched 8 KiB ahead: the hardware prefetcher
    // follows them late. That reorder at 1 GiB went from 0.71-0.79x of
    // the dense copy to 0.83-0.93x on the 2-core VM.
    let step = j.ss * es;
    let ahead = if (1..=256).contains(&step) { 8192 / step * step } else { 0 };
    // SAFETY (whole body): a < i.n, b < j.n, k + 32 <= bytes.
    unsafe {
        for a in 0..i.n as isize {
            for b in 0..j.n as isize {
                let d = dst.offset((a * i.ds + b * j.ds) * es);
                let s = src.offset((a * i.ss + b * j.ss) * es);
                if ahead > 0 && a == 0 {
                    crate::ops::prefetch(s.wrapping_offset(ahead), bytes);
                }
                for k in (0..bytes).step_by(32) {
                    let v = _mm256_loadu_ps(s.add(k) as *const f32);
                    if nt {
                        _mm256_stream_ps(d.add(k) as *mut f32, v);
                    } else {
                        _mm256_storeu_ps(d.add(k) as *mut f32, v);
                    }
                }
            }
        }
    }
}
