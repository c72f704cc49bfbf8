//! The loop nest a strided copy runs: outer loops, then for a transpose
//! the blocks of the two tiled loops, then one run, tile or tile of runs
//! per index.

use super::tuning::Tuning;
use super::Axis;

/// The loop nest [`copy`](super::copy) runs: outer loops, then (for a transpose) the
/// blocks of the two tiled loops, then one tile or run per index.
#[derive(Debug, Clone)]
pub(super) struct Nest {
    /// Outer loops, outermost first, then for a transpose the block loops
    /// (counts in tiles; strides per tile).
    pub(super) loops: Vec<Axis>,
    pub(super) kind: Body,
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Body {
    /// A run of `n` elements contiguous on both sides.
    Run { n: usize },
    /// A run with strides (no loop is contiguous in the source).
    Strided { inner: Axis },
    /// A 2-D transpose tile: `j` is the destination's innermost loop, `i`
    /// the source's (full counts); `ei` by `ej` the tile's size; `ec`
    /// steps of the batch loop `c` (a loop that steps inside the rows on
    /// both sides, as the middle axis of a swap of the outer and inner
    /// axes; `n` 1 when there is none) make one tile, so that its rows
    /// are read and written `ec` times longer. Where the block loops are
    /// is `order`'s (from `blocks`).
    Tile { j: Axis, i: Axis, c: Axis, ei: usize, ej: usize, ec: usize, blocks: usize, order: Order },
    /// A tile of runs of `n` elements contiguous on both sides: the
    /// transpose of [`Body::Tile`] with a run as its element.
    Runs { n: usize, j: Axis, i: Axis, ei: usize, ej: usize, blocks: usize },
}

/// The order of a transpose tile's block loops among the loops inside
/// the outer ones (from `Body::Tile::blocks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    /// The block loop of `i` (the source's rows), then that of `j` (the
    /// destination's), then the loops that step inside the rows, the
    /// batch's last.
    Blocks,
    /// `j`'s block loop outside `i`'s: the tiles of one set of source
    /// rows run one after the other along those rows.
    JFirst,
    /// `j`'s block loop, the loops inside the rows, then `i`'s block loop
    /// innermost (no batch): the pieces of a set of source rows that
    /// were split run one after the other, and each row is read from
    /// start to end before the inside loops step on.
    Along,
}

