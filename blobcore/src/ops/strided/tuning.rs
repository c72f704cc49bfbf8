//! Tile shapes per processor family: how many source streams a transpose
//! tile reads at once, how long each is, how far a batch grows, and where
//! a tile prefetches the next one's source.
//!
//! The two families measured want different shapes. On Intel Xeons
//! ([`Tuning::Square`], sessions 20-49: the 2-core VM and the 16-core
//! host of the device machine) tiles of runs square on both sides stream
//! best and batches of more than 32 KiB cost (`mod.rs`'s `BATCH_FLOATS`);
//! on the Emerald Rapids VM of session 75 (model 207) the square tiles
//! were again the fastest of the three on the far-row transposes.
//! On AMD Zen 5 ([`Tuning::LongReads`], session 50: this project's 2-core
//! VM from 2026-12-01, an EPYC of family 26, 1 MiB of L2 per core, 32 MiB
//! of L3) a tile of runs is fastest when it reads few source streams,
//! each 16 KiB long, and writes many short destination pieces, and
//! transpose tiles batch up to 128 KiB. AMD processors with at most 512
//! KiB of L2 per core ([`Tuning::RowBursts`], session 72: a 2-core Zen 3
//! VM, family 25) plan as Zen 5 does but write a batched tile's
//! destination rows whole, one at a time, and far destination rows of
//! deinterleaves and unpacked tiles in bursts of up to 512 bytes
//! (session 73). AMD Zen 4 (family 25 with more than 512 KiB of L2 per
//! core: session 82's 2-core VM, an EPYC of family 25, model 17, 1 MiB of
//! L2 per core, 32 MiB of L3, AVX-512) streams best with the square
//! tiles, as the Intel Xeons do, except in tiles of runs of 64 bytes and
//! more, which read long streams as on Zen 5 ([`Tuning::SquareLongRuns`];
//! see [`Tuning::host`] and [`Tuning::run_tile`]). Each family keeps
//! the shapes it was measured with; a processor of neither vendor gets
//! the square ones.
//! The far-row rules (`nest.rs`'s `STREAM_ROWS`, whole rows, split rows)
//! are the same for all but one: far rows that crowd an L2 set come 16
//! to a tile everywhere but on Zen 5, which keeps 32 for most of them
//! ([`Tuning::set_rows`], session 89). On the Zen 5 VM, tiles of 16 far rows of 16 KiB
//! each took NCHW->NHWC at C = 64 from 0.78-0.81x to 0.86-0.89x of the
//! streamed copy at 1 GiB, but `transposed (1,3)` from 0.80-0.83x to
//! 0.42-0.58x, `permute [4, 2, 0, 3, 1]` from 0.72-0.77x to 0.46-0.48x and
//! NCHW->NHWC at C = 256 from 0.80-0.81x to 0.74x, and were dropped.
//! Zen 5 also hints the far rows of a grouped NCHW->NHWC tile into L2
//! rather than L1 where more of them share an L1 set than it has ways
//! ([`Tuning::groups_hint_into_l2`], session 90).

/// Which tile shapes [`super::nest`] plans with (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tuning {
    /// Square tiles of runs, batches up to 32 KiB (Intel; the default).
    Square,
    /// Tiles of runs that read few long source streams and write many
    /// short destination pieces, batches up to 128 KiB (AMD).
    LongReads,
    /// [`Tuning::LongReads`]' shapes, with a streamed packed tile's
    /// batched destination rows written out whole, one row at a time,
    /// and the far rows of streamed deinterleaves and unpacked tiles in
    /// bursts (AMD with at most 512 KiB of L2 per core: see
    /// [`Tuning::batched_rows_in_bursts`] and
    /// [`Tuning::rows_in_bursts`]).
    RowBursts,
    /// [`Tuning::Square`]'s shapes, except tiles of runs of 64 bytes and
    /// more, which take [`Tuning::LongReads`]' (AMD Zen 4: see
    /// [`Tuning::run_tile`]).
    SquareLongRuns,
}

/// Bytes a tile of runs reads (and writes) with [`Tuning::Square`]:
/// 16 x 16 runs of 512 bytes.
const RUN_TILE_BYTES: usize = 128 << 10;

