//! Permutations large enough to stream their stores (32 MiB and more), on
//! random shapes: with dims that are multiples of 16 the packed tiles
//! write whole destination lines straight from registers, with others
//! they go through the scratch; rows of up to 1 KiB are tiled whole.
//! Values equal ndarray's permutation of the same data.

use blobcore::{Blob, Engine};
use ndarray::{ArrayD, IxDyn};
use proptest::prelude::*;

/// Floats in the destination that make it streamed (33.6 MB).
const STREAMED: usize = 8_400_000;

/// `lead` and a last dim that fills the tensor up to a streamed size (a
/// multiple of 16 when `lined`), permuted as `perm_seed` picks.
fn random_case(lead: Vec<usize>, lined: bool, perm_seed: Vec<usize>) {
    let mut dims = lead;
    let inner: usize = dims.iter().product();
    let last = STREAMED.div_ceil(inner);
    dims.push(if lined { last.next_multiple_of(16) } else { last });
    let rank = dims.len();
    // A permutation of 0..rank from the seed (Fisher-Yates).
    let mut axes: Vec<usize> = (0..rank).collect();
    for (k, s) in perm_seed.iter().enumerate().take(rank - 1) {
        let j = k + s % (rank - k);
        axes.swap(k, j);
    }
    permute_case(dims, axes);
}

fn permute_case(dims: Vec<usize>, axes: Vec<usize>) {
    let n: usize = dims.iter().product();
    let data: Vec<f32> = (0..n).map(|i| (i % 1_000_003) as f32).collect();
    let a = ArrayD::from_shape_vec(IxDyn(&dims), data.clone()).unwrap();
    let want: Vec<f32> = a.permuted_axes(IxDyn(&axes)).iter().copied().collect();
    let e = Engine::cpu();
    let src = Blob::from_slice(&e, &dims, &data).unwrap();
    let out_dims: Vec<usize> = axes.iter().map(|&k| dims[k]).collect();
    let dst = Blob::from_slice(&e, &out_dims, &vec![0f32; n]).unwrap();
    let ax: Vec<isize> = axes.iter().map(|&k| k as isize).collect();
    dst.permute_from(&src, &ax).unwrap();
    assert!(dst.to_vec::<f32>().unwrap() == want, "permute {axes:?} of {dims:?} differs from ndarray's");
}

proptest! {
    // Each case moves about 34 MB: few cases, a fixed seed.
    #![proptest_config(ProptestConfig { cases: 10, rng_seed: proptest::test_runner::RngSeed::Fixed(32), ..ProptestConfig::default() })]

    /// Streamed permutations of rank 3 and 4 (leading dims multiples of 16
    /// or not, rows of up to 1 KiB and longer) equal ndarray's.
    #[test]
    fn streamed_permutations_equal_ndarray(
        lead in prop::collection::vec(prop::sample::select(vec![3usize, 8, 16, 17, 48, 64, 129, 200, 256, 320]), 2..=3),
        lined in any::<bool>(),
        perm_seed in prop::collection::vec(0usize..24, 3),
    ) {
        random_case(lead, lined, perm_seed);
    }
}

/// The benchmark's slow rows, scaled down to 32 MiB: `transposed (0,3)`
/// (far-apart rows of multiples of 16: the direct write-out; tiles of 32
/// of the 64 rows, batched), NHWC -> NCHW with C = 256 (whole source
/// rows of 1 KiB), NCHW -> NHWC with C = 256 and 64 (planes of 64 and 128
/// KiB: tiles of 32 channels that walk along their planes first) and the
/// rank-5 permute of the bench (64 MiB; rows of 2 KiB, 1 MiB apart).
#[test]
fn streamed_far_apart_and_whole_row_transposes_equal_ndarray() {
    permute_case(vec![64, 16, 128, 64], vec![3, 1, 2, 0]);
    permute_case(vec![2, 128, 128, 256], vec![0, 3, 1, 2]);
    permute_case(vec![2, 256, 128, 128], vec![0, 2, 3, 1]);
    permute_case(vec![4, 64, 64, 512], vec![0, 2, 3, 1]);
    permute_case(vec![2, 32, 16, 32, 512], vec![4, 2, 0, 3, 1]);
}

proptest! {
    // Each case moves about 34 MB: few cases, a fixed seed.
    #![proptest_config(ProptestConfig { cases: 8, rng_seed: proptest::test_runner::RngSeed::Fixed(45), ..ProptestConfig::default() })]

    /// Streamed NHWC -> NCHW with few channels (C = 2, 3, 4 and 8: the
    /// run of pixels split into C destination rows in registers, its
    /// source fetched into L2 ahead), one or two images, random widths
    /// (which leave scalar edges or not), equal ndarray's.
    #[test]
    fn streamed_few_channel_deinterleaves_equal_ndarray(
        c in prop::sample::select(vec![2usize, 3, 4, 8]),
        n in 1usize..=2,
        w in 17usize..=1100,
    ) {
        let h = STREAMED.div_ceil(n * c * w);
        permute_case(vec![n, h, w, c], vec![0, 3, 1, 2]);
    }
}
