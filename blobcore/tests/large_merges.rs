//! Merges and splits large enough to stream their stores (32 MiB and
//! more) with pieces of a few MiB, unaligned after the first: values equal
//! to the naive concatenation, computed independently of the engine.

mod common;

use blobcore::{Blob, Element};
use proptest::prelude::*;

#[test]
fn streamed_merges_and_splits_of_large_pieces_keep_every_value() {
    // Rows of 2^20 + 3 floats (not a multiple of 32 bytes, so the second
    // part's pieces start unaligned) in parts of 5 and 3 rows per outer
    // index: the whole is 8 * 2 * (2^20 + 3) * 4 bytes, about 64 MiB.
    large_pieces_case((1 << 20) + 3, 5, 3);
    // Rows of 2^20 + 37 floats: each piece ends in a task of several
    // hundred bytes that is not whole 32-byte pieces (a streamed body and
    // a short tail), in both parts.
    large_pieces_case((1 << 20) + 37, 3, 2);
}

/// A merge along axis 1 of parts of `ka` and `kb` rows of `n` floats per
/// outer index (2), and the split back, against the concatenation.
fn large_pieces_case(n: usize, ka: usize, kb: usize) {
    let e = common::engine();
    let outer = 2usize;
    let a: Vec<f32> = (0..outer * ka * n).map(|i| (i % 1_000_003) as f32).collect();
    let b: Vec<f32> = (0..outer * kb * n).map(|i| -((i % 999_983) as f32) - 1.0).collect();
    let pa = Blob::from_slice(&e, &[outer, ka, n], &a).unwrap();
    let pb = Blob::from_slice(&e, &[outer, kb, n], &b).unwrap();
    let mut want = Vec::with_capacity((ka + kb) * outer * n);
    for o in 0..outer {
        want.extend_from_slice(&a[o * ka * n..(o + 1) * ka * n]);
        want.extend_from_slice(&b[o * kb * n..(o + 1) * kb * n]);
    }
    let whole = Blob::from_slice(&e, &[outer, ka + kb, n], &vec![0f32; want.len()]).unwrap();
    Blob::merge(&[&pa, &pb], 1, &whole).unwrap();
    assert!(whole.to_vec::<f32>().unwrap() == want, "merge along axis 1 differs from the concatenation");
    let (qa, qb) = (Blob::from_slice(&e, &[outer, ka, n], &vec![0f32; a.len()]).unwrap(), Blob::from_slice(&e, &[outer, kb, n], &vec![0f32; b.len()]).unwrap());
    Blob::split(&whole, 1, &[&qa, &qb]).unwrap();
    assert!(qa.to_vec::<f32>().unwrap() == a, "split part 0 differs");
    assert!(qb.to_vec::<f32>().unwrap() == b, "split part 1 differs");
}

/// Streamed merges and splits of many short chunks per row (a channel
/// merge: the task path that copies part by part over a task's rows), with
/// chunks of 32, 8 and 3 floats (aligned, short, and leaving the next one
/// unaligned) and parts allocated a large power of two apart or not, as
/// the allocator gives them: every value equals the naive concatenation.
#[test]
fn streamed_merges_and_splits_of_short_chunks_keep_every_value() {
    let e = common::engine();
    let widths = [32usize, 8, 3];
    let row: usize = widths.iter().sum();
    // 43 floats per row, 200,000 rows: about 34 MB, above the streaming
    // threshold of 32 MiB.
    let outer = 200_000usize;
    let parts: Vec<Vec<f32>> =
        widths.iter().enumerate().map(|(k, &w)| (0..outer * w).map(|i| (i % 1_000_003) as f32 + 0.25 * k as f32).collect()).collect();
    let mut want = Vec::with_capacity(outer * row);
    for o in 0..outer {
        for (p, &w) in parts.iter().zip(&widths) {
            want.extend_from_slice(&p[o * w..(o + 1) * w]);
        }
    }
    let blobs: Vec<Blob> = parts.iter().zip(&widths).map(|(p, &w)| Blob::from_slice(&e, &[outer, w], p).unwrap()).collect();
    let refs: Vec<&Blob> = blobs.iter().collect();
    let whole = Blob::from_slice(&e, &[outer, row], &vec![0f32; outer * row]).unwrap();
    Blob::merge(&refs, 1, &whole).unwrap();
    assert!(whole.to_vec::<f32>().unwrap() == want, "merge of short chunks differs from the concatenation");
    let outs: Vec<Blob> = widths.iter().map(|&w| Blob::from_slice(&e, &[outer, w], &vec![0f32; outer * w]).unwrap()).collect();
    let orefs: Vec<&Blob> = outs.iter().collect();
    Blob::split(&whole, 1, &orefs).unwrap();
    for (k, (o, p)) in outs.iter().zip(&parts).enumerate() {
        assert!(o.to_vec::<f32>().unwrap() == *p, "split part {k} differs");
    }
}