pub(super) fn nest(axes: &[Axis], es: usize, tuning: Tuning) -> Nest {
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
                let (ei, ej) = tuning.run_tile(run_bytes);
                return tiled(rest, p, j, Body::Runs { n: inner.n, j: rest[j], i: rest[p], ei, ej, blocks: 0 }, tuning);
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
            // Source rows a page or more apart are each a stream of their
            // own to the hardware prefetcher, which follows a few dozen
            // at a time: a tile reads at most STREAM_ROWS of them.
            let row_stride = inner.ss.unsigned_abs().saturating_mul(es);
            let far = row_stride >= FAR_ROW_BYTES;
            let row_bytes = rest[p].n.saturating_mul(es);
            let ej = if far { far_rows(inner.n, ej, es, row_stride, row_bytes, tuning) } else { ej };
            // Source rows of up to WHOLE_ROW_BYTES are taken whole when
            // the tile stays within twice TILE_BYTES.
            let whole = row_bytes <= WHOLE_ROW_BYTES && row_bytes.saturating_mul(ej) <= 2 * TILE_BYTES;
            let ei = if whole { rest[p].n.max(1) } else { (TILE_BYTES / es / ej).next_multiple_of(16).min(rest[p].n.max(1)) };
            // Far source rows split into several tiles both ways (NCHW ->
            // NHWC: 32 of C channels, a KiB of each): the tiles of one
            // set of source rows run one after the other along those
            // rows, so that the prefetcher's streams carry on from tile
            // to tile, instead of the tiles of one destination block
            // (which switch to other source rows every tile).
            let jfirst = far && inner.n > ej && rest[p].n > ei;
            // Whole source rows that make a tile of more than TILE_BYTES
            // (`permute [4, 2, 0, 3, 1]`: 32 rows of 2 KiB, 2 MiB apart,
            // into 512 destination rows) are walked along the rows
            // (`Order::Along`), in pieces of the tuning's split (Square:
            // SPLIT_ROW_BYTES; LongReads: whole rows).
            let along = whole && !jfirst && inner.n <= ej && row_bytes.saturating_mul(ej) > TILE_BYTES && row_bytes > SPLIT_ROW_BYTES;
            let (ei, order) = match (along, jfirst) {
                (true, _) => ((tuning.split_row_bytes() / es).clamp(1, rest[p].n.max(1)), Order::Along),
                (false, true) => (ei, Order::JFirst),
                (false, false) => (ei, Order::Blocks),
            };
            let mut all = rest.to_vec();
            all.push(inner);
            let last = all.len() - 1;
            let none = Axis { n: 1, ds: 0, ss: 0 };
            tiled(&all, p, last, Body::Tile { j: inner, i: rest[p], c: none, ei, ej, ec: 1, blocks: 0, order }, tuning)
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
pub(super) const SHORT_RUN: usize = 4096;
/// Source rows at least this many bytes apart (a page) are separate
/// streams to the hardware prefetcher (see [`STREAM_ROWS`]); the packed
/// tiles (`simd/tiles.rs`) copy such rows into a scratch tile first.
pub(super) const FAR_ROW_BYTES: usize = 4096;

/// Source rows far apart that one transpose tile reads at most. Intel's
/// L2 streamer follows up to 32 streams (one per 4 KiB page); a tile of
/// 64 source rows 16 MiB apart (`transposed (0,3)` of `[64, 128, 256,
/// 128]` f32) starves it. Tiles of 32 such rows (with the half batch of
/// [`tiled`]), alternated at 1 GiB on the 2-core VM (session 46): `(0,3)`
/// 0.71-0.72x -> 0.80-0.83x of the streamed copy, `(1,3)` 0.81-0.83x ->
/// 0.86-0.88x; at 128 MiB (`[64, 128, 256, 16]`) `(0,3)` 0.59-0.61x ->
/// 0.69-0.74x, `(1,3)` 0.42-0.46x -> 0.68-0.70x.
pub(super) const STREAM_ROWS: usize = 32;

/// Far source rows a transpose tile of `es`-byte elements reads, of the
/// `n` the destination's rows take (`ej` of them at most, the cap for
/// near rows), `stride` bytes apart: [`STREAM_ROWS`], unless
/// - all `n` fit the tile, there are more than STREAM_ROWS of them and a
///   destination row of `n` f32 is not whole 64-byte lines (NCHW -> NHWC
///   at C = 36, 40 or 56): taken whole. Split into 32 and the rest,
///   every piece of such a row starts and ends inside a line that
///   another tile writes too, much later; taken whole, a tile writes its
///   destination rows from start to end. At 256 MiB on the Emerald
///   Rapids VM (session 76, `examples/channels.rs`, three alternated
///   rounds, as a fraction of a dense copy): C = 36 0.07-0.08x ->
///   0.30-0.33x, C = 40 0.22-0.24x -> 0.40-0.52x, C = 56 0.19-0.22x ->
///   0.52-0.54x. Rows of whole lines (C = 48: 32 + 16) split as before.
/// - rows of f32 whose destination rows are whole lines, with more than
///   [`STREAM_ROWS_PER_SET`] of STREAM_ROWS rows in one set of the L2
///   (a large power of two apart: NCHW -> NHWC of 512 x 512 or 256 x 256
///   pixels, the transposes and permutes of power-of-two shapes): tiles
///   of [`SET_ROWS`], whose rows the L2 can hold while a tile reads
///   them. At 1 GiB on the same VM (session 77, two alternated rounds):
///   `(0,3)` 0.59-0.60x -> 0.67-0.69x, `permute [4, 2, 0, 3, 1]`
///   0.62-0.64x -> 0.74-0.75x, NCHW -> NHWC at C = 64 0.58-0.62x ->
///   0.73-0.74x and at C = 256 0.59-0.66x -> 0.71-0.72x. The tuning
///   says which tiles take them ([`Tuning::set_rows`]: on Zen 5 only
///   those of at most STREAM_ROWS rows, or of source rows longer than
///   [`WHOLE_ROW_BYTES`] (split) with `n` not a multiple of 128).
fn far_rows(n: usize, ej: usize, es: usize, stride: usize, row_bytes: usize, tuning: Tuning) -> usize {
    let whole_lines = (n * es).is_multiple_of(64);
    if es == 4 && n > STREAM_ROWS && n <= ej && !whole_lines {
        n
    } else if es == 4 && whole_lines && tuning.set_rows(n, row_bytes) && rows_per_set(STREAM_ROWS.min(n), stride) > STREAM_ROWS_PER_SET {
        ej.min(SET_ROWS)
    } else {
        ej.min(STREAM_ROWS)
    }
}

/// Far source rows of a tile that may share one set of the L2 before
/// the tile takes [`SET_ROWS`] instead of [`STREAM_ROWS`].
const STREAM_ROWS_PER_SET: usize = 8;

/// Far source rows per tile when more than [`STREAM_ROWS_PER_SET`] of
/// STREAM_ROWS would share an L2 set (see [`far_rows`]).
const SET_ROWS: usize = 16;

/// The most of `rows` source rows `stride` bytes apart that fall in one
/// set of the L2, counted over sets of 64-byte lines in a way of 128 KiB
/// (Intel's 2 MiB 16-way and AMD's 1 MiB 8-way L2 both have 2048 sets).
/// Rows a large power of two apart all fall in one or two.
pub(super) fn rows_per_set(rows: usize, stride: usize) -> usize {
    rows_per_set_in(rows, stride, 128 << 10)
}

/// The most of `rows` source rows `stride` bytes apart whose lines at
/// the same column fall in one set of the L1, counted over sets of
/// 64-byte lines in a way of 4 KiB (the 32 KiB 8-way and 48 KiB 12-way
/// L1s alike have 64 sets). Rows an odd multiple of 2 KiB apart fall in
/// two sets (NCHW -> NHWC of 512-row planes of odd width: half the rows
/// in each), rows a multiple of 4 KiB apart all in one.
pub(super) fn rows_per_l1_set(rows: usize, stride: usize) -> usize {
    rows_per_set_in(rows, stride, 4 << 10)
}

/// The most of `rows` rows `stride` bytes apart that fall in one set of
/// 64-byte lines of a cache with ways of `way` bytes (a power of two of
/// at most 4 MiB, so that a set's number fits 16 bits).
fn rows_per_set_in(rows: usize, stride: usize, way: usize) -> usize {
    // Row k's offset in a way; wrapping is exact modulo `way`, a power
    // of two that divides 2^64.
    let mut sets: smallvec::SmallVec<[u16; 64]> = (0..rows).map(|k| (k.wrapping_mul(stride) % way / 64) as u16).collect();
    sets.sort_unstable();
    let (mut most, mut run) = (0, 0);
    for (k, s) in sets.iter().enumerate() {
        run = if k > 0 && sets[k - 1] == *s { run + 1 } else { 1 };
        most = most.max(run);
    }
    most
}

/// How many of a transpose tile's far source rows share one set of the
/// L2 and of the L1: hints to the tiles' kernels (which kernel takes a
/// streamed tile, and where it prefetches), on which no result depends.
/// Counted once per task by `walk.rs` for the nest's largest tile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Crowding {
    /// [`rows_per_set`] of the rows.
    pub(crate) l2: usize,
    /// [`rows_per_l1_set`] of the rows.
    pub(crate) l1: usize,
}