/// Bytes of each source stream a [`Tuning::LongReads`] tile reads.
const LONG_READ_BYTES: usize = 16 << 10;

/// Far source rows a grouped tile has at least before
/// [`Tuning::groups_hint_into_l2`] hints them into L2 only (three groups
/// of eight).
const GROUPS_L2_ROWS: usize = 24;

/// Ways of the L1 data cache of the processors that hint grouped rows
/// into L2 (Zen 5: 48 KiB, 12-way): more rows than this sharing a set
/// cannot all keep their lines and their hinted ones there.
const L1_WAYS: usize = 12;

impl Tuning {
    /// Every tuning, for tests that check every plan against an oracle.
    #[cfg(test)]
    pub(super) const ALL: [Tuning; 4] = [Tuning::Square, Tuning::LongReads, Tuning::RowBursts, Tuning::SquareLongRuns];

    /// The tuning of the processor this process runs on (looked up once;
    /// never waited for, so no fork can leave it half made).
    pub(super) fn host() -> Tuning {
        static HOST: crate::first_use::FirstUse<Tuning> = crate::first_use::FirstUse::new();
        *HOST.get_or_make(|| Tuning::of(is_amd(), cpu_family(), l2_kib()))
    }

    /// The tuning of a processor: AMD's with at most 512 KiB of L2 per
    /// core (Zen 3 and older) [`Tuning::RowBursts`]; AMD's family 25 (Zen
    /// 4) or an older one with more [`Tuning::SquareLongRuns`]; later AMD
    /// families (Zen 5, family 26) and AMD's whose family CPUID does not
    /// give [`Tuning::LongReads`]; every other processor
    /// [`Tuning::Square`].
    ///
    /// Zen 4: on session 82's VM (family 25, model 17), the two tunings
    /// alternated in one process at 1 GiB, three rounds of every
    /// transpose, permute and reorder row of `benches/ops.rs`, best of 5
    /// runs each: the square tiles were faster in 15 rows and level in
    /// the others (within the noise, which moved the streamed copy
    /// between 25 and 50 ms). The best times, square against long reads:
    /// `transposed (1,3)` 59.8 / 80.1 ms, `(0,3)` 64.8 / 72.9, `(2,3)`
    /// 38.3 / 49.2, `(1,2)` 37.2 / 43.9, `permute [5, 0, 3, 1, 4, 2]`
    /// 55.5 / 73.2, `[4, 2, 0, 3, 1]` 62.2 / 70.9, `[1, 3, 5, 0, 2, 4]`
    /// 47.7 / 55.5, NCHW->NHWC at C = 64 36.0 / 55.8 and at C = 256 48.3 /
    /// 58.4, NHWC->NCHW at C = 64 36.6 / 48.3 and at C = 256 46.5 / 54.5
    /// (raw figures in `docs/vm-runs/2026-12-06-session-82/`). The row
    /// bursts were slower than both in a first round. The square tiles
    /// lost at 128 MiB on the tiles of runs of 64 bytes, which Zen 4
    /// therefore plans as Zen 5 does ([`Tuning::SquareLongRuns`], session
    /// 83; see [`Tuning::run_tile`]).
    fn of(amd: bool, family: Option<u32>, l2_kib: Option<u32>) -> Tuning {
        match (amd, family, l2_kib) {
            (true, _, Some(kib)) if kib <= 512 => Tuning::RowBursts,
            (true, Some(f), _) if f <= ZEN_4_FAMILY => Tuning::SquareLongRuns,
            (true, _, _) => Tuning::LongReads,
            (false, _, _) => Tuning::Square,
        }
    }


