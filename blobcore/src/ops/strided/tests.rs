//! The strided copy against a naive oracle.

use super::nest::SHORT_RUN;
use super::tuning::Tuning;
use super::*;
use std::cell::Cell;

thread_local! {
    /// The tuning the tests' [`copy`] plans with (set by [`each_tuning`]).
    static TUNING: Cell<Tuning> = const { Cell::new(Tuning::Square) };
}

/// Runs `f` once with each tuning's tile shapes: every plan is checked
/// against the oracle on any machine, whichever tuning it would pick.
fn each_tuning(f: impl Fn()) {
    let before = TUNING.with(Cell::get);
    for t in Tuning::ALL {
        TUNING.with(|c| c.set(t));
        f();
    }
    TUNING.with(|c| c.set(before));
}

/// [`super::copy`] with the tuning [`each_tuning`] set on this thread.
///
/// # Safety
/// As [`super::copy`].
unsafe fn copy(es: usize, axes: &[Axis], dst: *mut u8, src: *const u8, parallel: bool) {
    // SAFETY: forwarded.
    unsafe { walk::copy_tuned(es, axes, dst, src, parallel, TUNING.with(Cell::get)) }
}

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

/// `bytes` in u64 words (little-endian, the last padded with zeros):
/// storage aligned for every element size.
fn in_words(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks(8)
        .map(|chunk| {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            u64::from_le_bytes(w)
        })
        .collect()
}

/// The bytes of the `es`-byte elements of `src` at element indices `idx`.
fn gathered(idx: &[u32], src: &[u8], es: usize) -> Vec<u8> {
    idx.iter().flat_map(|&i| src[i as usize * es..(i as usize + 1) * es].to_vec()).collect()
}

#[test]
fn permutations_match_the_naive_copy() {
    each_tuning(permutations);
}

fn permutations() {
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
    // write whole lines straight from registers) and one off it. (Under
    // Miri serial only: the worker pool's crossbeam-epoch fails Stacked
    // Borrows.)
    let modes: &[bool] = if cfg!(miri) { &[false] } else { &[false, true] };
    let offsets: &[usize] = if cfg!(miri) { &[1] } else { &[0, 1] };
    for &parallel in modes {
        for &off in offsets {
            let mut buf = vec![0u32; n + 17];
            let at = buf.as_ptr().align_offset(64) + off;
            let got = &mut buf[at..at + n];
            // SAFETY: both buffers hold every element the axes reach.
            unsafe { copy(4, &normalise(axes.clone()), got.as_mut_ptr() as *mut u8, src.as_ptr() as *const u8, parallel) };
            assert!(*got == *want, "dims {dims:?} perm {p:?} parallel {parallel} offset {off}");
        }
    }
}

/// The normalised axes of a copy of row-major `dims` permuted by `p`
/// into a row-major destination.
fn permutation_axes(dims: &[usize], p: &[usize]) -> Vec<Axis> {
    let out: Vec<usize> = p.iter().map(|&a| dims[a]).collect();
    let (ost, sst) = (row_major(&out), row_major(dims));
    normalise((0..dims.len()).map(|k| Axis { n: out[k], ds: ost[k] as isize, ss: sst[p[k]] as isize }).collect())
}

/// The normalised axes of NCHW -> NHWC of `[2, c, hw]` (two images of
/// `c` channel planes of `hw` pixels).
fn nchw_to_nhwc_axes(c: usize, hw: usize) -> Vec<Axis> {
    normalise(vec![Axis { n: 2, ds: (c * hw) as isize, ss: (c * hw) as isize }, Axis { n: hw, ds: c as isize, ss: 1 }, Axis { n: c, ds: 1, ss: hw as isize }])
}

/// The far source rows per tile (`ej`) of the transpose tile `nest`
/// plans for `axes` of `es`-byte elements under `tuning`.
fn tile_rows(axes: &[Axis], es: usize, tuning: Tuning) -> usize {
    match super::nest::nest(axes, es, tuning).kind {
        super::nest::Body::Tile { ej, .. } => ej,
        other => panic!("not a tile: {other:?}"),
    }
}

/// The plan `nest` makes for `src` (row-major `dims`, `es`-byte
/// elements) permuted by `p`, with the tuning of [`each_tuning`].
fn plan_of(dims: &[usize], p: &[usize], es: usize) -> super::nest::Body {
    super::nest::nest(&permutation_axes(dims, p), es, TUNING.with(Cell::get)).kind
}

/// One permutation per kind of plan the engine makes — whole-row tiles
/// walked block by block, tiles that run along one block of far source
/// rows first, rows split and walked along, tiles of runs, short-channel
/// transposes — each at the smallest size that still gets that plan, so
/// that Miri (`make miri`) can interpret every kernel's pointer
/// arithmetic (the SSE2 and scalar ones there: Miri has no AVX) in
/// seconds. Each case checks its plan first, so the test fails if a
/// change of thresholds moves a case off the kind it stands for.
#[test]
fn one_permutation_per_plan_matches_the_naive_copy() {
    use super::nest::{Body, Order};
    each_tuning(|| {
        let cases: [(&[usize], &[usize], &str); 6] = [
            (&[3, 256, 40], &[0, 2, 1], "blocks"),
            (&[1, 70, 1100], &[0, 2, 1], "j first"),
            (&[1, 17, 3, 1, 483], &[4, 0, 3, 2, 1], "along"),
            (&[7, 300, 16], &[1, 0, 2], "runs"),
            (&[2, 3, 37, 29], &[0, 2, 3, 1], "tile"),
            (&[2, 37, 29, 3], &[0, 3, 1, 2], "tile"),
        ];
        for (dims, p, kind) in cases {
            let plan = plan_of(dims, p, 4);
            let fits = matches!(
                (kind, &plan),
                ("blocks", Body::Tile { order: Order::Blocks, .. })
                    | ("j first", Body::Tile { order: Order::JFirst, .. })
                    | ("along", Body::Tile { order: Order::Along, .. })
                    | ("runs", Body::Runs { .. })
                    | ("tile", Body::Tile { .. })
            );
            assert!(fits, "{dims:?} by {p:?} is meant to be planned as {kind}: {plan:?} ({:?})", TUNING.with(Cell::get));
            check_permutation(dims, p);
        }
    });
}