/// A merge of `widths`-element chunks per row into rows of their sum,
/// above the streaming threshold, and the split back, against the naive
/// concatenation of the parts.
fn streamed_case<T: Element + PartialEq + std::fmt::Debug>(widths: &[usize], make: impl Fn(usize, usize) -> T) {
    let e = common::engine();
    let row: usize = widths.iter().sum();
    let outer = ((33usize << 20) / (row * std::mem::size_of::<T>())).max(1);
    let parts: Vec<Vec<T>> = widths.iter().enumerate().map(|(k, &w)| (0..outer * w).map(|i| make(k, i)).collect()).collect();
    let mut want = Vec::with_capacity(outer * row);
    for o in 0..outer {
        for (p, &w) in parts.iter().zip(widths) {
            want.extend_from_slice(&p[o * w..(o + 1) * w]);
        }
    }
    let blobs: Vec<Blob> = parts.iter().zip(widths).map(|(p, &w)| Blob::from_slice(&e, &[outer, w], p).unwrap()).collect();
    let refs: Vec<&Blob> = blobs.iter().collect();
    let whole = Blob::merged(&refs, 1).unwrap();
    assert!(whole.to_vec::<T>().unwrap() == want, "merge of chunks {widths:?} differs from the concatenation");
    let back = whole.split_sizes(1, widths).unwrap();
    for (k, (b, p)) in back.iter().zip(&parts).enumerate() {
        assert!(b.to_vec::<T>().unwrap() == *p, "split part {k} of {widths:?} differs");
    }
}

/// Streamed channel merges whose chunks are whole aligned 32-byte pieces
/// (the benchmark's two parts of 32 floats, and a row of 16 + 8 + 40
/// floats where the middle chunk is too short to stream): the path that
/// copies each part's rows in one loop, against the concatenation.
#[test]
fn streamed_merges_and_splits_of_aligned_chunks_keep_every_value() {
    streamed_case::<f32>(&[32, 32], |k, i| (i % 1_000_003) as f32 + 0.25 * k as f32);
    streamed_case::<f32>(&[16, 8, 40], |k, i| (i % 999_983) as f32 - 0.5 * k as f32);
    streamed_case::<f64>(&[8, 24], |k, i| i as f64 + 0.125 * k as f64);
}

proptest! {
    // Each case moves about 33 MiB: few cases, a fixed seed.
    #![proptest_config(ProptestConfig { cases: 8, rng_seed: proptest::test_runner::RngSeed::Fixed(24), ..ProptestConfig::default() })]

    /// Streamed merges and splits of random short chunk widths (2-4 parts,
    /// 1-40 elements each) of 1-, 4- and 8-byte elements equal the
    /// concatenation.
    #[test]
    fn streamed_merges_of_random_chunks_equal_the_concatenation(
        widths in prop::collection::vec(1usize..=40, 2..=4),
        size in prop::sample::select(vec![1usize, 4, 8]),
    ) {
        match size {
            1 => streamed_case::<u8>(&widths, |k, i| (i * 7 + k * 13) as u8),
            4 => streamed_case::<f32>(&widths, |k, i| (i % 1_000_003) as f32 + 0.25 * k as f32),
            _ => streamed_case::<f64>(&widths, |k, i| i as f64 - 0.5 * k as f64),
        }
    }

    /// Streamed merges and splits of 2-17 parts whose chunks are whole
    /// 32-byte pieces of 32 B to 1056 B (`merge_rows` takes 64 B to 1 KiB
    /// and at most 16 parts; the rest go part by part), f32 and f64,
    /// equal the concatenation.
    #[test]
    fn streamed_merges_of_random_aligned_chunks_equal_the_concatenation(
        pieces in prop::collection::vec(1usize..=33, 2..=17),
        wide in any::<bool>(),
    ) {
        if wide {
            let widths: Vec<usize> = pieces.iter().map(|p| p * 4).collect();
            streamed_case::<f64>(&widths, |k, i| i as f64 + 0.125 * k as f64);
        } else {
            let widths: Vec<usize> = pieces.iter().map(|p| p * 8).collect();
            streamed_case::<f32>(&widths, |k, i| (i % 1_000_003) as f32 - 0.25 * k as f32);
        }
    }
}