    /// A tile of runs of `run_bytes` (each contiguous on both sides):
    /// `(ei, ej)`, the runs it takes along the source's next loop (`ei`,
    /// one source stream of `ei` runs) and along the destination's (`ej`,
    /// that many source streams).
    ///
    /// Square: about 128 KiB in a square (45 x 45 runs of 64 bytes, 16 x
    /// 16 of 512). LongReads: for runs of 64 bytes and more, 4 source
    /// streams of 16 KiB (256 runs of 64 bytes, 32 of 512). On the Zen 5
    /// VM, alternated with the square tiles: `transposed (0,2)` and `(1,2)`
    /// of `[64, 128, 256, 16]` (128 MiB, runs of 64 bytes) 0.39-0.65x ->
    /// 0.98-1.05x of the streamed copy in a quiet phase (10.7-13.2 ms ->
    /// 5.9-7.1 ms in a noisy one; 8 streams of 16 KiB gave 0.79-0.85x, 2
    /// streams 0.82-0.98x, 16 or more 0.5-0.77x); of `[64, 128, 256, 128]`
    /// (1 GiB, runs of 512 bytes) 48.9-65.4 ms -> 41.6-55.6 ms. Runs of 32
    /// bytes (nChw16c -> nChw8c) were slower with 4 streams (5.3-5.7 ms
    /// -> 6.8-8.9 ms at 128 MiB), so shorter runs keep the square tiles.
    ///
    /// SquareLongRuns: as LongReads. On session 83's Zen 4 VM (family 25,
    /// model 17), the square and the long-read tiles of runs alternated
    /// in one binary (all other shapes square), two rounds at 128 MiB:
    /// `transposed (0,2)` of `[64, 128, 256, 16]` 10.5 and 9.4 ms -> 5.7
    /// and 5.8 ms (0.55-0.59x -> 0.96-0.97x of the streamed copy), `(1,2)`
    /// 8.1 and 8.6 -> 5.7 and 5.8 ms (0.61-0.71x -> 0.97-0.98x), the
    /// reorders of runs of 32 bytes unchanged (square either way); six
    /// rounds at 1 GiB (runs of 512 bytes), level within the noise: the
    /// best of six 43.8 -> 40.6 ms for `(0,2)`, 36.7 -> 31.6 ms for
    /// `(1,2)` (a streamed copy: 26-46 ms).
    pub(super) fn run_tile(self, run_bytes: usize) -> (usize, usize) {
        match self {
            Tuning::Square => {
                let edge = (RUN_TILE_BYTES / run_bytes.max(1)).isqrt().clamp(4, 64);
                (edge, edge)
            }
            Tuning::LongReads | Tuning::RowBursts | Tuning::SquareLongRuns if run_bytes >= 64 => {
                ((LONG_READ_BYTES / run_bytes).clamp(4, 256), 4)
            }
            Tuning::LongReads | Tuning::RowBursts | Tuning::SquareLongRuns => Tuning::Square.run_tile(run_bytes),
        }
    }

    /// Bytes of each source row a tile takes when whole rows would make
    /// it larger than a tile (`nest.rs`'s `Order::Along`). Square:
    /// `SPLIT_ROW_BYTES` (512). LongReads: whole rows (they are at most
    /// `WHOLE_ROW_BYTES`, 2 KiB, there), so that each source stream is
    /// read 2 KiB at a time. Alternated in one process at 1 GiB on the
    /// Zen 5 VM (session 51, medians of 10-12 rounds, six sets each):
    /// `permute [4, 2, 0, 3, 1]` faster in five sets (64.0-77.5 ms ->
    /// 59.0-68.5 ms) and slower in one (69.5 -> 80.2 ms), `permute [1, 3,
    /// 5, 0, 2, 4]` faster in all six (49.6-75.4 ms -> 45.6-55.7 ms);
    /// pieces of 1 KiB fell between.
    pub(super) fn split_row_bytes(self) -> usize {
        match self {
            Tuning::Square | Tuning::SquareLongRuns => super::nest::SPLIT_ROW_BYTES,
            Tuning::LongReads | Tuning::RowBursts => super::nest::WHOLE_ROW_BYTES,
        }
    }

    /// Whether a transpose tile prefetches the next tile's source into
    /// L1 rather than L2 while it writes its own (`simd/tiles.rs`'s
    /// `Ahead`; a hint: no result depends on it). Square: L2 (session
    /// 45 found L1, L2 and L3 the same on the Intel VM). LongReads: L1.
    /// Alternated with L2 in one process at 1 GiB on the Zen 5 VM
    /// (session 52, medians of 8 rounds, the order swapped every round,
    /// three sets over eleven packed rows): faster in 26 of 33 row-sets,
    /// up to 24% (`permute [1, 3, 5, 0, 2, 4]` 0.76-0.85 of the time in
    /// every set, `permute [4, 2, 0, 3, 1]` 0.93-0.96, NHWC->NCHW at
    /// C = 256 and 64 0.94-0.99), slower in 7, by at most 8%
    /// (`transposed (0,2)` 0.94-1.08, `(0,3)` 0.81-1.04, `(1,3)`
    /// 0.98-1.03, two sets each; NCHW->NHWC at C = 64 1.02 once).
    pub(super) fn next_tile_into_l1(self) -> bool {
        matches!(self, Tuning::LongReads | Tuning::RowBursts)
    }

