//! Runs a planned loop nest: the flat index space cut into tasks across
//! the pool, each body a run, a strided run, a tile or a tile of runs.

use super::nest::{nest, Body, Nest, Order};
use super::tuning::Tuning;
#[cfg(target_arch = "x86_64")]
use super::simd;
use super::{Axis, PACK_FLOATS, STREAM_BYTES, TASK_BYTES};
use rayon::prelude::*;
use smallvec::{smallvec, SmallVec};

/// Copies every element the (normalised) `axes` reach from `src` to `dst`.
///
/// # Safety
/// For every index of the axes, the element at `src + sum(index * ss) * es`
/// must be readable and the one at `dst + sum(index * ds) * es` writable;
/// distinct indices must reach distinct destination elements; both
/// pointers must be aligned to `es`, a power of two up to 8; source and
/// destination must not overlap.
pub(crate) unsafe fn copy(es: usize, axes: &[Axis], dst: *mut u8, src: *const u8, parallel: bool) {
    // SAFETY: forwarded.
    unsafe { copy_tuned(es, axes, dst, src, parallel, Tuning::host()) }
}

/// [`copy`] with the tile shapes of `tuning` (tests run every tuning on
/// any machine).
///
/// # Safety
/// As [`copy`].
pub(super) unsafe fn copy_tuned(es: usize, axes: &[Axis], dst: *mut u8, src: *const u8, parallel: bool, tuning: Tuning) {
    // Loops with a negative destination stride run backwards from their
    // last index: the same pairs of elements, with writes moving forwards.
    let (mut dst, mut src) = (dst as usize, src as usize);
    let mut flipped: SmallVec<[Axis; 12]> = SmallVec::with_capacity(axes.len());
    for a in axes {
        if a.ds < 0 && a.n > 0 {
            let last = a.n as isize - 1;
            dst = dst.wrapping_add_signed(last * a.ds * es as isize);
            src = src.wrapping_add_signed(last * a.ss * es as isize);
            flipped.push(Axis { n: a.n, ds: -a.ds, ss: -a.ss });
        } else {
            flipped.push(*a);
        }
    }
    let (dst, src) = (dst as *mut u8, src as *const u8);
    let n = nest(&flipped, es, tuning);
    let per_body = match n.kind {
        Body::Run { n } => n,
        Body::Strided { inner } => inner.n,
        Body::Tile { j, i, c, ei, ej, ec, .. } => i.n.min(ei) * j.n.min(ej) * c.n.min(ec),
        Body::Runs { n, j, i, ei, ej, .. } => n * i.n.min(ei) * j.n.min(ej),
    } * es;
    let total: usize = n.loops.iter().map(|a| a.n).product();
    let stream = total.saturating_mul(per_body) >= STREAM_BYTES;
    let (d, s) = (dst as usize, src as usize);
    // SAFETY (both calls): forwarded from this function's contract; each
    // flat index range below is a disjoint part of the nest.
    if parallel && total > 1 {
        let per_task = (TASK_BYTES / per_body.max(1)).max(1);
        let tasks = total.div_ceil(per_task).max(crate::engine::pool::threads().min(total));
        let chunk = total.div_ceil(tasks);
        crate::engine::pool::install(|| {
            (0..total.div_ceil(chunk)).into_par_iter().for_each(|t| {
                let lo = t * chunk;
                unsafe { run_range(es, &n, d, s, lo, (lo + chunk).min(total), stream, tuning) };
            })
        });
    } else {
        unsafe { run_range(es, &n, d, s, 0, total, stream, tuning) };
    }
}