#[test]
fn packed_batched_and_interleaved_tiles_match_the_naive_copy() {
    each_tuning(packed_batched_and_interleaved);
}

fn packed_batched_and_interleaved() {
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
    // Long source rows far apart, split both ways (NCHW -> NHWC at C =
    // 70: channel blocks of 32, 32 and 6; rows of 1100 in blocks of 256):
    // the tiles walk along one block of source rows first.
    check_permutation(&[2, 70, 1100], &[0, 2, 1]);
    // Whole rows of more than 512 bytes that would make a tile of more
    // than 32 KiB: split into pieces of 128 (and an edge), walked along
    // (far rows as in `permute [4, 2, 0, 3, 1]`, near ones as in
    // `permute [1, 3, 5, 0, 2, 4]`).
    check_permutation(&[2, 32, 3, 5, 300], &[4, 2, 0, 3, 1]);
    check_permutation(&[2, 20, 3, 5, 500], &[4, 2, 0, 3, 1]);
    check_permutation(&[2, 3, 4, 5, 32, 300], &[1, 3, 5, 0, 2, 4]);
    // A batch that is not a multiple of its step count (as in `permute
    // [5, 0, 3, 1, 4, 2]`: 16 far rows of 600, 7 steps inside, batched
    // by 4 with `Tuning::LongReads`).
    check_permutation(&[1, 2, 16, 3, 7, 600], &[5, 0, 3, 1, 4, 2]);
    // NCHW <-> NHWC with C = 1..9 (interleaves for 2..8).
    for c in 1..=9 {
        check_permutation(&[2, c, 37, 29], &[0, 2, 3, 1]);
        check_permutation(&[2, 37, 29, c], &[0, 3, 1, 2]);
    }
    // Destinations of 32 MiB and more stream their stores.
    check_permutation(&[3, 2_900_000], &[1, 0]);
    check_permutation(&[2_900_000, 3], &[1, 0]);
    check_permutation(&[64, 8, 16_400], &[2, 1, 0]);
    // NCHW -> NHWC with C = 24 and 56 (far rows that spread over the
    // L2's sets: streamed through `simd/groups.rs`), pixel counts that
    // leave remainders.
    check_permutation(&[1, 24, 512, 701], &[0, 2, 3, 1]);
    check_permutation(&[1, 56, 300, 513], &[0, 2, 3, 1]);
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
    proptest!(config, |(n in 0usize..400, gap in 0usize..20, at in 0usize..16, stream: bool, bursts: bool, pick in 0usize..4)| {
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
                2 => simd::deinterleave_regs::<2>(n, d, rs, s, stream, bursts),
                3 => simd::deinterleave_regs::<3>(n, d, rs, s, stream, bursts),
                4 => simd::deinterleave_regs::<4>(n, d, rs, s, stream, bursts),
                _ => simd::deinterleave_regs::<8>(n, d, rs, s, stream, bursts),
            }
        }
        simd::fence();
        for (i, &v) in back.iter().enumerate() {
            // rs is 0 only for n = 0 and no gap (no row element then).
            let k = i.wrapping_sub(at);
            let (b, a) = k.checked_div(rs).zip(k.checked_rem(rs)).unwrap_or((c, 0));
            let want = if i >= at && b < c && a < n { rows[b * rs + a] } else { 0 };
            prop_assert_eq!(v, want, "deinterleave c {} n {} at {} index {}", c, n, at, i);
        }
    });
}

#[test]
fn tiles_of_runs_up_to_the_short_run_limit_match_the_naive_copy() {
    each_tuning(tiles_of_runs);
}

fn tiles_of_runs() {
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
    // Runs of 64 and 32 bytes: edges in both of `Tuning::LongReads`'
    // 256 x 4 runs (300 and 7), and the square tiles of short runs.
    check_permutation(&[7, 300, 16], &[1, 0, 2]);
    check_permutation(&[7, 300, 8], &[1, 0, 2]);
}

#[test]
fn negative_strides_on_either_side_match_the_naive_copy() {
    each_tuning(negative_strides);
}