    /// Whether a transpose tile whose `n` far source rows crowd an L2
    /// set (`nest.rs`'s `far_rows`), each `row_bytes` long, reads
    /// `SET_ROWS` (16) of them rather than `STREAM_ROWS` (32). Every
    /// tuning but [`Tuning::LongReads`]: yes (measured on the Emerald
    /// Rapids VM, session 77). LongReads: when there are at most 32 far
    /// rows, or the source rows are split across tiles (longer than
    /// `WHOLE_ROW_BYTES`, 2 KiB) and `n` is not a multiple of 128.
    ///
    /// On session 89's Zen 5 VM (an EPYC of family 26, model 2, 1 MiB of
    /// 16-way L2 per core, 32 MiB of L3), alternated in one process at 1
    /// GiB, tiles of 16 against 32 rows, the best of 6-8 rounds, with the
    /// streamed copy at 22-23 ms (the VM's fast phase) and 37-40 ms (its
    /// slow one): `transposed (1,3)` of `[64, 128, 256, 128]` (whole rows
    /// of 512 bytes, 128 KiB apart) 57.8-58.5 -> 34.3-34.5 ms and
    /// 66.4-69.1 -> 46.6-48.0 ms; `(0,3)` (whole rows, 16 MiB apart)
    /// 41.0-41.4 -> 29.9-30.0 ms and 48.8-50.7 -> 44.3-46.1 ms; NCHW ->
    /// NHWC at C = 256 (rows split, 256 KiB apart) 43.1-43.7 -> 29.5-29.9
    /// ms and 55.4-61.2 -> 46.0-47.3 ms, and likewise at C = 128, 384,
    /// 512 and 1024; but at C = 64 28.6-28.7 -> 31.3 ms and 43.1-43.8 ->
    /// 47.7-49.9 ms, and 16 rows were faster too at C = 32, 48, 96, 160,
    /// 192 and 320 (rows split). `permute [4, 2, 0, 3, 1]` (32 whole rows
    /// of 2 KiB, 2 MiB apart) was level (33.7 / 33.8 ms, 43.1 / 43.0 ms)
    /// and at 128 MiB (32 rows of 256 bytes) slower in tiles of 32 (two
    /// rounds: 4.06 and 4.11 -> 4.78 and 4.62 ms), so 32 rows or fewer
    /// keep tiles of 16.
    /// Session 50 found 16 far rows slower on the same family before the
    /// crowding rule existed.
    pub(super) fn set_rows(self, n: usize, row_bytes: usize) -> bool {
        match self {
            Tuning::Square | Tuning::RowBursts | Tuning::SquareLongRuns => true,
            Tuning::LongReads => n <= super::nest::STREAM_ROWS || (row_bytes > super::nest::WHOLE_ROW_BYTES && !n.is_multiple_of(128)),
        }
    }