impl Crowding {
    /// Not counted (near rows, too many rows, or not streamed): as
    /// crowded as can be, which no kernel that asks takes.
    pub(crate) const UNCOUNTED: Crowding = Crowding { l2: usize::MAX, l1: usize::MAX };

    /// The crowding of `rows` source rows `stride` bytes apart.
    pub(crate) fn of(rows: usize, stride: usize) -> Crowding {
        Crowding { l2: rows_per_set(rows, stride), l1: rows_per_l1_set(rows, stride) }
    }
}

/// Bytes per transpose tile and side (L1/L2 sized).
const TILE_BYTES: usize = 32 << 10;

/// Source rows up to this many bytes go into one tile whole (a tile of up
/// to twice TILE_BYTES): split, each row would be read in two or more
/// passes over the source, half a KiB at a time. NHWC->NCHW at C = 256
/// (rows of 256 f32) at 1 GiB, A/B on the 2-core VM: 0.56-0.61x ->
/// 0.70-0.77x of the streamed copy (rows of 1 KiB, session 41); `permute
/// [4, 2, 0, 3, 1]` (rows of 2 KiB, 32 of them per tile): 0.51-0.53x ->
/// 0.59-0.60x (session 46).
pub(super) const WHOLE_ROW_BYTES: usize = 2 << 10;