fn negative_strides() {
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
            // Serial only under Miri (see `check_permutation`).
            let modes: &[bool] = if cfg!(miri) { &[false] } else { &[false, true] };
            for &parallel in modes {
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
    each_tuning(|| {
        let axes = vec![Axis { n: 0, ds: 3, ss: 1 }, Axis { n: 3, ds: 1, ss: 4 }];
        let mut dst = [7u32; 4];
        for parallel in [false, true] {
            // SAFETY: no element is reached.
            unsafe { copy(4, &normalise(axes.clone()), dst.as_mut_ptr() as *mut u8, [1u32; 4].as_ptr() as *const u8, parallel) };
        }
        assert_eq!(dst, [7; 4]);
    });
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

#[test]
fn far_rows_split_both_ways_walk_along_the_source_rows_first() {
    use super::nest::{nest, Body, Order};
    // NCHW -> NHWC of [2, 70, 1100] f32 (normalised loops: N, HW, C).
    let axes = normalise(vec![Axis { n: 2, ds: 77_000, ss: 77_000 }, Axis { n: 70, ds: 1, ss: 1100 }, Axis { n: 1100, ds: 70, ss: 1 }]);
    let n = nest(&axes, 4, Tuning::Square);
    let Body::Tile { order, blocks, ej, ei, .. } = n.kind else { panic!("not a tile: {:?}", n.kind) };
    assert_eq!(order, Order::JFirst, "{n:?}");
    // The block loop of the destination's rows (channels) is the outer one.
    assert_eq!((n.loops[blocks].n, n.loops[blocks + 1].n), (70usize.div_ceil(ej), 1100usize.div_ceil(ei)));
    // Source rows near each other (NHWC -> NCHW: 70 elements apart) keep
    // the usual order.
    let axes = normalise(vec![Axis { n: 2, ds: 77_000, ss: 77_000 }, Axis { n: 70, ds: 1100, ss: 1 }, Axis { n: 1100, ds: 1, ss: 70 }]);
    assert!(matches!(nest(&axes, 4, Tuning::Square).kind, Body::Tile { order: Order::Blocks, .. }));
}

/// Far channel rows of NCHW -> NHWC that a split into 32 would leave in
/// pieces of partial lines (C = 33..63 f32, a row not whole 64-byte
/// lines) go into one tile whole; rows of whole lines (C = 48), other
/// element sizes and near rows keep the split of `STREAM_ROWS`.
#[test]
fn far_rows_of_partial_lines_stay_whole_in_a_tile() {
    let ej_of = |c: usize, hw: usize, es: usize| tile_rows(&nchw_to_nhwc_axes(c, hw), es, Tuning::Square);
    for c in [33usize, 36, 40, 56, 63] {
        assert_eq!(ej_of(c, 4096, 4), c, "C = {c}");
    }
    for c in [48usize, 64] {
        assert_eq!(ej_of(c, 4096, 4), 32, "C = {c}");
    }
    // Wider than a tile's rows (64): split as before.
    assert_eq!(ej_of(70, 4096, 4), 32);
    // Eight-byte elements keep the split (measured only for f32).
    assert_eq!(ej_of(40, 4096, 8), 32);
    // Near rows (less than a page apart) were never capped.
    assert_eq!(ej_of(40, 256, 4), 40);
}

/// NCHW -> NHWC with far channel rows, C = 17..=80 (whole and split
/// tiles, partial and whole lines), against [`naive`] for every tuning.
#[test]
fn far_channel_rows_of_any_count_match_the_naive_copy() {
    use proptest::prelude::*;
    let config = ProptestConfig { cases: 24, rng_seed: proptest::test_runner::RngSeed::Fixed(76), ..ProptestConfig::default() };
    each_tuning(|| proptest!(config.clone(), |(n in 1usize..3, c in 17usize..81, h in 1usize..5, w in 1024usize..1300)| {
        check_permutation(&[n, c, h, w], &[0, 2, 3, 1]);
    }));
}

#[test]
fn whole_rows_too_large_for_one_tile_are_split_and_walked_along() {
    use super::nest::{nest, Body, Order};
    // `permute [4, 2, 0, 3, 1]` of [16, 32, 33, 31, 512] f32: 32 source
    // rows of 2 KiB, about 2 MiB apart, into rows of 32.
    let axes_of = |dims: [usize; 5]| permutation_axes(&dims, &[4, 2, 0, 3, 1]);
    // The bench's 1 GiB row, [16, 32, 32, 32, 512]: its rows, exactly 2
    // MiB apart, share one L2 set, so a tile takes 16, whole.
    let n = nest(&axes_of([16, 32, 32, 32, 512]), 4, Tuning::Square);
    assert!(matches!(n.kind, Body::Tile { order: Order::Blocks, ei: 512, ej: 16, .. }), "{n:?}");
    let axes = axes_of([16, 32, 33, 31, 512]);
    let n = nest(&axes, 4, Tuning::Square);
    let Body::Tile { order, blocks, ei, ej, ec, i, .. } = n.kind else { panic!("not a tile: {:?}", n.kind) };
    assert_eq!((order, ei, ej, ec), (Order::Along, 128, 32, 1), "{n:?}");
    // The row pieces' block loop is the innermost, the destination rows'
    // block loop first after the outer loops.
    assert_eq!(n.loops.last().map(|a| (a.n, a.ss)), Some((4, 128)), "{n:?}");
    assert_eq!(n.loops[blocks].n, 1, "{n:?}");
    assert_eq!(i.n, 512);
    // LongReads walks along the same rows, whole: one piece per row.
    let n = nest(&axes, 4, Tuning::LongReads);
    let Body::Tile { order, blocks, ei, ej, ec, .. } = n.kind else { panic!("not a tile: {:?}", n.kind) };
    assert_eq!((order, ei, ej, ec), (Order::Along, 512, 32, 1), "{n:?}");
    assert_eq!(n.loops.last().map(|a| (a.n, a.ss)), Some((1, 512)), "{n:?}");
    assert_eq!(n.loops[blocks].n, 1, "{n:?}");
    // Rows that fit one tile whole (16 of 2 KiB: 32 KiB) stay whole.
    let axes = normalise(vec![Axis { n: 512, ds: 16, ss: 1 }, Axis { n: 16, ds: 1, ss: 1 << 20 }]);
    assert!(matches!(nest(&axes, 4, Tuning::Square).kind, Body::Tile { order: Order::Blocks, ei: 512, .. }));
}

/// Transposes whose whole source rows (129..512 f32, far apart or near)
/// would make a tile of more than 32 KiB, split into pieces walked along
/// the rows (`Order::Along`), with edges in both the pieces and the
/// destination's rows, and outer and inside loops, against [`naive`];
/// smaller tiles of the same ranges keep the usual order.
#[test]
fn split_rows_walked_along_match_the_naive_copy() {
    use proptest::prelude::*;
    let config = ProptestConfig { cases: 40, rng_seed: proptest::test_runner::RngSeed::Fixed(48), ..ProptestConfig::default() };
    each_tuning(|| proptest!(config.clone(), |(outer in 1usize..3, j in 9usize..33, mid in 1usize..5, row in 129usize..513, far: bool)| {
        // [outer, j, mid, row] -> [row, outer, mid, j]: the destination's
        // rows (j) are `mid * row` source elements apart; with a third
        // axis of 3 between j and mid, `3 * mid * row` (a page and more
        // apart for most draws).
        if far {
            check_permutation(&[outer, j, 3, mid, row], &[4, 0, 3, 2, 1]);
        } else {
            check_permutation(&[outer, j, mid, row], &[3, 0, 2, 1]);
        }
    }));
}

/// Rows walked along (`Order::Along`) of 1-, 2-, 4- and 8-byte elements:
/// `[outer, j, 3, mid, row] -> [row, outer, mid, 3, j]` with source rows
/// of up to 2 KiB that make a tile of more than 32 KiB (`j` rows of more
/// than `32 KiB / j` bytes each: pieces of 512 bytes with `Square`, whole
/// rows with `LongReads`), against [`naive`] on element indices.
#[test]
fn rows_walked_along_of_every_element_size_match_the_naive_copy() {
    use super::nest::{nest, Body, Order};
    use proptest::prelude::*;
    let config = ProptestConfig { cases: 32, rng_seed: proptest::test_runner::RngSeed::Fixed(51), ..ProptestConfig::default() };
    each_tuning(|| proptest!(config.clone(), |(outer in 1usize..3, j in 17usize..33, mid in 1usize..4, t in 0usize..1001, pick in 0usize..4, parallel: bool)| {
        let es = [1, 2, 4, 8][pick];
        // Row bytes from just over 32 KiB / j up to 2 KiB.
        let lo = (32 << 10) / j + 1;
        let row = (lo + t * (2048 - lo) / 1000).div_ceil(es);
        let dims = [outer, j, 3, mid, row];
        let p = [4usize, 0, 3, 2, 1];
        let out: Vec<usize> = p.iter().map(|&a| dims[a]).collect();
        let (ost, sst) = (row_major(&out), row_major(&dims));
        let ss: Vec<usize> = p.iter().map(|&a| sst[a]).collect();
        let total: usize = dims.iter().product();
        let axes = normalise((0..5).map(|k| Axis { n: out[k], ds: ost[k] as isize, ss: ss[k] as isize }).collect());
        let plan = nest(&axes, es, TUNING.with(Cell::get)).kind;
        prop_assert!(matches!(plan, Body::Tile { order: Order::Along, .. }), "not walked along: {plan:?}");
        let mut idx = vec![0u32; total];
        let ids: Vec<u32> = (0..total as u32).collect();
        naive(&out, &ost, &ss, &ids, &mut idx);
        let src: Vec<u8> = (0..total * es).map(|v| (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes()[7]).collect();
        let (sbuf, want) = (in_words(&src), gathered(&idx, &src, es));
        let mut got = vec![0u64; (total * es).div_ceil(8)];
        // SAFETY: both buffers hold every element the axes reach.
        unsafe { copy(es, &axes, got.as_mut_ptr() as *mut u8, sbuf.as_ptr() as *const u8, parallel) };
        let got_bytes: Vec<u8> = got.iter().flat_map(|x| x.to_le_bytes()).take(total * es).collect();
        prop_assert!(got_bytes == want, "dims {dims:?} es {es} plan {plan:?}");
    }));
}

/// NCHW -> NHWC of random sizes around the tile sizes (17..80 channels,
/// planes of 200..2600 elements, gaps between the source's planes and
/// images), 1-, 2-, 4- and 8-byte elements, serial and parallel, against
/// [`naive`]: tiles of 32 channels, and for planes a page and more apart
/// and longer than a tile, tiles that walk along one block of planes
/// first (`Body::Tile::jfirst`).
#[test]
fn many_channel_transposes_of_strided_sources_match_the_naive_copy() {
    use proptest::prelude::*;
    let config = ProptestConfig { cases: 48, rng_seed: proptest::test_runner::RngSeed::Fixed(47), ..ProptestConfig::default() };
    each_tuning(|| proptest!(config.clone(), |(n in 1usize..3, c in 17usize..81, hw in 200usize..2600, gap in 0usize..40, pick in 0usize..4, parallel: bool)| {
        let es = [1, 2, 4, 8][pick];
        // Source strides in elements: planes `hw + gap` apart, images
        // `c * (hw + gap) + gap` apart; destination NHWC, dense.
        let (sc, sn) = (hw + gap, c * (hw + gap) + gap);
        let dims = [n, hw, c];
        let (ds, ss) = ([hw * c, c, 1], [sn, 1, sc]);
        let len = n * sn;
        let src: Vec<u64> = (0..len as u64).map(|v| v.wrapping_mul(0x9E37_79B9_7F4A_7C15)).collect();
        let total = n * hw * c;
        // The oracle on element indices, then the bytes of each element.
        let mut idx = vec![0u32; total];
        let ids: Vec<u32> = (0..len as u32).collect();
        naive(&dims, &ds, &ss, &ids, &mut idx);
        let bytes = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()[..es].to_vec()).collect() };
        let sb = bytes(&src);
        // The source's bytes in u64 storage, aligned for every element size.
        let (sbuf, want) = (in_words(&sb), gathered(&idx, &sb, es));
        let axes: Vec<Axis> = (0..3).map(|k| Axis { n: dims[k], ds: ds[k] as isize, ss: ss[k] as isize }).collect();
        let mut got = vec![0u64; (total * es).div_ceil(8)];
        // SAFETY: the source holds every element the axes reach (the
        // last is below n * sn), the destination total elements.
        unsafe { copy(es, &normalise(axes), got.as_mut_ptr() as *mut u8, sbuf.as_ptr() as *const u8, parallel) };
        let got_bytes: Vec<u8> = got.iter().flat_map(|x| x.to_le_bytes()).take(total * es).collect();
        prop_assert!(got_bytes == want, "n {n} c {c} hw {hw} gap {gap} es {es}");
    }));
}

#[test]
fn long_reads_take_few_long_source_streams_and_larger_batches() {
    use super::nest::{nest, Body};
    // `transposed (0,2)` of [64, 128, 256, 16] f32 (runs of 64 bytes):
    // square tiles of 45 x 45 runs; LongReads 256 runs (16 KiB) of each
    // of 4 source streams. Runs of 32 bytes keep the square tiles.
    let axes = normalise(vec![
        Axis { n: 256, ds: 128 * 64 * 16, ss: 16 },
        Axis { n: 128, ds: 64 * 16, ss: 256 * 16 },
        Axis { n: 64, ds: 16, ss: 128 * 256 * 16 },
        Axis { n: 16, ds: 1, ss: 1 },
    ]);
    let runs = |t| match nest(&axes, 4, t).kind {
        Body::Runs { ei, ej, .. } => (ei, ej),
        k => panic!("not a tile of runs: {k:?}"),
    };
    assert_eq!((runs(Tuning::Square), runs(Tuning::LongReads)), ((45, 45), (256, 4)));
    assert_eq!(Tuning::LongReads.run_tile(32), Tuning::Square.run_tile(32));
    // Zen 4's tuning takes the long reads' tiles of runs (from 64 bytes)
    // and the square tuning's every other shape.
    assert_eq!(runs(Tuning::SquareLongRuns), (256, 4));
    assert_eq!(Tuning::SquareLongRuns.run_tile(32), Tuning::Square.run_tile(32));
    // `permute [5, 0, 3, 1, 4, 2]` of [8, 8, 16, 16, 32, 512] f32: tiles of
    // 16 far rows of 2 KiB, batched over the inside axis of 32 by 1
    // (Square) or 4 (LongReads).
    let axes = permutation_axes(&[8, 8, 16, 16, 32, 512], &[5, 0, 3, 1, 4, 2]);
    let batch = |t| match nest(&axes, 4, t).kind {
        Body::Tile { ei, ej, ec, c, .. } => (ei, ej, ec, c.n),
        k => panic!("not a tile: {k:?}"),
    };
    assert_eq!((batch(Tuning::Square), batch(Tuning::LongReads)), ((512, 16, 1, 32), (512, 16, 4, 32)));
    assert_eq!(format!("{:?}", nest(&axes, 4, Tuning::SquareLongRuns)), format!("{:?}", nest(&axes, 4, Tuning::Square)));
    assert!(!Tuning::SquareLongRuns.next_tile_into_l1());
}

#[test]
fn row_bursts_plan_as_long_reads_and_alone_write_batched_rows_whole() {
    use super::nest::nest;
    // RowBursts changes where a batched packed tile's bytes go first, not
    // the plan: every nest is LongReads' (the tiles' values are checked
    // against the oracle under each tuning above), but where far rows
    // crowd an L2 set (`Tuning::set_rows`): `transposed (0,3)` of [64,
    // 128, 256, 16] (whole rows of 64 bytes, 2 MiB apart) reads 16 rows
    // a tile with RowBursts, 32 with LongReads.
    let crowded = permutation_axes(&[64, 128, 256, 16], &[3, 1, 2, 0]);
    assert_eq!((tile_rows(&crowded, 4, Tuning::RowBursts), tile_rows(&crowded, 4, Tuning::LongReads)), (16, 32));
    let cases: [(&[usize], &[usize]); 4] = [
        (&[64, 128, 255, 16], &[3, 1, 2, 0]),
        (&[8, 8, 16, 16, 32, 512], &[5, 0, 3, 1, 4, 2]),
        (&[16, 32, 32, 32, 63], &[4, 2, 0, 3, 1]),
        (&[16, 256, 64, 64], &[0, 2, 3, 1]),
    ];
    for (dims, p) in cases {
        let axes = permutation_axes(dims, p);
        let plan = |t| format!("{:?}", nest(&axes, 4, t));
        assert_eq!(plan(Tuning::RowBursts), plan(Tuning::LongReads), "{dims:?} {p:?}");
    }
    let bursts: Vec<bool> = Tuning::ALL.iter().map(|t| t.batched_rows_in_bursts()).collect();
    assert_eq!(bursts, [false, false, true, false]);
    let bursts: Vec<bool> = Tuning::ALL.iter().map(|t| t.rows_in_bursts()).collect();
    assert_eq!(bursts, [false, false, true, false]);
}

/// One transpose tile through `simd::tile_f32` with a scratch of
/// `scratch` elements' capacity: `n` = (destination row length j, source
/// row length i, batch steps c), destination strides `d` = (row, step),
/// source strides `s` = (row, step), the destination `at` elements past
/// a 64-byte boundary. Returns the destination buffer and what indexing
/// says it should hold (every element the tile names, zeros elsewhere).
#[cfg(target_arch = "x86_64")]
#[allow(clippy::too_many_arguments)]
fn one_tile(n: [usize; 3], d: [usize; 2], s: [usize; 2], at: usize, stream: bool, tuning: Tuning, scratch: usize) -> (Vec<u32>, Vec<u32>) {
    let ([jn, i_n, cn], [di, cd], [sj, cs]) = (n, d, s);
    let src: Vec<u32> = (0..(jn - 1) * sj + (cn - 1) * cs + i_n).map(|v| (v as u32).wrapping_mul(2_654_435_761) | 1).collect();
    let span = (i_n - 1) * di + (cn - 1) * cd + jn;
    let mut buf = vec![0u32; span + 32];
    let base = buf.as_ptr().align_offset(64) + at;
    let (j, i, c) = (Axis { n: jn, ds: 1, ss: sj as isize }, Axis { n: i_n, ds: di as isize, ss: 1 }, Axis { n: cn, ds: cd as isize, ss: cs as isize });
    let mut scratch: Vec<u32> = Vec::with_capacity(scratch);
    // SAFETY: every element the tile names is inside `src` and, from
    // `base`, inside `buf` (the spans above); the callers checked AVX.
    unsafe {
        simd::tile_f32(j, i, c, buf.as_mut_ptr().add(base), src.as_ptr(), src.as_ptr() as usize, stream, tuning, super::nest::Crowding::of(jn, sj * 4), &mut scratch);
    }
    simd::fence();
    let mut want = vec![0u32; buf.len()];
    for a in 0..i_n {
        for k in 0..cn {
            for b in 0..jn {
                want[base + a * di + k * cd + b] = src[b * sj + k * cs + a];
            }
        }
    }
    (buf, want)
}

/// One packed transpose tile (`simd::tile_f32`: source rows at least a
/// page apart) of random size, with a batch of random steps and gaps on
/// both sides, destination strides whole 64-byte lines or not, any
/// alignment, streamed or not, under every tuning (so the direct stores
/// and the bursts through the scratch both run), against indexing: every
/// element it names is written, and nothing else.
#[cfg(target_arch = "x86_64")]
#[test]
fn packed_tiles_of_random_shapes_match_indexing() {
    use proptest::prelude::*;
    if !simd::has_avx() {
        return;
    }
    let config = ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(72), ..ProptestConfig::default() };
    proptest!(config, |(jn in 16usize..80, i_n in 8usize..160, cn in 1usize..6, sgap in 0usize..40, dgap in 0usize..40,
                        whole: bool, lined: bool, far in 1024usize..1300, at in 0usize..17, stream: bool, pick in 0usize..3)| {
        let tuning = Tuning::ALL[pick];
        // Often a tile of whole 8 x 16 blocks on a 64-byte boundary: the
        // shape whose streamed lines go out straight from the registers.
        let (jn, i_n, at) = if whole { (jn / 16 * 16, i_n / 8 * 8, 0) } else { (jn, i_n, at) };
        // Destination: row a, step k, element b at a*di + k*cd + b;
        // source: element b (a far row), step k, element a at
        // b*sj + k*cs + a.
        let round = |n: usize| if lined { n.next_multiple_of(16) } else { n };
        let cd = round(jn + dgap % 3);
        let di = round(cn * cd + dgap);
        let cs = i_n + sgap;
        let sj = far.max(cn * cs);
        let (buf, want) = one_tile([jn, i_n, cn], [di, cd], [sj, cs], at, stream, tuning, simd::packed_scratch(jn, i_n, cn, sj));
        prop_assert!(buf == want, "j {} i {} c {} di {} cd {} sj {} cs {} at {} stream {} {:?}", jn, i_n, cn, di, cd, sj, cs, at, stream, tuning);
    });
}