    /// Whether a streamed grouped tile (`simd/groups.rs`: NCHW -> NHWC
    /// with 16 to 64 channels a tile) of `rows` far source rows, of which
    /// `per_l1_set` share one L1 set (`nest::rows_per_l1_set`), hints its
    /// rows into L2 only, all of them before each line's reads, rather
    /// than each into L1 just before its own read (hints: no result
    /// depends on them). [`Tuning::LongReads`] only, for tiles of at
    /// least [`GROUPS_L2_ROWS`] rows of which more than [`L1_WAYS`] share
    /// a set: the L1 cannot hold every such row's line and its hinted
    /// one, so the hints evict lines before they are read (planes of 512
    /// rows of odd width lie an odd multiple of 2 KiB apart: half the
    /// channels in each of two sets; of even width, 4 KiB: all in one).
    /// Fewer rows (C = 16) and rows that fit the ways (C = 24 of 512 x
    /// 1365: 12 to a set) keep the L1 hints, as do rows spread over the
    /// sets.
    ///
    /// On session 90's Zen 5 VM (the one of session 89), NCHW -> NHWC at
    /// 1 GiB, alternated builds (the best of 4; as a fraction of
    /// blobcore's dense copy in the same process), with the dense copy at
    /// 21-22 ms (the VM's fast memory phase) and 37-39 ms (its slow one):
    /// C = 40 of 512 x 819 (20 rows to a set) 39.0-40.4 -> 30.8 ms
    /// (0.55-0.56x -> 0.74x) and 55.4-58.5 -> 48.8-52.9 ms (0.65-0.69x ->
    /// 0.75-0.77x); C = 56 of 512 x 585 (28) 60.6 -> 53.3-59.3 ms (0.63x
    /// -> 0.72-0.74x) in the slow phase; C = 32 of 512 x 1000 (32) 30.7 ->
    /// 28.1 ms (0.68x -> 0.77x) and 47.8 -> 44.4 ms; C = 48 of 512 x 682
    /// (48) 30.6 -> 30.7 ms and 49.2 -> 44.7 ms (0.77x -> 0.86x). In a
    /// build with the kernel's forms switchable in one process, the L2
    /// hints interleaved with the reads (as the L1 hints are) were slower
    /// (C = 40 33.8-36.4 ms in the fast phase), and a pass of hints of
    /// either kind before the reads slower for C = 16 of 512 x 2048
    /// (0.92-0.94x -> 0.86-0.88x in the slow phase) and C = 24 of 512 x
    /// 1365 (0.88-0.92x -> 0.85-0.90x). That build and others with a test
    /// in the loop ran the L1 form itself at C = 40 in 27-28 ms, main's in
    /// 39-40: the form's speed there turns on how the compiler lays out
    /// its loop.
    pub(super) fn groups_hint_into_l2(self, rows: usize, per_l1_set: usize) -> bool {
        self == Tuning::LongReads && rows >= GROUPS_L2_ROWS && per_l1_set > L1_WAYS
    }

    /// 4-byte elements a batch of tiles grows to (see `Body::Tile`).
    /// Square: 32 KiB (`mod.rs`'s `BATCH_FLOATS`). LongReads: 128 KiB.
    /// `permute [5, 0, 3, 1, 4, 2]` at 1 GiB on the Zen 5 VM (16 far
    /// source rows of 2 KiB a tile, each 512 destination rows 4 MiB
    /// apart getting 64 bytes per batch step): 0.68-0.69x -> 0.84-0.88x
    /// of the streamed copy with batches of 64 or 128 KiB (256 KiB:
    /// 0.73-0.76x), 67.6-77.7 ms -> 49.0-51.4 ms in a noisy phase; the
    /// other batched rows (`(0,3)`, `(1,3)`, the other permutes) the same
    /// within the noise.
    pub(super) fn batch_floats(self) -> usize {
        match self {
            Tuning::Square | Tuning::SquareLongRuns => super::BATCH_FLOATS,
            Tuning::LongReads | Tuning::RowBursts => 4 * super::BATCH_FLOATS,
        }
    }

    /// Whether a streamed packed tile with a batch (`simd/tiles.rs`)
    /// writes each destination row's part of the tile in one burst,
    /// through the scratch, rather than eight rows at a time straight
    /// from the registers (where the bytes go first; no result depends
    /// on it). [`Tuning::RowBursts`] only.
    ///
    /// On session 72's 2-core VM (an EPYC of family 25, model 1: Zen 3,
    /// 512 KiB of 8-way L2 per core, 32 MiB of L3, no AVX-512),
    /// streamed stores spread over far rows, a short piece to each in
    /// turn, are slow once reads are mixed in. A C model, sequential
    /// reads with streamed writes to 32-512 rows a power of two apart, at
    /// 1 GiB with 2 threads against a streamed copy: 64 bytes per row in
    /// turn 0.33-0.46x, 128 bytes 0.53-0.58x, 256 bytes 0.78-0.81x, 1 KiB
    /// 0.99-1.03x. Alternated in one process at 1 GiB (6 rounds, the
    /// best of each, two sets): `transposed (0,3)` of `[64, 128, 256,
    /// 128]` 125-128 -> 87-91 ms, `(1,3)` 124-132 -> 86-92 ms, `permute
    /// [5, 0, 3, 1, 4, 2]` 114-116 -> 100-101 ms (a streamed copy: 31-45
    /// ms). Unbatched tiles (NCHW->NHWC, `permute [4, 2, 0, 3, 1]`) were
    /// 2-37% slower through the scratch and keep the direct stores, as
    /// do the other tunings: the direct stores were measured faster on
    /// the Intel VM (session 42) and kept on Zen 5.
    pub(super) fn batched_rows_in_bursts(self) -> bool {
        matches!(self, Tuning::RowBursts)
    }

