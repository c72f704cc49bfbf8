//! Merges and splits large enough to stream their stores (32 MiB and
//! more) with pieces of a few MiB, unaligned after the first: values equal
//! to the naive concatenation, computed independently of the engine.

mod common;

use blobcore::Blob;

#[test]
fn streamed_merges_and_splits_of_large_pieces_keep_every_value() {
    let e = common::engine();
    // Rows of 2^20 + 3 floats (not a multiple of 32 bytes, so the second
    // part's pieces start unaligned) in parts of 5 and 3 rows per outer
    // index: the whole is 8 * 2 * (2^20 + 3) * 4 bytes, about 64 MiB.
    let (outer, n) = (2usize, (1usize << 20) + 3);
    let (ka, kb) = (5usize, 3usize);
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