/// One unpacked transpose tile (`simd::tile_f32` without a scratch: no
/// source rows are packed) of random size, with a batch of random steps
/// and gaps on both sides, destination strides whole 64-byte lines or
/// not, any alignment, streamed or not, under every tuning (so the
/// direct stores, the row bursts of `Tuning::rows_in_bursts` and, for
/// few rows, the interleaves all run), against indexing: every element
/// it names is written, and nothing else.
#[cfg(target_arch = "x86_64")]
#[test]
fn unpacked_tiles_of_random_shapes_match_indexing() {
    use proptest::prelude::*;
    if !simd::has_avx() {
        return;
    }
    let config = ProptestConfig { cases: 400, rng_seed: proptest::test_runner::RngSeed::Fixed(73), ..ProptestConfig::default() };
    proptest!(config, |(jn in 1usize..300, i_n in 1usize..40, cn in 1usize..4, sgap in 0usize..40, dgap in 0usize..40,
                        whole: bool, lined: bool, at in 0usize..17, stream: bool, pick in 0usize..3)| {
        let tuning = Tuning::ALL[pick];
        // Often whole 8 x 16 blocks on a 64-byte boundary with rows of
        // whole lines: the shape the row bursts take.
        let (jn, i_n, at) = if whole { ((jn / 16).max(1) * 16, (i_n / 8).max(1) * 8, 0) } else { (jn, i_n, at) };
        let round = |n: usize| if lined { n.next_multiple_of(16) } else { n };
        let cd = round(jn + dgap % 3);
        let di = round(cn * cd + dgap);
        let cs = i_n + sgap;
        let sj = cn * cs + sgap % 5;
        // With no scratch the tile is never packed.
        let (buf, want) = one_tile([jn, i_n, cn], [di, cd], [sj, cs], at, stream, tuning, 0);
        prop_assert!(buf == want, "j {} i {} c {} di {} cd {} sj {} cs {} at {} stream {} {:?}", jn, i_n, cn, di, cd, sj, cs, at, stream, tuning);
    });
}