    /// Whether streamed transposes that would write far-apart
    /// destination rows 64 bytes to each in turn write each row's piece
    /// in one burst through a small scratch in L1 instead: deinterleaves
    /// (NHWC -> NCHW with C = 2, 3, 4 and 8, nChw8c -> NCHW; 512 bytes a
    /// row) and unpacked tiles of at least 64 columns (NHWC -> NCHW at
    /// C = 64 and 256, `transposed (2,3)`; 256-512 bytes a row). A hint:
    /// no result depends on it. [`Tuning::RowBursts`] only, as
    /// [`Tuning::batched_rows_in_bursts`] (measured there only).
    ///
    /// Alternated in one process at 1 GiB on session 73's Zen 3 VM
    /// (family 25, model 1, as session 72's), the best of 5-6 rounds,
    /// two sets each: nChw8c -> NCHW 58-66 -> 49-51 ms, NHWC -> NCHW at
    /// C = 3 50 -> 38-46 ms, at C = 64 78-90 -> 52-60 ms, at C = 256
    /// 64-69 -> 57-59 ms, `transposed (2,3)` of `[64, 128, 256, 128]`
    /// 64-77 -> 46-56 ms; the other transposes and reorders level (a
    /// streamed copy: 32-78 ms in these runs, a noisy phase). Tiles of
    /// 128 or 256 columns instead of 64 for NHWC -> NCHW (bursts of
    /// 512 bytes and 1 KiB) were no faster at C = 64 and slower at
    /// C = 256 (65 -> 89-101 ms).
    pub(super) fn rows_in_bursts(self) -> bool {
        matches!(self, Tuning::RowBursts)
    }
}

/// True on AMD Zen 4 (family 25 with more than 512 KiB of L2 per core;
/// looked up once), where reads from a few far streams want software
/// hints into L2 that the other processors measured did without
/// ([`merge_ahead_bytes`], [`groups_ahead_elements`]).
fn zen4() -> bool {
    static ZEN4: crate::first_use::FirstUse<bool> = crate::first_use::FirstUse::new();
    *ZEN4.get_or_make(|| is_zen4(is_amd(), cpu_family(), l2_kib()))
}

/// Zen 4 by CPUID's vendor, family and L2 size (Zen 3, the same family,
/// has 512 KiB).
fn is_zen4(amd: bool, family: Option<u32>, l2_kib: Option<u32>) -> bool {
    amd && family == Some(ZEN_4_FAMILY) && l2_kib.is_some_and(|k| k > 512)
}

/// Bytes ahead of each part's chunk at which a channel merge
/// (`simd::stream_merge`, chunks of 64 B to 1 KiB) hints the part's
/// coming chunks into L2; 0 for none. `ops::L2_AHEAD_BYTES` (2 KiB) on
/// Zen 4, none elsewhere: on session 45's Intel host the hints cost (see
/// `simd::stream_merge`), and the other AMD families were not measured.
///
/// On session 82's Zen 4 VM (family 25, model 17), `merge Channels` of
/// `benches/ops.rs` (two parts of 128-byte chunks) at 1 GiB, alternated
/// in one binary, two rounds: 60.3 and 55.5 ms without hints, 43.6 and
/// 44.9 ms 2 KiB ahead (0.53-0.75x -> 0.97x of the streamed copy); 1 KiB
/// ahead 46.7 and 43.7 ms, 4 KiB 44.7 and 45.1 ms. At 128 MiB level
/// within the noise (3.5-6.7 ms either way).
pub(super) fn merge_ahead_bytes() -> usize {
    if zen4() {
        crate::ops::L2_AHEAD_BYTES
    } else {
        0
    }
}

