//! The transposition engine: one strided copy for every layout change.
//!
//! A copy is a list of loops ([`Axis`]: a count and an element stride on
//! each side). [`normalise`] drops unit loops, orders them by destination
//! stride (so writes stream) and fuses loops that are adjacent on both
//! sides (a transpose of `[A, B, C, D]` to `[A, D, C, B]` is three loops,
//! and `[A, B, C] -> [A, B, C]` one memcpy). [`copy`] then runs:
//!
//! - when the innermost loop is contiguous on both sides, `memcpy` runs;
//! - otherwise the destination's innermost loop and the source's
//!   innermost loop form a 2-D transpose, done in tiles of about 32 KiB a
//!   side (in L1/L2; with the huge pages storage asks for, few TLB
//!   entries), each tile in 8x8 register transposes (AVX, detected at run
//!   time) or 4x4 (SSE2, always on x86-64) for 4-byte elements, and in
//!   scalar loops the compiler unrolls for the other sizes;
//! - the outer loops and the tiles are one flat index space that is cut
//!   into tasks of about 256 KiB and shared across all cores.
//!
//! `transposed`, `transpose_from`, `permuted`, `permute_from`,
//! `reorder_from` and strided copies all come here.

use rayon::prelude::*;
use smallvec::{smallvec, SmallVec};

/// One loop: `n` steps of `ds` elements in the destination and `ss` in the
/// source. Strides may be negative (NumPy's reversed views); [`copy`] walks
/// a loop with a negative destination stride backwards from its far end,
/// so that writes always move forwards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Axis {
    pub(crate) n: usize,
    pub(crate) ds: isize,
    pub(crate) ss: isize,
}

/// Drops unit loops, orders by destination stride magnitude (outermost
/// first, the source's breaking ties) and fuses loops contiguous on both
/// sides (`[n1, s1]` then `[n2, s2]` with `s1 == n2 * s2` on both sides).
pub(crate) fn normalise(mut axes: Vec<Axis>) -> Vec<Axis> {
    axes.retain(|a| a.n != 1);
    axes.sort_by(|x, y| y.ds.unsigned_abs().cmp(&x.ds.unsigned_abs()).then(y.ss.unsigned_abs().cmp(&x.ss.unsigned_abs())));
    let mut out: Vec<Axis> = Vec::with_capacity(axes.len());
    for a in axes {
        if let Some(last) = out.last_mut() {
            if last.ds == a.ds * a.n as isize && last.ss == a.ss * a.n as isize {
                last.n *= a.n;
                last.ds = a.ds;
                last.ss = a.ss;
                continue;
            }
        }
        out.push(a);
    }
    out
}

/// Bytes of work per parallel task.
const TASK_BYTES: usize = 256 << 10;

/// The loop nest [`copy`] runs: outer loops, then (for a transpose) the
/// blocks of the two tiled loops, then one tile or run per index.
#[derive(Debug, Clone)]
struct Nest {
    /// Outer loops, outermost first, then for a transpose the block loops
    /// (counts in tiles; strides per tile).
    loops: Vec<Axis>,
    kind: Body,
}

#[derive(Debug, Clone, Copy)]
enum Body {
    /// A run of `n` elements contiguous on both sides.
    Run { n: usize },
    /// A run with strides (no loop is contiguous in the source).
    Strided { inner: Axis },
    /// A 2-D transpose tile: `j` is the destination's innermost loop, `i`
    /// the source's (full counts); `ei` by `ej` the tile's size; `ec`
    /// steps of the batch loop `c` (a loop that steps inside the rows on
    /// both sides, as the middle axis of a swap of the outer and inner
    /// axes; `n` 1 when there is none) make one tile, so that its rows
    /// are read and written `ec` times longer.
    Tile { j: Axis, i: Axis, c: Axis, ei: usize, ej: usize, ec: usize, blocks: usize },
    /// A tile of runs of `n` elements contiguous on both sides: the
    /// transpose of [`Body::Tile`] with a run as its element.
    Runs { n: usize, j: Axis, i: Axis, ei: usize, ej: usize, blocks: usize },
}

fn nest(axes: &[Axis], es: usize) -> Nest {
    let Some(&inner) = axes.last() else {
        return Nest { loops: Vec::new(), kind: Body::Run { n: 1 } };
    };
    if inner.ds == 1 && inner.ss == 1 {
        let rest = &axes[..axes.len() - 1];
        let run_bytes = inner.n * es;
        // Short runs whose next source loop is not the destination's next
        // loop: a transpose of runs (e.g. swapping two outer axes over a
        // small inner block), tiled so that both sides stay sequential.
        if run_bytes < SHORT_RUN && rest.len() >= 2 {
            let j = rest.len() - 1;
            let p = (0..rest.len()).min_by_key(|&k| rest[k].ss.unsigned_abs()).unwrap_or(j);
            if p != j && rest[p].ss.unsigned_abs() < rest[j].ss.unsigned_abs() {
                let edge = (RUN_TILE_BYTES / run_bytes).isqrt().clamp(4, 64);
                return tiled(rest, p, j, Body::Runs { n: inner.n, j: rest[j], i: rest[p], ei: edge, ej: edge, blocks: 0 });
            }
        }
        return Nest { loops: rest.to_vec(), kind: Body::Run { n: inner.n } };
    }
    // The source's innermost loop among the others (smallest source stride).
    let rest = &axes[..axes.len() - 1];
    let pos = (0..rest.len()).min_by_key(|&k| rest[k].ss.unsigned_abs());
    match pos {
        Some(p) if rest[p].ss.unsigned_abs() < inner.ss.unsigned_abs() => {
            // Square tiles of about 16 KiB a side; when the destination's
            // rows are short (blocked layouts: 8 or 16 elements), one tile
            // covers them and runs longer along the source's rows.
            // Tiles of TILE_BYTES: up to 64 along the destination's rows,
            // the rest along the source's (whole source rows when the
            // destination's rows are short, as in blocked layouts).
            // Short source rows (blocked layouts: 8 or 16 elements) get
            // longer destination rows, so that a tile stays about
            // TILE_BYTES.
            let row = rest[p].n.max(1);
            let wide = if row < 64 { (TILE_BYTES / es / row).next_multiple_of(16) } else { 0 };
            let ej = inner.n.min(64.max(wide));
            // Source rows of up to WHOLE_ROW_BYTES are taken whole.
            let ei = if rest[p].n.saturating_mul(es) <= WHOLE_ROW_BYTES { rest[p].n.max(1) } else { (TILE_BYTES / es / ej).next_multiple_of(16).min(rest[p].n.max(1)) };
            let mut all = rest.to_vec();
            all.push(inner);
            let last = all.len() - 1;
            let none = Axis { n: 1, ds: 0, ss: 0 };
            tiled(&all, p, last, Body::Tile { j: inner, i: rest[p], c: none, ei, ej, ec: 1, blocks: 0 })
        }
        _ => Nest { loops: rest.to_vec(), kind: Body::Strided { inner } },
    }
}

/// Runs shorter than this many bytes are tiled as a transpose of runs.
/// Runs of a few hundred bytes to a few KiB, each far from the last in
/// the source (`transposed(0, 2)` of `[64, 128, 256, 128]` f32: 512-byte
/// runs 16 MiB apart), starve the hardware prefetchers, which work within
/// a 4 KiB page: tiled, both sides are read and written in runs of
/// several KiB (0.23-0.56x of the streamed copy at 1 GiB before, about
/// 0.9x after, this 2-core VM).
const SHORT_RUN: usize = 4096;
/// Bytes a tile of runs reads (and writes): 16 x 16 runs of 512 bytes.
const RUN_TILE_BYTES: usize = 128 << 10;

/// Bytes per transpose tile and side (L1/L2 sized).
const TILE_BYTES: usize = 32 << 10;

/// Source rows up to this many bytes go into one tile whole (a tile of up
/// to twice TILE_BYTES): split, each row would be read in two passes over
/// the source, half a KiB at a time. NHWC->NCHW at C = 256 (rows of 256
/// f32) at 1 GiB, A/B on the 2-core VM: 0.56-0.61x -> 0.70-0.77x of the
/// streamed copy.
const WHOLE_ROW_BYTES: usize = 1 << 10;