/// Runs the bodies of flat indices `lo..hi` of the nest's loops.
///
/// # Safety
/// As [`copy`].
#[allow(clippy::too_many_arguments)]
unsafe fn run_range(es: usize, n: &Nest, dst: usize, src: usize, lo: usize, hi: usize, stream: bool, tuning: Tuning) {
    if lo >= hi {
        return; // nothing to copy (a loop of zero steps: no decoding by 0)
    }
    let loops = &n.loops;
    let r = loops.len();
    let mut idx: SmallVec<[usize; 24]> = smallvec![0; r];
    // Decode `lo` into loop indices (last loop fastest) and offsets.
    let (mut od, mut os) = (0isize, 0isize);
    let mut rem = lo;
    for k in (0..r).rev() {
        idx[k] = rem % loops[k].n;
        rem /= loops[k].n;
        od += idx[k] as isize * loops[k].ds;
        os += idx[k] as isize * loops[k].ss;
    }
    let es_i = es as isize;
    // Scratch for packed 4-byte tiles (see `simd::tile_f32`), allocated once
    // per task; only what a tile writes into it is read back.
    let mut scratch: Vec<u32> = Vec::new();
    // How many of the largest tile's source rows share an L2 set and an
    // L1 set, for streamed tiles of up to 64 far rows (a hint to the
    // tiles' kernels; counted once per task, and only there: a count
    // over thousands of rows would cost each task more than its copy).
    let mut crowding = super::nest::Crowding::UNCOUNTED;
    if let (4, Body::Tile { j, i, c, ei, ej, ec, .. }) = (es, n.kind) {
        scratch.reserve_exact(scratch_floats(j.n.min(ej), i.n.min(ei), c.n.min(ec), j.ss));
        let (rows, stride) = (j.n.min(ej), j.ss.unsigned_abs().saturating_mul(4));
        if stream && rows <= 64 && stride >= super::nest::FAR_ROW_BYTES {
            crowding = super::nest::Crowding::of(rows, stride);
        }
    }
    for _ in lo..hi {
        let (d, s) = (dst.wrapping_add_signed(od * es_i), src.wrapping_add_signed(os * es_i));
        // SAFETY: the loop indices are within their counts, so the body's
        // elements are among those the caller vouched for.
        unsafe {
            match n.kind {
                Body::Run { n } => run(d as *mut u8, s as *const u8, n * es, stream),
                Body::Strided { inner } => strided_run(es, inner, d, s),
                Body::Tile { j, i, c, ei, ej, ec, blocks, order } => {
                    // Which tile: the block loops are at `blocks`, `blocks +
                    // 1` (swapped for `JFirst`), the batch's block loop (if
                    // any) last; `Along` has `j`'s at `blocks`, `i`'s last
                    // and no batch.
                    let (bi, bj) = match order {
                        Order::Blocks => (idx[blocks], idx[blocks + 1]),
                        Order::JFirst => (idx[blocks + 1], idx[blocks]),
                        Order::Along => (idx[r - 1], idx[blocks]),
                    };
                    let ni = (i.n - bi * ei).min(ei);
                    let nj = (j.n - bj * ej).min(ej);
                    let nc = if c.n > 1 { (c.n - idx[r - 1] * ec).min(ec) } else { 1 };
                    let (j, i, c) = (Axis { n: nj, ..j }, Axis { n: ni, ..i }, Axis { n: nc, ..c });
                    // The next tile's source, to prefetch while this one is
                    // written (the last index of the range has none).
                    let mut next = 0;
                    if es == 4 {
                        let (mut ni, mut nd, mut ns) = (idx.clone(), od, os);
                        continue_next(&mut ni, loops, &mut nd, &mut ns);
                        next = src.wrapping_add_signed(ns * es_i);
                    }
                    tile(es, j, i, c, d, s, next, stream, tuning, crowding, &mut scratch);
                }
                Body::Runs { n: run_n, j, i, ei, ej, blocks } => {
                    let (bi, bj) = (idx[blocks], idx[blocks + 1]);
                    let ni = (i.n - bi * ei).min(ei);
                    let nj = (j.n - bj * ej).min(ej);
                    let bytes = run_n * es;
                    #[cfg(target_arch = "x86_64")]
                    if bytes.is_multiple_of(32) && simd::has_avx() {
                        let (i, j) = (Axis { n: ni, ..i }, Axis { n: nj, ..j });
                        simd::runs32(bytes, i, j, es_i, d as *mut u8, s as *const u8, stream);
                        continue_next(&mut idx, loops, &mut od, &mut os);
                        continue;
                    }
                    for a in 0..ni {
                        for b in 0..nj {
                            let (a, b) = (a as isize, b as isize);
                            run(
                                d.wrapping_add_signed((a * i.ds + b * j.ds) * es_i) as *mut u8,
                                s.wrapping_add_signed((a * i.ss + b * j.ss) * es_i) as *const u8,
                                bytes,
                                stream,
                            );
                        }
                    }
                }
            }
        }
        continue_next(&mut idx, loops, &mut od, &mut os);
    }
    #[cfg(target_arch = "x86_64")]
    if stream {
        simd::fence();
    }
}

