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
//!
//! Where each part lives: [`nest`] plans the loop nest (runs, tiles,
//! tiles of runs) with the tile shapes [`tuning`] picks for the
//! processor (Intel's and AMD's want different ones), [`walk`] runs it
//! across the pool, [`dense`] holds the
//! streamed dense copies, fills, row copies and merges that the copy,
//! fill and merge operations call directly, and `simd` the x86-64
//! kernels. [`copy`] is the entry point.

mod dense;
mod nest;
mod tuning;
#[cfg(target_arch = "x86_64")]
mod simd;
#[cfg(test)]
mod tests;
mod walk;

pub(crate) use dense::{copy_chunk, copy_rows, copy_streamed_if, copy_task, fill_streamed, merge_rows, split_rows, store_fence, streams};
pub(crate) use walk::copy;

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

/// The normalised loops of a copy of `dims` elements at element strides
/// `ds` in the destination and `ss` in the source (one per dim, in order).
pub(crate) fn loops(dims: &[usize], ds: &[isize], ss: &[isize]) -> Vec<Axis> {
    normalise(dims.iter().zip(ds.iter().zip(ss)).map(|(&n, (&ds, &ss))| Axis { n, ds, ss }).collect())
}

/// [`loops`] of a gather: `dims` elements at element strides `ss` into a
/// dense row-major destination.
pub(crate) fn gather_loops(dims: &[usize], ss: &[isize]) -> Vec<Axis> {
    let ds: crate::axes::Axes<isize> = crate::axes::axes_filled(dims.len(), |s| crate::layout::fill_row_major_strides(dims, 1, s));
    loops(dims, &ds, ss)
}

/// Bytes of work per parallel task.
pub(crate) const TASK_BYTES: usize = 256 << 10;

/// Destinations at least this large are written with non-temporal stores
/// where the kernel can (they would not stay in cache anyway, and skipping
/// the read for ownership saves a third of the memory traffic).
pub(crate) const STREAM_BYTES: usize = 32 << 20;

/// A task's scratch for packed tiles holds at most three times this many
/// 4-byte elements (a tile's source rows and its transposed rows,
/// padded); a tile of whole source rows of up to 256 elements beside 64
/// destination rows needs about 37 Ki of them.
pub(crate) const PACK_FLOATS: usize = 40 << 10;

/// Elements (4-byte) a batch of tiles grows to (see `Body::Tile`'s batch
/// loop): 32 KiB, a tile that stays in L1 while it is transposed. A
/// 64 x 128 tile is then one step of the batch: `transposed (0,3)` of
/// `[64, 128, 256, 128]` f32 reads 64 runs of 512 bytes, 16 MiB apart,
/// per tile instead of 64 runs of 2.5 KiB (batches of 5, 160 KiB tiles,
/// transposed from L2). At 1 GiB on the 2-core VM, alternated with the
/// batches of 160 KiB (session 42): `(0,3)` 0.56-0.58x -> 0.73-0.75x and
/// `(1,3)` 0.56-0.61x -> 0.75-0.79x of the streamed copy, the first two
/// permutes 0.48-0.55x -> 0.51-0.61x, every other row unchanged; at 128
/// MiB `(0,3)` 0.46-0.48x -> 0.61-0.63x and the first two permutes
/// 0.52-0.54x -> 0.72-0.74x. (Since session 46 a tile reads at most 32
/// source rows that lie far apart, and such a tile batches to half of
/// this: see `nest.rs`.) On AMD processors batches grow to four times
/// this (see `tuning.rs`).
pub(crate) const BATCH_FLOATS: usize = 8 << 10;