/// Bytes of each source row a tile takes when whole rows would make it
/// larger than TILE_BYTES (`Order::Along`). Tiles of 16 KiB that run
/// along their rows keep both sides' streams going from tile to tile
/// where tiles of 64 KiB left the reads and writes in separate phases
/// (a C model of the packed kernel, 2 threads: 64 KiB tiles read with
/// the next tile prefetched 63-65 ms, 16 KiB tiles 57 ms, the streamed
/// copy 44-55 ms in the same runs). Alternated with the build before at 1 GiB on the
/// 2-core VM (session 48, three rounds): `permute [4, 2, 0, 3, 1]`
/// 0.59-0.63x -> 0.67x of the streamed copy, `permute [1, 3, 5, 0, 2,
/// 4]` 0.67-0.71x -> 0.72-0.75x (pieces of 256 or 1024 bytes no better;
/// batching 2 or 4 steps of the inside loop into each tile, for longer
/// destination runs, worse: 0.50-0.58x). [`Tuning::Square`]'s and
/// [`Tuning::SquareLongRuns`]' size; [`Tuning::LongReads`] takes the rows
/// whole (see `tuning.rs`).
pub(super) const SPLIT_ROW_BYTES: usize = 512;

/// The loops of a tiled body over loops `i = axes[p]` and `j = axes[q]`:
/// the other loops outside the tile blocks, except those that step within
/// the tile's rows on both sides (strides below the rows' strides), which
/// run inside them so that every row is walked from start to end.
fn tiled(axes: &[Axis], p: usize, q: usize, body: Body, tuning: Tuning) -> Nest {
    let (i, j) = (axes[p], axes[q]);
    let (ei, ej) = match body {
        Body::Tile { ei, ej, .. } | Body::Runs { ei, ej, .. } => (ei, ej),
        _ => (1, 1),
    };
    let others = axes.iter().enumerate().filter(|&(k, _)| k != p && k != q).map(|(_, a)| *a);
    let inside = |a: &Axis| a.ss.unsigned_abs() < j.ss.unsigned_abs() && a.ds.unsigned_abs() < i.ds.unsigned_abs();
    let mut loops: Vec<Axis> = others.clone().filter(|a| !inside(a)).collect();
    let blocks = loops.len();
    let order = match body {
        Body::Tile { order, .. } => order,
        _ => Order::Blocks,
    };
    let bi = Axis { n: i.n.div_ceil(ei), ds: i.ds * ei as isize, ss: i.ss * ei as isize };
    let bj = Axis { n: j.n.div_ceil(ej), ds: j.ds * ej as isize, ss: j.ss * ej as isize };
    if let (Order::Along, Body::Tile { j, i, c, ei, ej, ec, .. }) = (order, body) {
        loops.push(bj);
        loops.extend(others.filter(|a| inside(a)));
        loops.push(bi);
        return Nest { loops, kind: Body::Tile { j, i, c, ei, ej, ec, blocks, order } };
    }
    loops.extend(if order == Order::JFirst { [bj, bi] } else { [bi, bj] });
    loops.extend(others.filter(|a| inside(a)));
    let kind = match body {
        Body::Tile { j, i, ei, ej, .. } => {
            // The innermost inside loop (the last: smallest destination
            // stride) batches tiles, up to a tile of BATCH_FLOATS elements.
            let (mut c, mut ec) = (Axis { n: 1, ds: 0, ss: 0 }, 1);
            // A batch makes the destination's runs longer only when a
            // tile spans its whole rows; else it lengthens the source's
            // runs only, and grows to half as much (`(0,3)` at 1 GiB:
            // no batch beat batches of two; at 128 MiB, source rows of
            // 64 bytes: batches of 8 beat batches of 16 and none).
            let batch = if ej >= j.n { tuning.batch_floats() } else { tuning.batch_floats() / 2 };
            if loops.len() > blocks + 2 {
                if let Some(last) = loops.pop() {
                    c = last;
                    let per = i.n.min(ei) * j.n.min(ej);
                    ec = (batch / per.max(1)).clamp(1, c.n);
                    loops.push(Axis { n: c.n.div_ceil(ec), ds: c.ds * ec as isize, ss: c.ss * ec as isize });
                }
            }
            Body::Tile { j, i, c, ei, ej, ec, blocks, order }
        }
        Body::Runs { n, j, i, ei, ej, .. } => Body::Runs { n, j, i, ei, ej, blocks },
        other => other,
    };
    Nest { loops, kind }
}