/// 4-byte elements of scratch for the packed transposes of a nest's
/// tiles of up to `j` destination rows, `i` source rows and `c` batch
/// steps, the destination's rows `sj` elements apart in the source
/// (`simd::packed_scratch`), at most `3 * PACK_FLOATS`.
fn scratch_floats(j: usize, i: usize, c: usize, sj: isize) -> usize {
    #[cfg(target_arch = "x86_64")]
    return simd::packed_scratch(j, i, c, sj.unsigned_abs()).min(3 * PACK_FLOATS);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (j, i, c, sj);
        0 // the scalar tiles use none
    }
}

/// Steps the loop indices to the next flat index, keeping the offsets in
/// step (the last loop fastest).
#[inline]
fn continue_next(idx: &mut [usize], loops: &[Axis], od: &mut isize, os: &mut isize) {
    let mut k = loops.len();
    while k > 0 {
        k -= 1;
        idx[k] += 1;
        *od += loops[k].ds;
        *os += loops[k].ss;
        if idx[k] < loops[k].n {
            break;
        }
        *od -= loops[k].n as isize * loops[k].ds;
        *os -= loops[k].n as isize * loops[k].ss;
        idx[k] = 0;
    }
}

/// One contiguous run of `bytes`: streamed when asked and possible (see
/// `simd::run`), else `memcpy`.
///
/// # Safety
/// `bytes` readable at `src` and writable at `dst`, not overlapping.
#[inline]
unsafe fn run(dst: *mut u8, src: *const u8, bytes: usize, stream: bool) {
    // SAFETY (both): forwarded from the caller.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        simd::run(dst, src, bytes, stream)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = stream;
        unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) }
    }
}

/// One strided run, element by element.
///
/// # Safety
/// As [`copy`], for the elements of `inner` from `dst`/`src`.
unsafe fn strided_run(es: usize, inner: Axis, dst: usize, src: usize) {
    macro_rules! run {
        ($t:ty) => {{
            let (d, s) = (dst as *mut $t, src as *const $t);
            for k in 0..inner.n {
                // SAFETY: k < inner.n; the caller vouched for these elements.
                unsafe { *d.offset(k as isize * inner.ds) = *s.offset(k as isize * inner.ss) };
            }
        }};
    }
    match es {
        1 => run!(u8),
        2 => run!(u16),
        4 => run!(u32),
        _ => run!(u64),
    }
}

/// A 2-D transpose: `dst[a*i.ds + b*j.ds] = src[a*i.ss + b*j.ss]` for
/// `a < i.n`, `b < j.n`, written one destination row (`j`) at a time.
///
/// # Safety
/// As [`copy`], for the elements of the two loops from `dst`/`src`.
#[allow(clippy::too_many_arguments)]
unsafe fn tile(es: usize, j: Axis, i: Axis, c: Axis, dst: usize, src: usize, next: usize, stream: bool, tuning: Tuning, crowding: super::nest::Crowding, scratch: &mut Vec<u32>) {
    #[cfg(target_arch = "x86_64")]
    if es == 4 && j.ds == 1 && i.ss == 1 && i.ds > 0 && j.ss > 0 && c.ds >= 0 && c.ss >= 0 {
        // SAFETY: forwarded; the layouts are the ones the kernels assume.
        unsafe { simd::tile_f32(j, i, c, dst as *mut u32, src as *const u32, next, stream, tuning, crowding, scratch) };
        return;
    }
    let _ = (stream, tuning, scratch, next, crowding);
    for k in 0..c.n as isize {
        let (dst, src) = (dst.wrapping_add_signed(k * c.ds * es as isize), src.wrapping_add_signed(k * c.ss * es as isize));
        // SAFETY: forwarded; step k of the batch is inside the caller's
        // elements.
        unsafe { tile_2d(es, j, i, dst, src) };
    }
}

/// One 2-D tile of [`tile`], in scalar loops.
///
/// # Safety
/// As [`tile`].
unsafe fn tile_2d(es: usize, j: Axis, i: Axis, dst: usize, src: usize) {
    macro_rules! scalar {
        ($t:ty) => {{
            let (d, s) = (dst as *mut $t, src as *const $t);
            for a in 0..i.n {
                for b in 0..j.n {
                    // SAFETY: a < i.n and b < j.n; vouched for by the caller.
                    let (a, b) = (a as isize, b as isize);
                    unsafe { *d.offset(a * i.ds + b * j.ds) = *s.offset(a * i.ss + b * j.ss) };
                }
            }
        }};
    }
    match es {
        1 => scalar!(u8),
        2 => scalar!(u16),
        4 => scalar!(u32),
        _ => scalar!(u64),
    }
}