/// One tile of 2 to 8 groups of eight destination columns from far
/// source rows (`simd::tile_f32`, which streams such a tile through
/// `groups.rs` when its rows spread over the L2's sets and its
/// destination is 32-byte aligned), of random column counts (a remainder
/// past the last eight), destination strides of whole groups or not,
/// column counts that are not whole groups, any alignment, streamed or
/// not, under every tuning, against indexing: every element it names is
/// written, and nothing else. Most cases take the grouped form, and some
/// of those hint their rows into L2 only (rows 4 or 6 KiB apart, which
/// crowd an L1 set, under `Tuning::LongReads`; both counted).
#[cfg(target_arch = "x86_64")]
#[test]
fn grouped_tiles_of_random_shapes_match_indexing() {
    use proptest::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    if !simd::has_avx() {
        return;
    }
    let (grouped, into_l2) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let config = ProptestConfig { cases: 400, rng_seed: proptest::test_runner::RngSeed::Fixed(77), ..ProptestConfig::default() };
    proptest!(config, |(g in 1usize..10, odd in 0usize..12, i_n in 1usize..120, wide in 0usize..5, skew in 0usize..4, far in 1024usize..1300,
                        crowd in 0usize..4, aligned in 0usize..4, at in 0usize..17, stream: bool, pick in 0usize..3)| {
        let tuning = Tuning::ALL[pick];
        // Mostly whole groups (8 and 72 columns are outside the form).
        let jn = g * 8 + if odd < 9 { 0 } else { odd - 8 };
        let di = jn + wide * 8 + usize::from(skew == 0);
        let at = if aligned > 0 { at / 8 * 8 } else { at };
        // Rows 4 KiB apart (all in one L1 set) or 6 KiB (two), else anywhere.
        let sj = [1024, 1536].get(crowd).copied().unwrap_or(far);
        if stream && i_n >= 8 {
            let mut probe = vec![0u32; 32];
            let base = probe.as_mut_ptr().align_offset(64) + at;
            let crowding = super::nest::Crowding::of(jn, sj * 4);
            // SAFETY: base + 0 is inside `probe` (at most 15 + 16 < 32).
            if simd::groups_take(jn, i_n, di, sj, unsafe { probe.as_mut_ptr().add(base) }, crowding.l2) {
                grouped.fetch_add(1, Ordering::Relaxed);
                if tuning.groups_hint_into_l2(jn, crowding.l1) {
                    into_l2.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        let (buf, want) = one_tile([jn, i_n, 1], [di, 0], [sj, 0], at, stream, tuning, simd::packed_scratch(jn, i_n, 1, sj));
        prop_assert!(buf == want, "j {} i {} di {} sj {} at {} stream {} {:?}", jn, i_n, di, sj, at, stream, tuning);
    });
    assert!(grouped.load(Ordering::Relaxed) >= 40, "only {} cases took the grouped form", grouped.load(Ordering::Relaxed));
    assert!(into_l2.load(Ordering::Relaxed) >= 5, "only {} grouped cases hinted into L2", into_l2.load(Ordering::Relaxed));
}

/// `count` (one of `nest`'s set counts, for ways of `way` bytes) against
/// the sets worked out one row at a time and compared with every other
/// row's, over 500 cases (seed `seed`) of up to 80 rows: random strides
/// from a page to 64 MiB, and powers of two from 2^`min_pow` to 2^25.
fn set_count_matches_one_by_one(count: fn(usize, usize) -> usize, way: usize, min_pow: u32, seed: u64) {
    use proptest::prelude::*;
    let slow = |rows: usize, stride: usize| {
        let sets: Vec<usize> = (0..rows).map(|k| (k * stride) % way / 64).collect();
        sets.iter().map(|s| sets.iter().filter(|t| *t == s).count()).max().unwrap_or(0)
    };
    let config = ProptestConfig { cases: 500, rng_seed: proptest::test_runner::RngSeed::Fixed(seed), ..ProptestConfig::default() };
    proptest!(config, |(rows in 0usize..80, stride in 4096usize..(64 << 20), pow in min_pow..26, pick: bool)| {
        let stride = if pick { 1 << pow } else { stride };
        prop_assert_eq!(count(rows, stride), slow(rows, stride));
    });
}

/// `nest::rows_per_set` against the sets counted one row at a time, on
/// the strides that matter (powers of two, the channel planes of the
/// bench's shapes) and random ones, and the planner's tiles of 16 far
/// rows where 32 would crowd a set.
#[test]
fn rows_sharing_an_l2_set_are_counted() {
    use super::nest::rows_per_set;
    // NCHW -> NHWC of [16, 24, 512, 1365] and [16, 40, 512, 819] f32:
    // planes 2.7 and 1.6 MiB apart, each row in a set of its own.
    assert_eq!(rows_per_set(24, 512 * 1365 * 4), 1);
    assert_eq!(rows_per_set(40, 512 * 819 * 4), 1);
    // Planes of 512 x 512 and 256 x 256 f32: every row in one set; 64 KiB
    // apart: two sets; 32 KiB: four.
    assert_eq!(rows_per_set(64, 512 * 512 * 4), 64);
    assert_eq!(rows_per_set(32, 256 * 256 * 4), 32);
    assert_eq!(rows_per_set(32, 64 << 10), 16);
    assert_eq!(rows_per_set(32, 32 << 10), 8);
    assert_eq!(rows_per_set(0, 4096), 0);
    // A stride 4 bytes past a way: 16 rows to a line's set.
    assert_eq!(rows_per_set(32, (128 << 10) + 4), 16);
    set_count_matches_one_by_one(rows_per_set, 128 << 10, 12, 77);
    // The planner: 64 channels of 512 x 512 f32 in tiles of 16; of 512 x
    // 500 (no crowding) in tiles of 32; 24 channels whole either way.
    let square_rows = |c: usize, hw: usize| tile_rows(&nchw_to_nhwc_axes(c, hw), 4, Tuning::Square);
    assert_eq!(square_rows(64, 512 * 512), 16);
    assert_eq!(square_rows(64, 512 * 500), 32);
    assert_eq!(square_rows(24, 512 * 512), 24);
    assert_eq!(square_rows(24, 512 * 500), 24);
}

/// `nest::rows_per_l1_set` against the sets counted one row at a time
/// (on the bench's channel planes, powers of two and random strides),
/// and which grouped tiles hint their rows into L2 only, by tuning
/// (`Tuning::groups_hint_into_l2`): on Zen 5 (LongReads) tiles of 24 or
/// more rows of which more than 12 share an L1 set; no other tuning.
#[test]
fn rows_crowding_an_l1_set_are_hinted_into_l2_on_zen_5() {
    use super::nest::rows_per_l1_set;
    // NCHW -> NHWC planes of 512 rows of odd width, an odd multiple of 2
    // KiB apart: half the channels in each of two sets.
    assert_eq!(rows_per_l1_set(24, 512 * 1365 * 4), 12);
    assert_eq!(rows_per_l1_set(40, 512 * 819 * 4), 20);
    assert_eq!(rows_per_l1_set(56, 512 * 585 * 4), 28);
    // 16 channels of 512 x 2048: every row in one set; 511 x 819 and
    // 500 x 1400: spread.
    assert_eq!(rows_per_l1_set(16, 512 * 2048 * 4), 16);
    assert_eq!(rows_per_l1_set(40, 511 * 819 * 4), 4);
    assert!(rows_per_l1_set(24, 500 * 1400 * 4) < 12);
    assert_eq!(rows_per_l1_set(0, 4096), 0);
    set_count_matches_one_by_one(rows_per_l1_set, 4 << 10, 11, 90);
    // (channels, plane) -> whether LongReads hints into L2; every other
    // tuning never does.
    let cases = [((24, 512 * 1365), false), ((40, 512 * 819), true), ((56, 512 * 585), true), ((48, 512 * 682), true),
                 ((16, 512 * 2048), false), ((40, 511 * 819), false), ((24, 500 * 1400), false), ((64, 500 * 500), false)];
    for ((c, plane), want) in cases {
        let per_set = rows_per_l1_set(c, plane * 4);
        let by_tuning: Vec<bool> = Tuning::ALL.iter().map(|t| t.groups_hint_into_l2(c, per_set)).collect();
        assert_eq!(by_tuning, [false, want, false, false], "C = {c}, plane {plane}");
    }
}

/// Far rows that crowd an L2 set, by tuning (`Tuning::set_rows`): 16 to
/// a tile everywhere but on Zen 5 (LongReads), which takes 16 only when
/// there are at most 32 of them or they are split across tiles with a
/// count not a multiple of 128; and the
/// copies of both kinds of tile against [`naive`] under every tuning.
#[test]
fn far_rows_crowding_a_set_come_16_to_a_tile_by_tuning() {
    // NCHW -> NHWC of [2, c, hw] f32 (source rows of hw, split), and
    // `transposed (1,3)` of [2, n, 256, 128] (whole rows of 512 bytes,
    // 128 KiB apart).
    let nhwc = nchw_to_nhwc_axes;
    let t13 = |n: usize| permutation_axes(&[2, n, 256, 128], &[0, 3, 2, 1]);
    let ej = |axes: &[Axis], t: Tuning| tile_rows(axes, 4, t);
    for t in Tuning::ALL {
        let zen5 = t == Tuning::LongReads;
        assert_eq!(ej(&nhwc(64, 512 * 512), t), 16, "{t:?}");
        assert_eq!(ej(&nhwc(192, 256 * 256), t), 16, "{t:?}");
        assert_eq!(ej(&nhwc(256, 256 * 256), t), if zen5 { 32 } else { 16 }, "{t:?}");
        assert_eq!(ej(&nhwc(128, 512 * 256), t), if zen5 { 32 } else { 16 }, "{t:?}");
        assert_eq!(ej(&t13(64), t), if zen5 { 32 } else { 16 }, "{t:?}");
        assert_eq!(ej(&t13(96), t), if zen5 { 32 } else { 16 }, "{t:?}");
        // 32 far rows (as `permute [4, 2, 0, 3, 1]` has at 128 MiB): 16
        // for all.
        assert_eq!(ej(&t13(32), t), 16, "{t:?}");
        // No crowding (planes of 512 x 500): 32 for all.
        assert_eq!(ej(&nhwc(64, 512 * 500), t), 32, "{t:?}");
    }
    // Both kinds of tile copy right under every tuning: whole rows
    // (`(1,3)` of [1, 64, 256, 128], 8 MiB) and split ones (NCHW -> NHWC
    // of 256 x 128 pixels, planes 128 KiB apart: C = 128 in tiles of 32
    // on Zen 5, C = 64 in tiles of 16).
    each_tuning(|| {
        check_permutation(&[1, 64, 256, 128], &[0, 3, 2, 1]);
        check_permutation(&[1, 128, 256, 128], &[0, 2, 3, 1]);
        check_permutation(&[1, 64, 256, 128], &[0, 2, 3, 1]);
    });
}