/// The loops of a tiled body over loops `i = axes[p]` and `j = axes[q]`:
/// the other loops outside the tile blocks, except those that step within
/// the tile's rows on both sides (strides below the rows' strides), which
/// run inside them so that every row is walked from start to end.
fn tiled(axes: &[Axis], p: usize, q: usize, body: Body) -> Nest {
    let (i, j) = (axes[p], axes[q]);
    let (ei, ej) = match body {
        Body::Tile { ei, ej, .. } | Body::Runs { ei, ej, .. } => (ei, ej),
        _ => (1, 1),
    };
    let others = axes.iter().enumerate().filter(|&(k, _)| k != p && k != q).map(|(_, a)| *a);
    let inside = |a: &Axis| a.ss.unsigned_abs() < j.ss.unsigned_abs() && a.ds.unsigned_abs() < i.ds.unsigned_abs();
    let mut loops: Vec<Axis> = others.clone().filter(|a| !inside(a)).collect();
    let blocks = loops.len();
    loops.push(Axis { n: i.n.div_ceil(ei), ds: i.ds * ei as isize, ss: i.ss * ei as isize });
    loops.push(Axis { n: j.n.div_ceil(ej), ds: j.ds * ej as isize, ss: j.ss * ej as isize });
    loops.extend(others.filter(|a| inside(a)));
    let kind = match body {
        Body::Tile { j, i, ei, ej, .. } => {
            // The innermost inside loop (the last: smallest destination
            // stride) batches tiles, up to a tile of PACK_FLOATS elements.
            let (mut c, mut ec) = (Axis { n: 1, ds: 0, ss: 0 }, 1);
            if loops.len() > blocks + 2 {
                if let Some(last) = loops.pop() {
                    c = last;
                    let per = i.n.min(ei) * j.n.min(ej);
                    ec = (PACK_FLOATS / per.max(1)).clamp(1, c.n);
                    loops.push(Axis { n: c.n.div_ceil(ec), ds: c.ds * ec as isize, ss: c.ss * ec as isize });
                }
            }
            Body::Tile { j, i, c, ei, ej, ec, blocks }
        }
        Body::Runs { n, j, i, ei, ej, .. } => Body::Runs { n, j, i, ei, ej, blocks },
        other => other,
    };
    Nest { loops, kind }
}


/// Destinations at least this large are written with non-temporal stores
/// where the kernel can (they would not stay in cache anyway, and skipping
/// the read for ownership saves a third of the memory traffic).
const STREAM_BYTES: usize = 32 << 20;

/// Copies every element the (normalised) `axes` reach from `src` to `dst`.
///
/// # Safety
/// For every index of the axes, the element at `src + sum(index * ss) * es`
/// must be readable and the one at `dst + sum(index * ds) * es` writable;
/// distinct indices must reach distinct destination elements; both
/// pointers must be aligned to `es`, a power of two up to 8; source and
/// destination must not overlap.
pub(crate) unsafe fn copy(es: usize, axes: &[Axis], dst: *mut u8, src: *const u8, parallel: bool) {
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
    let n = nest(&flipped, es);
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
                unsafe { run_range(es, &n, d, s, lo, (lo + chunk).min(total), stream) };
            })
        });
    } else {
        unsafe { run_range(es, &n, d, s, 0, total, stream) };
    }
}