/// Elements ahead of the current column at which the grouped NCHW ->
/// NHWC tiles (`simd/groups.rs`) hint each far source row into L2, on
/// top of their L1 hint 64 elements ahead; 0 for none. 256 (1 KiB) on
/// Zen 4, none elsewhere (not measured there).
///
/// On session 82's Zen 4 VM at 1 GiB, alternated in one binary, two
/// rounds: NCHW->NHWC at C = 40 78.4 and 71.4 ms without -> 53.1 and
/// 54.4 ms with 256 elements ahead (0.36-0.67x -> 0.80-0.81x of the
/// streamed copy), 49.8 and 56.4 ms with 512; at C = 24 63.4 and 53.4 ->
/// 50.8 and 51.5 ms; C = 64 and 256 level within the noise.
pub(super) fn groups_ahead_elements() -> usize {
    if zen4() {
        256
    } else {
        0
    }
}

/// AMD's family number of Zen 3 and Zen 4 (0x19; Zen 5 is 0x1A).
const ZEN_4_FAMILY: u32 = 0x19;

/// The processor's family as CPUID leaf 1 reports it (the base family,
/// plus the extended family when the base is 0xF, as AMD and Intel both
/// define it); None under Miri, which runs no inline assembly.
fn cpu_family() -> Option<u32> {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let eax = std::arch::x86_64::__cpuid(1).eax;
        let base = (eax >> 8) & 0xF;
        Some(if base == 0xF { base + ((eax >> 20) & 0xFF) } else { base })
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    None
}

/// The L2 cache per core in KiB (CPUID leaf 0x8000_0006, ECX bits
/// 31-16) where the processor reports it; None under Miri, which runs
/// no inline assembly.
fn l2_kib() -> Option<u32> {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if std::arch::x86_64::__cpuid(0x8000_0000).eax < 0x8000_0006 {
            return None;
        }
        Some(std::arch::x86_64::__cpuid(0x8000_0006).ecx >> 16).filter(|&k| k > 0)
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    None
}

/// True on an AMD processor (CPUID's vendor string "AuthenticAMD").
/// Under Miri, which runs no inline assembly (CPUID), false.
fn is_amd() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // CPUID leaf 0 names the vendor in EBX, EDX, ECX.
        let r = std::arch::x86_64::__cpuid(0);
        let mut v = [0u8; 12];
        v[..4].copy_from_slice(&r.ebx.to_le_bytes());
        v[4..8].copy_from_slice(&r.edx.to_le_bytes());
        v[8..].copy_from_slice(&r.ecx.to_le_bytes());
        &v == b"AuthenticAMD"
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    false
}


#[cfg(test)]
mod tests {
    use super::Tuning;

    #[test]
    fn each_processor_family_gets_the_tiles_it_was_measured_with() {
        // (AMD, family, L2 KiB) as CPUID reports them on the machines measured.
        assert_eq!(Tuning::of(true, Some(0x19), Some(512)), Tuning::RowBursts, "Zen 3");
        assert_eq!(Tuning::of(true, Some(0x17), Some(512)), Tuning::RowBursts, "Zen 2");
        assert_eq!(Tuning::of(true, Some(0x19), Some(1024)), Tuning::SquareLongRuns, "Zen 4");
        assert_eq!(Tuning::of(true, Some(0x1A), Some(1024)), Tuning::LongReads, "Zen 5");
        assert_eq!(Tuning::of(false, Some(6), Some(2048)), Tuning::Square, "Intel");
        assert_eq!(Tuning::of(false, None, None), Tuning::Square, "unknown");
        assert_eq!(Tuning::of(true, None, Some(1024)), Tuning::LongReads, "AMD, no family read");
    }

    #[test]
    fn zen_4_is_family_25_with_more_than_512_kib_of_l2() {
        assert!(super::is_zen4(true, Some(0x19), Some(1024)), "Zen 4");
        assert!(!super::is_zen4(true, Some(0x19), Some(512)), "Zen 3");
        assert!(!super::is_zen4(true, Some(0x1A), Some(1024)), "Zen 5");
        assert!(!super::is_zen4(false, Some(0x19), Some(1024)), "not AMD");
        assert!(!super::is_zen4(true, None, None), "unknown");
    }
}