/// Runs the bodies of flat indices `lo..hi` of the nest's loops.
///
/// # Safety
/// As [`copy`].
unsafe fn run_range(es: usize, n: &Nest, dst: usize, src: usize, lo: usize, hi: usize, stream: bool) {
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
    if es == 4 && matches!(n.kind, Body::Tile { .. }) {
        scratch.reserve_exact(3 * PACK_FLOATS);
    }
    for _ in lo..hi {
        let (d, s) = (dst.wrapping_add_signed(od * es_i), src.wrapping_add_signed(os * es_i));
        // SAFETY: the loop indices are within their counts, so the body's
        // elements are among those the caller vouched for.
        unsafe {
            match n.kind {
                Body::Run { n } => run(d as *mut u8, s as *const u8, n * es, stream),
                Body::Strided { inner } => strided_run(es, inner, d, s),
                Body::Tile { j, i, c, ei, ej, ec, blocks } => {
                    // Which tile: the block loops are at `blocks`, `blocks +
                    // 1`, the batch's block loop (if any) last.
                    let (bi, bj) = (idx[blocks], idx[blocks + 1]);
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
                    tile(es, j, i, c, d, s, next, stream, &mut scratch);
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

/// Elements (4-byte) of a packed tile, batch included: about 160 KiB,
/// so that the tile and its transposed copy stay in a 512 KiB L2.
const PACK_FLOATS: usize = 40 << 10;

/// Fills `data` with `v` using non-temporal stores when it is at least
/// [`STREAM_BYTES`] and the CPU has AVX (a fill that large would not stay
/// in cache, and streaming skips the read for ownership). False when it
/// did nothing (the caller fills normally).
pub(crate) fn fill_streamed<T: Copy + Send + Sync>(data: &mut [T], v: T) -> bool {
    let es = std::mem::size_of::<T>();
    #[cfg(target_arch = "x86_64")]
    if std::mem::size_of_val(data) >= STREAM_BYTES && es > 0 && 32 % es == 0 && simd::has_avx() {
        crate::engine::pool::install(|| data.par_chunks_mut((TASK_BYTES / es).max(1)).for_each(|c| {
            // Head until 32-byte alignment, streamed body, tail.
            let head = c.as_ptr().align_offset(32).min(c.len());
            let (h, rest) = c.split_at_mut(head);
            h.fill(v);
            let body = rest.len() / (32 / es) * (32 / es);
            let (b, t) = rest.split_at_mut(body);
            t.fill(v);
            let pattern = [v; 32];
            // SAFETY: AVX is present; `b` is 32-byte aligned, a whole number
            // of 32-byte pieces, and `pattern` holds at least 32 bytes of
            // `v` repeated (the element size divides 32).
            unsafe { simd::stream_fill(b.as_mut_ptr() as *mut u8, std::mem::size_of_val(b), pattern.as_ptr() as *const u8) };
        }));
        return true;
    }
    let _ = (data, v, es);
    false
}

/// Copies `src` to `dst` (equal lengths) with non-temporal stores on all
/// cores when `stream` (decided by the caller from its whole operation's
/// size, see [`streams`]), the piece is at least a few tasks long and the
/// CPU has AVX. False when it did nothing (the caller copies normally).
pub(crate) fn copy_streamed_if(dst: &mut [u8], src: &[u8], stream: bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    if stream && dst.len() >= 4 * TASK_BYTES && dst.len() == src.len() && simd::has_avx() {
        let head = dst.as_ptr().align_offset(32).min(dst.len());
        let (dh, db) = dst.split_at_mut(head);
        let (sh, sb) = src.split_at(head);
        dh.copy_from_slice(sh);
        // Chunks of TASK_BYTES from an aligned start: each task streams
        // all but its last few bytes (see copy_task).
        crate::engine::pool::install(|| db.par_chunks_mut(TASK_BYTES).zip(sb.par_chunks(TASK_BYTES)).for_each(|(d, s)| copy_task(d, s, true)));
        return true;
    }
    let _ = (dst, src);
    false
}

/// One task's copy (equal lengths): with `stream` and AVX, the part of
/// `dst` from its first 32-byte boundary on is written with non-temporal
/// stores and fenced; the head and tail before and after it normally.
pub(crate) fn copy_task(dst: &mut [u8], src: &[u8], stream: bool) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    #[cfg(target_arch = "x86_64")]
    if stream && n >= 64 && simd::has_avx() {
        let head = dst.as_ptr().align_offset(32).min(n);
        let body = (n - head) / 32 * 32;
        let (dh, rest) = dst.split_at_mut(head);
        let (db, dt) = rest.split_at_mut(body);
        let (sh, rest) = src.split_at(head);
        let (sb, st) = rest.split_at(body);
        dh.copy_from_slice(sh);
        dt.copy_from_slice(st);
        if body > 0 {
            // SAFETY: AVX present; db starts 32-byte aligned and holds
            // `body` bytes, a multiple of 32, as does sb; they do not
            // overlap (db is borrowed mutably).
            unsafe { simd::stream_copy(db.as_mut_ptr(), sb.as_ptr(), body) };
        }
        simd::fence();
        return;
    }
    let _ = stream;
    dst.copy_from_slice(src);
}

/// True when a copy or fill writing `bytes` should stream its stores.
pub(crate) fn streams(bytes: usize) -> bool {
    bytes >= STREAM_BYTES
}

/// `rows` runs of `bytes`: run `r` from `src[r * ss..]` to `dst[r * ds..]`
/// (a 2-D copy, as merges and splits along an inner axis make). With
/// `stream`, and when every run is whole aligned 32-byte pieces, the runs
/// go out with non-temporal stores from one loop: the chunks of a channel
/// merge are a few hundred bytes, and a call per chunk cost as much as the
/// copy itself. Returns false, copying nothing, when a run would leave
/// either slice.
pub(crate) fn copy_rows(dst: &mut [u8], ds: usize, src: &[u8], ss: usize, bytes: usize, rows: usize, stream: bool) -> bool {
    if rows == 0 || bytes == 0 {
        return true;
    }
    let end = |stride: usize| (rows - 1).checked_mul(stride).and_then(|x| x.checked_add(bytes));
    match (end(ds), end(ss)) {
        (Some(de), Some(se)) if de <= dst.len() && se <= src.len() => {}
        _ => return false,
    }
    #[cfg(target_arch = "x86_64")]
    if stream && bytes >= 64 && bytes.is_multiple_of(32) && ds.is_multiple_of(32) && (dst.as_ptr() as usize).is_multiple_of(32) && simd::has_avx() {
        // SAFETY: AVX present; every run r is inside both slices (checked
        // above) and starts 32-byte aligned in dst (aligned start, stride a
        // multiple of 32); the slices cannot overlap (one is borrowed
        // mutably).
        unsafe { simd::stream_rows(dst.as_mut_ptr(), ds, src.as_ptr(), ss, bytes, rows) };
        return true;
    }
    for r in 0..rows {
        copy_chunk(&mut dst[r * ds..r * ds + bytes], &src[r * ss..r * ss + bytes]);
    }
    true
}

/// Copies `src` into `dst` (equal lengths) with constant-size copies for
/// the small chunk sizes that channel merges produce.
#[inline(always)]
pub(crate) fn copy_chunk(dst: &mut [u8], src: &[u8]) {
    match dst.len() {
        4 => dst.copy_from_slice(&src[..4]),
        8 => dst.copy_from_slice(&src[..8]),
        12 => dst.copy_from_slice(&src[..12]),
        16 => dst.copy_from_slice(&src[..16]),
        32 => dst.copy_from_slice(&src[..32]),
        64 => dst.copy_from_slice(&src[..64]),
        _ => dst.copy_from_slice(src),
    }
}

/// Gathers `rows` rows of `whole` from the parts, writing `whole` in
/// order with non-temporal stores: row `r` is chunk `r` of each part
/// (`chunks[i]` bytes from `parts[i][r * chunks[i]..]`) side by side.
/// Only for short chunks of whole aligned 32-byte pieces (64 B to 1 KiB,
/// a channel merge) on AVX and at most 16 parts; returns false, copying
/// nothing, otherwise or when a row would leave a slice.
pub(crate) fn merge_rows(whole: &mut [u8], parts: &[&[u8]], chunks: &[usize], rows: usize) -> bool {
    let row: usize = chunks.iter().sum();
    if parts.len() != chunks.len() || rows.checked_mul(row).is_none_or(|n| n > whole.len()) {
        return false;
    }
    if parts.iter().zip(chunks).any(|(p, &c)| rows.checked_mul(c).is_none_or(|n| n > p.len())) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    if parts.len() <= simd::MERGE_PARTS
        && (whole.as_ptr() as usize).is_multiple_of(32)
        && chunks.iter().all(|&c| (64..=1024).contains(&c) && c.is_multiple_of(32))
        && simd::has_avx()
    {
        let mut from = [(std::ptr::null(), 0usize); simd::MERGE_PARTS];
        for (f, (p, &c)) in from.iter_mut().zip(parts.iter().zip(chunks)) {
            *f = (p.as_ptr(), c);
        }
        // SAFETY: AVX present; rows * row bytes of whole and rows * c of
        // each part lie inside their slices (checked above); whole starts
        // 32-byte aligned and every chunk is whole 32-byte pieces, so each
        // store is aligned; whole is borrowed mutably, so nothing overlaps.
        unsafe { simd::stream_merge(whole.as_mut_ptr(), &from[..parts.len()], rows) };
        return true;
    }
    false
}

/// Orders the non-temporal stores made so far before what follows.
pub(crate) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    simd::fence();
}

/// One contiguous run of `bytes`: streamed (whole aligned 32-byte pieces,
/// no read for ownership) when asked and possible, else `memcpy`.
///
/// # Safety
/// `bytes` readable at `src` and writable at `dst`, not overlapping.
#[inline]
unsafe fn run(dst: *mut u8, src: *const u8, bytes: usize, stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream && bytes >= 64 && bytes.is_multiple_of(32) && (dst as usize).is_multiple_of(32) && simd::has_avx() {
        // SAFETY: forwarded; alignment and size checked above.
        unsafe { simd::stream_copy(dst, src, bytes) };
        return;
    }
    let _ = stream;
    // SAFETY: forwarded from the caller.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, bytes) };
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
unsafe fn tile(es: usize, j: Axis, i: Axis, c: Axis, dst: usize, src: usize, next: usize, stream: bool, scratch: &mut Vec<u32>) {
    #[cfg(target_arch = "x86_64")]
    if es == 4 && j.ds == 1 && i.ss == 1 && i.ds > 0 && j.ss > 0 && c.ds >= 0 && c.ss >= 0 {
        // SAFETY: forwarded; the layouts are the ones the kernels assume.
        unsafe { simd::tile_f32(j, i, c, dst as *mut u32, src as *const u32, next, stream, scratch) };
        return;
    }
    let _ = (stream, scratch, next);
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

#[cfg(target_arch = "x86_64")]
mod simd {
    //! Register transposes of 4-byte elements: 8x8 with AVX (checked once
    //! at run time), 4x4 with SSE2 (part of x86-64), scalar edges.

    use super::Axis;
    use std::arch::x86_64::*;
    use std::sync::OnceLock;

    pub(super) fn has_avx() -> bool {
        static AVX: OnceLock<bool> = OnceLock::new();
        *AVX.get_or_init(|| is_x86_feature_detected!("avx"))
    }

    /// `dst[a*i.ds + b] = src[a + b*j.ss]` for `a < i.n`, `b < j.n`.
    /// With `stream`, whole 64-byte destination lines are written with
    /// non-temporal stores (no read for ownership) where aligned.
    ///
    /// # Safety
    /// Every element named is inside its memory (the caller's contract).
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn tile_f32(j: Axis, i: Axis, c: Axis, dst: *mut u32, src: *const u32, next: usize, stream: bool, scratch: &mut Vec<u32>) {
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
        let bs = i.n.next_multiple_of(8) + 8;
        let rb = (c.n * j.n).next_multiple_of(16) + 16;
        let (na, nb) = (j.n * c.n * bs, i.n * rb);
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
            // SAFETY: forwarded; the tile is one run of j.n * i.n source
            // elements and j.n elements of each of the i.n destination rows.
            unsafe {
                match i.n {
                    2 => deinterleave_regs::<2>(j.n, dst, di, src, stream),
                    3 => deinterleave_regs::<3>(j.n, dst, di, src, stream),
                    4 => deinterleave_regs::<4>(j.n, dst, di, src, stream),
                    5 => deinterleave::<5>(j.n, dst, di, src, stream),
                    6 => deinterleave::<6>(j.n, dst, di, src, stream),
                    7 => deinterleave::<7>(j.n, dst, di, src, stream),
                    _ => deinterleave_regs::<8>(j.n, dst, di, src, stream),
                }
            }
            return;
        }
        if avx && j.n >= 16 && i.n >= 8 && sj * 4 >= PACK_STRIDE_BYTES && na + nb <= scratch.capacity() {
            // SAFETY: forwarded; AVX present; the scratch holds na + nb.
            unsafe { packed(j, i, c, dst, src, next, stream, scratch.as_mut_ptr(), bs, rb) };
            return;
        }
        // The next tile's source lines are prefetched a few per register
        // block, spread over this tile's work.
        let lines = (i.n * 4).div_ceil(64);
        let total = if next != 0 { j.n * c.n * lines } else { 0 };
        let blocks = c.n * (i.n / 8).max(1) * (j.n / 16).max(1);
        let mut pf = Ahead { base: next, sj: sj * 4, cs: cs * 4, rows: j.n, steps: c.n, lines, b: 0, k: 0, line: 0 };
        let per = total.div_ceil(blocks);
        for k in 0..c.n {
            // SAFETY: forwarded; step k of the batch is inside the tile.
            unsafe { tile_f32_from(j, i, dst.add(k * cd), src.add(k * cs), sj, stream, &mut pf, per) }
        }
    }

    /// The packed form of [`tile_f32`]: source rows into the scratch
    /// (stride `bs` per run), register transposes into the scratch's
    /// destination rows (stride `rb`, after the source rows), then each
    /// destination row's part written front to back. A streamed tile of
    /// whole 64-byte destination lines skips the scratch's destination
    /// rows: the register transposes stream the lines themselves.
    ///
    /// # Safety
    /// As [`tile_f32`]; AVX present; `buf` holds `j.n * c.n * bs + i.n *
    /// rb` elements, `bs >= i.n`, `rb >= c.n * j.n`.
    #[target_feature(enable = "avx")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn packed(j: Axis, i: Axis, c: Axis, dst: *mut u32, src: *const u32, next: usize, stream: bool, buf: *mut u32, bs: usize, rb: usize) {
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
            let mut pf = Ahead { base: next, sj: sj * 4, cs: cs * 4, rows: j.n, steps: c.n, lines, b: 0, k: 0, line: 0 };
            // Streamed, with every destination row's part made of whole
            // 64-byte lines (no edges): the register transposes write
            // each line straight to the destination, eight rows at a
            // time, instead of through a destination tile in the scratch
            // (an L2 round trip per element; `transposed (0,3)` of
            // `[64, 128, 256, 128]` f32 in a C model of this kernel,
            // 2 threads: 147-150 -> 120-131 ms).
            let lined = |n: usize| n.is_multiple_of(16);
            if stream && ai == i.n && bj == j.n && (dst as usize).is_multiple_of(64) && lined(di) && (c.n == 1 || lined(cd)) {
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
                    tile_f32_from(Axis { n: j.n - bj, ..j }, Axis { n: ai, ..ri }, d.add(bj), s.add(bj * rs), rs, false, &mut Ahead::none(), 0);
                }
                if ai < i.n {
                    tile_f32_from(Axis { n: j.n, ..j }, Axis { n: i.n - ai, ..ri }, d.add(ai * rb), s.add(ai), rs, false, &mut Ahead::none(), 0);
                }
            }
            // Each destination row's part of the tile, front to back.
            let whole = c.n == 1 || cd == j.n;
            for a in 0..i.n {
                pf.issue(per_row);
                let (d, s) = (dst.add(a * di) as *mut u8, out.add(a * rb) as *const u8);
                if whole {
                    super::run(d, s, c.n * j.n * 4, stream);
                } else {
                    for k in 0..c.n {
                        super::run(d.add(k * cd * 4), s.add(k * j.n * 4), j.n * 4, stream);
                    }
                }
            }
        }
    }

    pub(super) fn has_avx2() -> bool {
        static AVX2: OnceLock<bool> = OnceLock::new();
        *AVX2.get_or_init(|| is_x86_feature_detected!("avx2"))
    }

    /// `dst[a*C + b] = src[a + b*sj]` for `a < n`, `b < C`: C source rows
    /// interleaved into one run, element by element, in pieces through a
    /// small buffer streamed out when `stream`: the path of C = 5, 6 and
    /// 7 (2, 3, 4 and 8, the common ones, take [`interleave_regs`], about
    /// 1.3x faster at 1 GiB: this loop is compute-bound).
    ///
    /// # Safety
    /// AVX2 present; n elements readable from each of the C rows, n * C
    /// writable at `dst`.
    #[target_feature(enable = "avx2")]
    unsafe fn interleave<const C: usize>(n: usize, dst: *mut u32, src: *const u32, sj: usize, stream: bool) {
        const PIECE: usize = 256;
        let mut piece = [0u32; PIECE * 8];
        let mut a0 = 0;
        while a0 < n {
            let m = (n - a0).min(PIECE);
            let out = if stream { piece.as_mut_ptr() } else { dst.wrapping_add(a0 * C) };
            // SAFETY: a0 + a < n; out holds m * C elements (the piece has
            // PIECE * 8 >= m * C, or the destination's run).
            unsafe {
                for a in 0..m {
                    for b in 0..C {
                        *out.add(a * C + b) = *src.add(a0 + a + b * sj);
                    }
                }
                if stream {
                    super::run(dst.add(a0 * C) as *mut u8, piece.as_ptr() as *const u8, m * C * 4, true);
                }
            }
            a0 += m;
        }
    }

    /// Eight elements of each of C rows as the C vectors of their
    /// interleave (`out[e]` = row `e % C`, element `e / C`), in registers.
    pub(super) trait Shuffle<const C: usize> {
        /// The interleave of `rows`.
        ///
        /// # Safety
        /// AVX2 present.
        unsafe fn join(rows: [__m256; C]) -> [__m256; C];
        /// The inverse: the rows of an interleave.
        ///
        /// # Safety
        /// AVX2 present.
        unsafe fn split(run: [__m256; C]) -> [__m256; C];
    }

    /// The register shuffles of C rows (C = 2, 3, 4 and 8).
    pub(super) struct Rows;

    impl Shuffle<2> for Rows {
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn join(r: [__m256; 2]) -> [__m256; 2] {
            // [a0 b0 a1 b1 | a4 b4 a5 b5], [a2 b2 a3 b3 | a6 b6 a7 b7].
            let (lo, hi) = (_mm256_unpacklo_ps(r[0], r[1]), _mm256_unpackhi_ps(r[0], r[1]));
            [_mm256_permute2f128_ps::<0x20>(lo, hi), _mm256_permute2f128_ps::<0x31>(lo, hi)]
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn split(v: [__m256; 2]) -> [__m256; 2] {
            // [a0 b0 a1 b1 | a4 b4 a5 b5], [a2 b2 a3 b3 | a6 b6 a7 b7]: even and odd lanes.
            let (t0, t1) = (_mm256_permute2f128_ps::<0x20>(v[0], v[1]), _mm256_permute2f128_ps::<0x31>(v[0], v[1]));
            [_mm256_shuffle_ps::<0x88>(t0, t1), _mm256_shuffle_ps::<0xDD>(t0, t1)]
        }
    }

    impl Shuffle<3> for Rows {
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn join(r: [__m256; 3]) -> [__m256; 3] {
            // Output vector v, lane p is element e = 8v + p: row e % 3,
            // element e / 3. One permutation per output vector serves the
            // three rows; two blends pick each lane's row.
            let idx = [_mm256_setr_epi32(0, 0, 0, 1, 1, 1, 2, 2), _mm256_setr_epi32(2, 3, 3, 3, 4, 4, 4, 5), _mm256_setr_epi32(5, 5, 6, 6, 6, 7, 7, 7)];
            let p = |x: __m256, v: usize| _mm256_permutevar8x32_ps(x, idx[v]);
            [
                _mm256_blend_ps::<0x24>(_mm256_blend_ps::<0x92>(p(r[0], 0), p(r[1], 0)), p(r[2], 0)),
                _mm256_blend_ps::<0x49>(_mm256_blend_ps::<0x24>(p(r[0], 1), p(r[1], 1)), p(r[2], 1)),
                _mm256_blend_ps::<0x92>(_mm256_blend_ps::<0x49>(p(r[0], 2), p(r[1], 2)), p(r[2], 2)),
            ]
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn split(v: [__m256; 3]) -> [__m256; 3] {
            // Row r, element i is run element 3i + r: vector (3i + r) / 8,
            // lane (3i + r) % 8. One permutation per row serves the three
            // vectors; two blends pick each lane's vector.
            let idx = [_mm256_setr_epi32(0, 3, 6, 1, 4, 7, 2, 5), _mm256_setr_epi32(1, 4, 7, 2, 5, 0, 3, 6), _mm256_setr_epi32(2, 5, 0, 3, 6, 1, 4, 7)];
            let p = |x: __m256, r: usize| _mm256_permutevar8x32_ps(x, idx[r]);
            [
                _mm256_blend_ps::<0xC0>(_mm256_blend_ps::<0x38>(p(v[0], 0), p(v[1], 0)), p(v[2], 0)),
                _mm256_blend_ps::<0xE0>(_mm256_blend_ps::<0x18>(p(v[0], 1), p(v[1], 1)), p(v[2], 1)),
                _mm256_blend_ps::<0xE0>(_mm256_blend_ps::<0x1C>(p(v[0], 2), p(v[1], 2)), p(v[2], 2)),
            ]
        }
    }

    impl Shuffle<4> for Rows {
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn join(r: [__m256; 4]) -> [__m256; 4] {
            // The first two steps of an 8x8 transpose: [a0 b0 c0 d0 | a4 b4 c4 d4] ...
            let (u0, u1) = (_mm256_unpacklo_ps(r[0], r[1]), _mm256_unpackhi_ps(r[0], r[1]));
            let (u2, u3) = (_mm256_unpacklo_ps(r[2], r[3]), _mm256_unpackhi_ps(r[2], r[3]));
            let (q0, q1) = (_mm256_shuffle_ps::<0x44>(u0, u2), _mm256_shuffle_ps::<0xEE>(u0, u2));
            let (q2, q3) = (_mm256_shuffle_ps::<0x44>(u1, u3), _mm256_shuffle_ps::<0xEE>(u1, u3));
            [
                _mm256_permute2f128_ps::<0x20>(q0, q1),
                _mm256_permute2f128_ps::<0x20>(q2, q3),
                _mm256_permute2f128_ps::<0x31>(q0, q1),
                _mm256_permute2f128_ps::<0x31>(q2, q3),
            ]
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn split(v: [__m256; 4]) -> [__m256; 4] {
            // Elements 0-3 and 4-7 side by side in each lane, then a 4x4
            // transpose per lane.
            let (q0, q1) = (_mm256_permute2f128_ps::<0x20>(v[0], v[2]), _mm256_permute2f128_ps::<0x31>(v[0], v[2]));
            let (q2, q3) = (_mm256_permute2f128_ps::<0x20>(v[1], v[3]), _mm256_permute2f128_ps::<0x31>(v[1], v[3]));
            let (t0, t1) = (_mm256_unpacklo_ps(q0, q1), _mm256_unpackhi_ps(q0, q1));
            let (t2, t3) = (_mm256_unpacklo_ps(q2, q3), _mm256_unpackhi_ps(q2, q3));
            [
                _mm256_shuffle_ps::<0x44>(t0, t2),
                _mm256_shuffle_ps::<0xEE>(t0, t2),
                _mm256_shuffle_ps::<0x44>(t1, t3),
                _mm256_shuffle_ps::<0xEE>(t1, t3),
            ]
        }
    }

    impl Shuffle<8> for Rows {
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn join(r: [__m256; 8]) -> [__m256; 8] {
            t8(r)
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn split(v: [__m256; 8]) -> [__m256; 8] {
            t8(v)
        }
    }

    /// [`interleave`] in registers for C = 2, 3, 4 and 8 (NCHW -> NHWC of
    /// images with few channels, NCHW -> nChw8c): eight elements of each
    /// row become C vectors of the run ([`Shuffle::join`]), stored straight
    /// to the destination, non-temporal when `stream` and aligned; scalar
    /// edges.
    ///
    /// # Safety
    /// AVX2 present; n elements readable from each of the C rows `sj`
    /// apart, n * C writable at `dst`.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn interleave_regs<const C: usize>(n: usize, dst: *mut u32, src: *const u32, sj: usize, stream: bool)
    where
        Rows: Shuffle<C>,
    {
        let scalar = |a: usize| {
            for k in 0..C {
                // SAFETY: a < n (the callers' loops); the contract.
                unsafe { *dst.add(C * a + k) = *src.add(k * sj + a) };
            }
        };
        // SAFETY: every element read is below n in its row and every
        // element written below C * n (the contract); streamed stores only
        // where `dst + C * a` is 32-byte aligned (steps of 8 keep it so).
        unsafe {
            // Scalar elements until the destination is 32-byte aligned
            // (within 8 when it can be: C * a covers the residues it needs).
            let mut a = 0;
            while a < n && a < 8 && !(dst.add(C * a) as usize).is_multiple_of(32) {
                scalar(a);
                a += 1;
            }
            let aligned = (dst.add(C * a) as usize).is_multiple_of(32);
            while a + 8 <= n {
                let r: [__m256; C] = std::array::from_fn(|k| _mm256_loadu_ps(src.add(k * sj + a) as *const f32));
                let o = dst.add(C * a) as *mut f32;
                for (k, v) in <Rows as Shuffle<C>>::join(r).into_iter().enumerate() {
                    if stream && aligned {
                        _mm256_stream_ps(o.add(8 * k), v);
                    } else {
                        _mm256_storeu_ps(o.add(8 * k), v);
                    }
                }
                a += 8;
            }
            while a < n {
                scalar(a);
                a += 1;
            }
        }
    }

    /// `dst[a*di + b] = src[b*C + a]` for `a < C`, `b < n`: one run split
    /// into C destination rows, element by element, in pieces through a
    /// small buffer streamed out when `stream`: the path of C = 5, 6 and
    /// 7 (the others take [`deinterleave_regs`]).
    ///
    /// # Safety
    /// AVX2 present; n * C elements readable at `src`, n writable in each
    /// of the C rows.
    #[target_feature(enable = "avx2")]
    unsafe fn deinterleave<const C: usize>(n: usize, dst: *mut u32, di: usize, src: *const u32, stream: bool) {
        const PIECE: usize = 256;
        let mut piece = [[0u32; PIECE]; C];
        let mut b0 = 0;
        while b0 < n {
            let m = (n - b0).min(PIECE);
            // SAFETY: b0 + b < n; the piece's rows hold PIECE >= m.
            unsafe {
                if stream {
                    for b in 0..m {
                        for (a, row) in piece.iter_mut().enumerate() {
                            row[b] = *src.add((b0 + b) * C + a);
                        }
                    }
                    for (a, row) in piece.iter().enumerate() {
                        super::run(dst.add(a * di + b0) as *mut u8, row.as_ptr() as *const u8, m * 4, true);
                    }
                } else {
                    for b in 0..m {
                        for a in 0..C {
                            *dst.add(a * di + b0 + b) = *src.add((b0 + b) * C + a);
                        }
                    }
                }
            }
            b0 += m;
        }
    }

    /// [`deinterleave`] in registers for C = 2, 3, 4 and 8 (NHWC -> NCHW
    /// of images with few channels, nChw8c -> NCHW): C vectors of the run
    /// become eight elements of each row ([`Shuffle::split`]), sixteen per
    /// row at a time so that each row gets whole 64-byte lines, stored
    /// non-temporal when `stream` and the rows are aligned; scalar edges.
    ///
    /// # Safety
    /// AVX2 present; n * C elements readable at `src`, n writable in each
    /// of the C rows `di` apart.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn deinterleave_regs<const C: usize>(n: usize, dst: *mut u32, di: usize, src: *const u32, stream: bool)
    where
        Rows: Shuffle<C>,
    {
        let scalar = |b: usize| {
            for k in 0..C {
                // SAFETY: b < n (the callers' loops); the contract.
                unsafe { *dst.add(k * di + b) = *src.add(C * b + k) };
            }
        };
        // SAFETY: every element read is below C * n and every element
        // written below n in its row (the contract); streamed stores only
        // where all C rows are 32-byte aligned at `b` (steps of 16 keep
        // them so).
        unsafe {
            let mut b = 0;
            while b < n && b < 8 && !(dst.add(b) as usize).is_multiple_of(32) {
                scalar(b);
                b += 1;
            }
            let aligned = (0..C).all(|k| (dst.add(k * di + b) as usize).is_multiple_of(32));
            while b + 16 <= n {
                let s = src.add(C * b) as *const f32;
                let lo = <Rows as Shuffle<C>>::split(std::array::from_fn(|k| _mm256_loadu_ps(s.add(8 * k))));
                let hi = <Rows as Shuffle<C>>::split(std::array::from_fn(|k| _mm256_loadu_ps(s.add(8 * C + 8 * k))));
                for k in 0..C {
                    let o = dst.add(k * di + b) as *mut f32;
                    if stream && aligned {
                        _mm256_stream_ps(o, lo[k]);
                        _mm256_stream_ps(o.add(8), hi[k]);
                    } else {
                        _mm256_storeu_ps(o, lo[k]);
                        _mm256_storeu_ps(o.add(8), hi[k]);
                    }
                }
                b += 16;
            }
            while b < n {
                scalar(b);
                b += 1;
            }
        }
    }

    /// Source rows at least this many bytes apart are packed (rows a
    /// page or more apart, often a power of two apart, share cache sets).
    const PACK_STRIDE_BYTES: usize = 4096;
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
    }

    impl Ahead {
        /// Prefetches nothing.
        fn none() -> Self {
            Ahead { base: 0, sj: 0, cs: 0, rows: 0, steps: 0, lines: 0, b: 0, k: 0, line: 0 }
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
                unsafe { _mm_prefetch::<_MM_HINT_T1>(at) };
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

    /// [`tile_f32`] reading source row `b` at `src + b * sj`.
    ///
    /// # Safety
    /// As [`tile_f32`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile_f32_from(j: Axis, i: Axis, dst: *mut u32, src: *const u32, sj: usize, stream: bool, pf: &mut Ahead, per: usize) {
        let di = i.ds as usize;
        let avx = has_avx();
        let (wa, wb) = if avx { (8, 16) } else { (4, 4) };
        let (ai, bj) = (i.n / wa * wa, j.n / wb * wb);
        let aligned = stream && avx && (dst as usize).is_multiple_of(64) && (di * 4).is_multiple_of(64);
        // SAFETY (whole body): indices stay below i.n and j.n.
        unsafe {
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

    /// A tile of runs of `bytes` (a multiple of 32): for `a < i.n`, `b <
    /// j.n`, the run at `src + (a*i.ss + b*j.ss)*es` goes to `dst +
    /// (a*i.ds + b*j.ds)*es`, in 32-byte registers, with non-temporal
    /// stores when `stream` and the destination is 32-byte aligned.
    ///
    /// # Safety
    /// AVX present; every run named is inside its memory (the caller's
    /// contract) and runs do not overlap.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn runs32(bytes: usize, i: Axis, j: Axis, es: isize, dst: *mut u8, src: *const u8, stream: bool) {
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

    /// Copies `bytes` (a multiple of 32) to a 32-byte aligned `dst` with
    /// non-temporal stores, prefetching its reads ahead.
    ///
    /// # Safety
    /// AVX present; `bytes` readable at `src`, writable at `dst`.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn stream_copy(dst: *mut u8, src: *const u8, bytes: usize) {
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
    pub(super) unsafe fn stream_rows(dst: *mut u8, ds: usize, src: *const u8, ss: usize, bytes: usize, rows: usize) {
        // SAFETY: r < rows and k + 32 <= bytes: inside run r (the contract).
        unsafe {
            // Short runs far apart (a channel split reads half of every
            // row) are fetched about 8 KiB ahead: the hardware prefetcher
            // follows them late, and split Channels at 1 GiB went from
            // 0.82-0.89x of a dense copy to 0.93-1.04x. Long or adjacent
            // runs are left to the hardware.
            let ahead = if ss != bytes && bytes <= 1024 { (8192 / ss).clamp(1, 64) } else { 0 };
            for r in 0..rows {
                let (d, s) = (dst.add(r * ds), src.add(r * ss));
                if ahead > 0 && r + ahead < rows {
                    crate::ops::prefetch(src.add((r + ahead) * ss), bytes);
                }
                for k in (0..bytes).step_by(32) {
                    let v = _mm256_loadu_ps(s.add(k) as *const f32);
                    _mm256_stream_ps(d.add(k) as *mut f32, v);
                }
            }
        }
    }

    /// The most parts [`stream_merge`] takes.
    pub(super) const MERGE_PARTS: usize = 16;

    /// Row `r` of `dst` is chunk `r` of each part side by side (`from[i]`
    /// is part `i`'s start and chunk bytes), written in order with
    /// non-temporal stores, each part's chunks fetched 32 rows ahead.
    ///
    /// # Safety
    /// AVX present; rows * chunk bytes readable at each part; rows * (sum
    /// of chunks) writable at `dst`, 32-byte aligned; chunks multiples of
    /// 32.
    #[target_feature(enable = "avx")]
    pub(super) unsafe fn stream_merge(dst: *mut u8, from: &[(*const u8, usize)], rows: usize) {
        let mut d = dst;
        for r in 0..rows {
            for &(p, c) in from {
                // The hardware prefetcher follows several interleaved
                // short runs late: channel merges at 1 GiB went from
                // 0.84-0.93x of a dense copy (part by part) to 0.86-1.04x
                // (this loop). wrapping_add: the hint may point past the
                // part, which prefetching tolerates, and nothing reads it.
                if r % 16 == 0 {
                    crate::ops::prefetch(p.wrapping_add((r + 32) * c), 16 * c);
                }
                // SAFETY: row r < rows of this part and of dst (the
                // contract); d stays 32-byte aligned (chunks of 32-byte
                // multiples from an aligned start).
                unsafe {
                    let s = p.add(r * c);
                    for k in (0..c).step_by(32) {
                        let v = _mm256_loadu_ps(s.add(k) as *const f32);
                        _mm256_stream_ps(d.add(k) as *mut f32, v);
                    }
                    d = d.add(c);
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
    pub(super) unsafe fn stream_fill(dst: *mut u8, bytes: usize, pattern: *const u8) {
        // SAFETY: forwarded from the contract.
        unsafe {
            let v = _mm256_loadu_ps(pattern as *const f32);
            for k in (0..bytes).step_by(32) {
                _mm256_stream_ps(dst.add(k) as *mut f32, v);
            }
            _mm_sfence();
        }
    }

    /// Orders earlier non-temporal stores before what follows (they are
    /// weakly ordered); called once at the end of each task that streamed.
    pub(super) fn fence() {
        // SAFETY: SSE is part of x86-64; the fence has no other effect.
        unsafe { _mm_sfence() }
    }

    /// The transpose of eight rows of eight, in registers.
    #[target_feature(enable = "avx")]
    #[inline]
    fn t8(r: [__m256; 8]) -> [__m256; 8] {
        // Interleave pairs of rows, then pairs of pairs, then the halves.
        let (u0, u1) = (_mm256_unpacklo_ps(r[0], r[1]), _mm256_unpackhi_ps(r[0], r[1]));
        let (u2, u3) = (_mm256_unpacklo_ps(r[2], r[3]), _mm256_unpackhi_ps(r[2], r[3]));
        let (u4, u5) = (_mm256_unpacklo_ps(r[4], r[5]), _mm256_unpackhi_ps(r[4], r[5]));
        let (u6, u7) = (_mm256_unpacklo_ps(r[6], r[7]), _mm256_unpackhi_ps(r[6], r[7]));
        let q0 = _mm256_shuffle_ps::<0x44>(u0, u2);
        let q1 = _mm256_shuffle_ps::<0xEE>(u0, u2);
        let q2 = _mm256_shuffle_ps::<0x44>(u1, u3);
        let q3 = _mm256_shuffle_ps::<0xEE>(u1, u3);
        let q4 = _mm256_shuffle_ps::<0x44>(u4, u6);
        let q5 = _mm256_shuffle_ps::<0xEE>(u4, u6);
        let q6 = _mm256_shuffle_ps::<0x44>(u5, u7);
        let q7 = _mm256_shuffle_ps::<0xEE>(u5, u7);
        [
            _mm256_permute2f128_ps::<0x20>(q0, q4),
            _mm256_permute2f128_ps::<0x20>(q1, q5),
            _mm256_permute2f128_ps::<0x20>(q2, q6),
            _mm256_permute2f128_ps::<0x20>(q3, q7),
            _mm256_permute2f128_ps::<0x31>(q0, q4),
            _mm256_permute2f128_ps::<0x31>(q1, q5),
            _mm256_permute2f128_ps::<0x31>(q2, q6),
            _mm256_permute2f128_ps::<0x31>(q3, q7),
        ]
    }

    /// Sixteen source rows of eight (stride `ss`) to eight destination rows
    /// of sixteen (stride `ds`): `d[r*ds + c] = s[c*ss + r]`, each
    /// destination row written as one 64-byte piece (streamed when `NT`,
    /// which needs `d` and `ds * 4` 64-byte aligned).
    #[target_feature(enable = "avx")]
    #[inline]
    unsafe fn t8x16<const NT: bool>(d: *mut u32, ds: usize, s: *const u32, ss: usize) {
        // SAFETY: the caller vouched for 8 elements of each of the 16
        // source rows and 16 of each of the 8 destination rows.
        unsafe {
            let mut lo = [_mm256_setzero_ps(); 8];
            let mut hi = [_mm256_setzero_ps(); 8];
            for k in 0..8 {
                lo[k] = _mm256_loadu_ps(s.add(k * ss) as *const f32);
                hi[k] = _mm256_loadu_ps(s.add((k + 8) * ss) as *const f32);
            }
            let (lo, hi) = (t8(lo), t8(hi));
            for r in 0..8 {
                let row = d.add(r * ds) as *mut f32;
                if NT {
                    _mm256_stream_ps(row, lo[r]);
                    _mm256_stream_ps(row.add(8), hi[r]);
                } else {
                    _mm256_storeu_ps(row, lo[r]);
                    _mm256_storeu_ps(row.add(8), hi[r]);
                }
            }
        }
    }

    /// Eight source rows of eight to eight destination rows of eight
    /// (streamed when `NT`, which needs `d` 32-byte aligned).
    #[target_feature(enable = "avx")]
    unsafe fn t8x8<const NT: bool>(d: *mut u32, ds: usize, s: *const u32, ss: usize) {
        // SAFETY: the caller vouched for 8 elements of each of the 8 rows.
        unsafe {
            let mut r = [_mm256_setzero_ps(); 8];
            for (k, v) in r.iter_mut().enumerate() {
                *v = _mm256_loadu_ps(s.add(k * ss) as *const f32);
            }
            for (k, v) in t8(r).into_iter().enumerate() {
                if NT {
                    _mm256_stream_ps(d.add(k * ds) as *mut f32, v);
                } else {
                    _mm256_storeu_ps(d.add(k * ds) as *mut f32, v);
                }
            }
        }
    }

    /// The 4x4 form of [`t8`] with SSE2 (no AVX).
    unsafe fn t4x4(d: *mut u32, ds: usize, s: *const u32, ss: usize) {
        // SAFETY: the caller vouched for 4 elements from each of the 4 rows.
        unsafe {
            macro_rules! l {
                ($k:expr) => {
                    _mm_loadu_ps(s.add($k * ss) as *const f32)
                };
            }
            let (r0, r1, r2, r3) = (l!(0), l!(1), l!(2), l!(3));
            let (u0, u1) = (_mm_unpacklo_ps(r0, r1), _mm_unpackhi_ps(r0, r1));
            let (u2, u3) = (_mm_unpacklo_ps(r2, r3), _mm_unpackhi_ps(r2, r3));
            macro_rules! st {
                ($k:expr, $v:expr) => {
                    _mm_storeu_ps(d.add($k * ds) as *mut f32, $v)
                };
            }
            st!(0, _mm_movelh_ps(u0, u2));
            st!(1, _mm_movehl_ps(u2, u0));
            st!(2, _mm_movelh_ps(u1, u3));
            st!(3, _mm_movehl_ps(u3, u1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slow oracle: every index, in any order.
    fn naive(dims: &[usize], ds: &[usize], ss: &[usize], src: &[u32], dst: &mut [u32]) {
        let total: usize = dims.iter().product();
        for flat in 0..total {
            let (mut rem, mut d, mut s) = (flat, 0, 0);
            for k in (0..dims.len()).rev() {
                let i = rem % dims[k];
                rem /= dims[k];
                d += i * ds[k];
                s += i * ss[k];
            }
            dst[d] = src[s];
        }
    }

    fn row_major(dims: &[usize]) -> Vec<usize> {
        let mut st = vec![1; dims.len()];
        for k in (0..dims.len().saturating_sub(1)).rev() {
            st[k] = st[k + 1] * dims[k + 1];
        }
        st
    }

    #[test]
    fn permutations_match_the_naive_copy() {
        // Edges (not multiples of 8), unit dims, every permutation of rank 4.
        let dims = [3usize, 9, 1, 17];
        let n: usize = dims.iter().product();
        let src: Vec<u32> = (0..n as u32).collect();
        let perms = [[0, 1, 2, 3], [3, 2, 1, 0], [0, 3, 2, 1], [1, 0, 3, 2], [2, 3, 0, 1], [3, 0, 1, 2]];
        for p in perms {
            let out_dims: Vec<usize> = p.iter().map(|&a| dims[a]).collect();
            let out_st = row_major(&out_dims);
            let src_st = row_major(&dims);
            // Loop over the destination's axes.
            let axes: Vec<Axis> = (0..4).map(|k| Axis { n: out_dims[k], ds: out_st[k] as isize, ss: src_st[p[k]] as isize }).collect();
            let mut want = vec![0u32; n];
            naive(&out_dims, &out_st, &p.map(|a| src_st[a]), &src, &mut want);
            for parallel in [false, true] {
                let mut got = vec![0u32; n];
                // SAFETY: both buffers hold every element the axes reach.
                unsafe { copy(4, &normalise(axes.clone()), got.as_mut_ptr() as *mut u8, src.as_ptr() as *const u8, parallel) };
                assert_eq!(got, want, "perm {p:?}");
            }
        }
    }

    /// `src` (row-major `dims`) permuted by `p` through [`copy`], both
    /// serial and parallel, against [`naive`].
    fn check_permutation(dims: &[usize], p: &[usize]) {
        let n: usize = dims.iter().product();
        let src: Vec<u32> = (0..n as u32).map(|v| v.wrapping_mul(2_654_435_761)).collect();
        let out_dims: Vec<usize> = p.iter().map(|&a| dims[a]).collect();
        let (out_st, src_st) = (row_major(&out_dims), row_major(dims));
        let ss: Vec<usize> = p.iter().map(|&a| src_st[a]).collect();
        let axes: Vec<Axis> = (0..dims.len()).map(|k| Axis { n: out_dims[k], ds: out_st[k] as isize, ss: ss[k] as isize }).collect();
        let mut want = vec![0u32; n];
        naive(&out_dims, &out_st, &ss, &src, &mut want);
        // A destination on a 64-byte boundary (streamed tiles may then
        // write whole lines straight from registers) and one off it.
        for parallel in [false, true] {
            for off in [0, 1] {
                let mut buf = vec![0u32; n + 17];
                let at = buf.as_ptr().align_offset(64) + off;
                let got = &mut buf[at..at + n];
                // SAFETY: both buffers hold every element the axes reach.
                unsafe { copy(4, &normalise(axes.clone()), got.as_mut_ptr() as *mut u8, src.as_ptr() as *const u8, parallel) };
                assert!(*got == *want, "dims {dims:?} perm {p:?} parallel {parallel} offset {off}");
            }
        }
    }

    #[test]
    fn packed_batched_and_interleaved_tiles_match_the_naive_copy() {
        // Source rows 1030 and more elements apart (packed tiles), a middle
        // axis stepping inside both sides' rows (a batch), counts that are
        // not multiples of the 8x16 kernels (edges).
        check_permutation(&[40, 5, 1030], &[2, 1, 0]);
        check_permutation(&[17, 3, 7, 1030], &[3, 1, 2, 0]);
        check_permutation(&[2, 33, 1024, 9], &[0, 3, 2, 1]);
        check_permutation(&[19, 2048, 12], &[2, 1, 0]);
        // Source rows of 129..256 f32 (taken whole into one tile).
        check_permutation(&[2, 9, 70, 200], &[0, 3, 1, 2]);
        check_permutation(&[3, 256, 40], &[0, 2, 1]);
        // NCHW <-> NHWC with C = 1..9 (interleaves for 2..8).
        for c in 1..=9 {
            check_permutation(&[2, c, 37, 29], &[0, 2, 3, 1]);
            check_permutation(&[2, 37, 29, c], &[0, 3, 1, 2]);
        }
        // Destinations of 32 MiB and more stream their stores.
        check_permutation(&[3, 2_900_000], &[1, 0]);
        check_permutation(&[2_900_000, 3], &[1, 0]);
        check_permutation(&[64, 8, 16_400], &[2, 1, 0]);
    }

    /// The register interleaves of 2, 3, 4 and 8 rows and their reverses,
    /// on random lengths (vector bodies and scalar edges), row gaps,
    /// destination alignments (streamed stores only where aligned) and
    /// stream flags, against element-by-element indexing.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn register_interleaves_match_indexing() {
        use proptest::prelude::*;
        if !simd::has_avx2() {
            return;
        }
        let config = ProptestConfig { cases: 600, rng_seed: proptest::test_runner::RngSeed::Fixed(26), ..ProptestConfig::default() };
        proptest!(config, |(n in 0usize..300, gap in 0usize..20, at in 0usize..16, stream: bool, pick in 0usize..4)| {
            let c = [2, 3, 4, 8][pick];
            let rs = n + gap; // the rows' stride
            let rows: Vec<u32> = (0..c * rs + 16).map(|v| (v as u32).wrapping_mul(2_654_435_761)).collect();
            // Interleave: c rows of n into one run at offset `at`.
            let mut run = vec![0u32; n * c + 32];
            // SAFETY: c rows of n at stride rs are inside `rows`; n * c
            // elements from `at` are inside `run`.
            unsafe {
                let (d, s) = (run.as_mut_ptr().add(at), rows.as_ptr());
                match c {
                    2 => simd::interleave_regs::<2>(n, d, s, rs, stream),
                    3 => simd::interleave_regs::<3>(n, d, s, rs, stream),
                    4 => simd::interleave_regs::<4>(n, d, s, rs, stream),
                    _ => simd::interleave_regs::<8>(n, d, s, rs, stream),
                }
            }
            simd::fence();
            for a in 0..n {
                for b in 0..c {
                    prop_assert_eq!(run[at + a * c + b], rows[b * rs + a], "interleave c {} n {} at {} element {} row {}", c, n, at, a, b);
                }
            }
            prop_assert!(run[..at].iter().chain(&run[at + n * c..]).all(|&v| v == 0), "interleave wrote outside its run");
            // Deinterleave: the run back into c rows at offset `at`.
            let mut back = vec![0u32; c * rs + 32];
            // SAFETY: n * c elements from `at` are inside `run`; c rows of
            // n at stride rs from `at` are inside `back`.
            unsafe {
                let (d, s) = (back.as_mut_ptr().add(at), run.as_ptr().add(at));
                match c {
                    2 => simd::deinterleave_regs::<2>(n, d, rs, s, stream),
                    3 => simd::deinterleave_regs::<3>(n, d, rs, s, stream),
                    4 => simd::deinterleave_regs::<4>(n, d, rs, s, stream),
                    _ => simd::deinterleave_regs::<8>(n, d, rs, s, stream),
                }
            }
            simd::fence();
            for (i, &v) in back.iter().enumerate() {
                let (b, a) = ((i.wrapping_sub(at)) / rs, (i.wrapping_sub(at)) % rs);
                let want = if i >= at && b < c && a < n { rows[b * rs + a] } else { 0 };
                prop_assert_eq!(v, want, "deinterleave c {} n {} at {} index {}", c, n, at, i);
            }
        });
    }

    #[test]
    fn tiles_of_runs_up_to_the_short_run_limit_match_the_naive_copy() {
        // Swaps of outer axes over inner runs of 516 B (not a multiple of
        // 32: the scalar path), 512 B, 2 KiB and just under SHORT_RUN (the
        // AVX path), counts that are not multiples of the tile's edge, and
        // runs of SHORT_RUN (not tiled); one destination of 32 MiB and more
        // (streamed stores).
        for inner in [129usize, 128, 512, SHORT_RUN / 4 - 8, SHORT_RUN / 4] {
            check_permutation(&[5, 3, 21, inner], &[2, 1, 0, 3]);
            check_permutation(&[19, 7, inner], &[1, 0, 2]);
        }
        check_permutation(&[64, 8, 128, 128], &[2, 1, 0, 3]);
        check_permutation(&[40, 2, 130, 1024], &[2, 1, 0, 3]);
    }

    #[test]
    fn negative_strides_on_either_side_match_the_naive_copy() {
        // Every sign pattern of a rank-3 permuted copy, for each element
        // size: the destination row-major (maybe reversed per axis), the
        // source a permutation (maybe reversed per axis).
        let dims = [5usize, 19, 9];
        let n: usize = dims.iter().product();
        for es in [1usize, 2, 4, 8] {
            // u64 words: every element size is aligned.
            let words: Vec<u64> = (0..n as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15)).collect();
            // SAFETY: the words hold n * 8 >= n * es initialised bytes.
            let src = unsafe { std::slice::from_raw_parts(words.as_ptr() as *const u8, n * es) };
            for signs in 0..64u32 {
                let p = [2usize, 0, 1];
                let src_st = row_major(&dims);
                let out_dims: Vec<usize> = p.iter().map(|&a| dims[a]).collect();
                let out_st = row_major(&out_dims);
                let mut axes = Vec::new();
                let (mut d0, mut s0) = (0isize, 0isize);
                for k in 0..3 {
                    let mut ds = out_st[k] as isize;
                    let mut ss = src_st[p[k]] as isize;
                    if signs & (1 << k) != 0 {
                        d0 += (out_dims[k] as isize - 1) * ds;
                        ds = -ds;
                    }
                    if signs & (8 << k) != 0 {
                        s0 += (out_dims[k] as isize - 1) * ss;
                        ss = -ss;
                    }
                    axes.push(Axis { n: out_dims[k], ds, ss });
                }
                let mut want = vec![0u8; n * es];
                for flat in 0..n {
                    let (mut rem, mut d, mut s) = (flat, d0, s0);
                    for k in (0..3).rev() {
                        let i = (rem % out_dims[k]) as isize;
                        rem /= out_dims[k];
                        d += i * axes[k].ds;
                        s += i * axes[k].ss;
                    }
                    let (d, s) = (d as usize * es, s as usize * es);
                    want[d..d + es].copy_from_slice(&src[s..s + es]);
                }
                for parallel in [false, true] {
                    let mut got = vec![0u64; n];
                    let g = got.as_mut_ptr() as *mut u8;
                    // SAFETY: the offsets of every index lie in both
                    // buffers (d0/s0 start at the far end of reversed axes);
                    // the u64 buffer aligns every element size.
                    unsafe {
                        copy(es, &normalise(axes.clone()), g.add(d0 as usize * es), src.as_ptr().add(s0 as usize * es), parallel)
                    };
                    // SAFETY: `got` holds n * 8 >= n * es bytes.
                    let bytes = unsafe { std::slice::from_raw_parts(g, n * es) };
                    assert_eq!(bytes, &want[..], "es {es} signs {signs:#b}");
                }
            }
        }
    }

    #[test]
    fn streamed_fills_cover_exactly_the_slice() {
        // 40 MiB of u16 (above STREAM_BYTES), starting off 32-byte alignment.
        let mut v = vec![0u16; (40 << 20) / 2 + 7];
        let n = v.len();
        let done = fill_streamed(&mut v[3..n - 2], 0xabcd);
        assert!(v[3..n - 2].iter().all(|&x| x == 0xabcd));
        assert_eq!((v[..3].to_vec(), v[n - 2..].to_vec()), (vec![0; 3], vec![0; 2]));
        // Small slices are left to the caller.
        assert!(!fill_streamed(&mut v[..100], 1u16));
        let _ = done;
        // Values of one repeated byte (zeros, 0x4141) stream the same way
        // (`fill` sends them to memset before this): the value's bytes,
        // and nothing outside the slice.
        for pattern in [0u16, 0x4141] {
            v.fill(0x1234);
            assert_eq!(fill_streamed(&mut v[3..n - 2], pattern), done);
            assert!(v[3..n - 2].iter().all(|&x| x == pattern));
            assert_eq!((v[..3].to_vec(), v[n - 2..].to_vec()), (vec![0x1234; 3], vec![0x1234; 2]));
        }
    }

    #[test]
    fn empty_loops_copy_nothing() {
        let axes = vec![Axis { n: 0, ds: 3, ss: 1 }, Axis { n: 3, ds: 1, ss: 4 }];
        let mut dst = [7u32; 4];
        for parallel in [false, true] {
            // SAFETY: no element is reached.
            unsafe { copy(4, &normalise(axes.clone()), dst.as_mut_ptr() as *mut u8, [1u32; 4].as_ptr() as *const u8, parallel) };
        }
        assert_eq!(dst, [7; 4]);
    }

    #[test]
    fn fusing_and_ordering() {
        // [2,3,4] row-major copied to itself: one run of 24.
        let axes = vec![Axis { n: 2, ds: 12, ss: 12 }, Axis { n: 3, ds: 4, ss: 4 }, Axis { n: 4, ds: 1, ss: 1 }];
        assert_eq!(normalise(axes), [Axis { n: 24, ds: 1, ss: 1 }]);
        // Swapping the two outer axes of [2,3,4]: the inner run stays.
        let axes = vec![Axis { n: 3, ds: 8, ss: 4 }, Axis { n: 2, ds: 4, ss: 12 }, Axis { n: 4, ds: 1, ss: 1 }];
        assert_eq!(normalise(axes).len(), 3);
    }
}
