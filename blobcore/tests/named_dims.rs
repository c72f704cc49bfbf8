//! NeoML's seven named dims on blobs of any rank <= 7: every named-dim
//! operation sees a blob as its shape padded with trailing 1s, as NeoML's
//! CDnnBlob does (a `CreateVector(5)` has BatchLength 5 and every other
//! dim 1, so it merges along Channels). The oracle is the same operation
//! with integer axes on an explicitly padded rank-7 copy, and hand-written
//! NeoML results for the small cases.

#![allow(clippy::identity_op)] // index formulas written out in full

mod common;

use blobcore::{Blob, BlobDim, DType};

fn ramp(dims: &[usize], start: f32) -> Blob {
    let n: usize = dims.iter().product();
    Blob::from_slice(&common::engine(), dims, &(0..n).map(|i| start + i as f32).collect::<Vec<_>>()).unwrap()
}

/// A copy of `b` reshaped to its 7 padded named dims (the oracle's input).
fn padded(b: &Blob) -> Blob {
    let c = b.copy().unwrap();
    c.reshape(&b.shape().named_dims().unwrap()).unwrap();
    c
}

#[test]
fn vectors_merge_and_split_along_channels() {
    let a = ramp(&[5], 0.0);
    let b = ramp(&[5], 10.0);
    let m = Blob::merged_dim(&[&a, &b], BlobDim::Channels).unwrap();
    // NeoML: MergeByDim(Channels) of two CreateVector(5) gives a 5-object
    // blob of 2 channels, the channels interleaved.
    assert_eq!(m.dims(), [5, 1, 1, 1, 1, 1, 2]);
    assert_eq!(m.to_vec::<f32>().unwrap(), [0., 10., 1., 11., 2., 12., 3., 13., 4., 14.]);
    // The oracle: integer axes on padded copies.
    let o = Blob::merged(&[&padded(&a), &padded(&b)], 6).unwrap();
    assert_eq!(o.dims(), m.dims());
    assert_eq!(o.to_vec::<f32>().unwrap(), m.to_vec::<f32>().unwrap());
    // Back into two preallocated vectors.
    let (x, y) = (Blob::vector(&common::engine(), DType::F32, 5).unwrap(), Blob::vector(&common::engine(), DType::F32, 5).unwrap());
    Blob::split_dim(&m, BlobDim::Channels, &[&x, &y]).unwrap();
    assert_eq!(x.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
    assert_eq!(y.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    // New parts keep the merged blob's rank (7): the padded dims are not all 1 there.
    let parts = m.split_equal_dim(BlobDim::Channels, 2).unwrap();
    assert_eq!(parts[0].dims(), [5, 1, 1, 1, 1, 1, 1]);
    assert!(parts[0].has_equal_dims(&a));
    assert_eq!(parts[1].to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
}

#[test]
fn results_keep_their_rank_while_the_padding_stays_one() {
    let a = ramp(&[2, 3], 0.0);
    let b = ramp(&[4, 3], 100.0);
    let m = Blob::merged_dim(&[&a, &b], BlobDim::BatchLength).unwrap();
    assert_eq!(m.dims(), [6, 3]);
    assert_eq!(m.to_vec::<f32>().unwrap(), Blob::merged(&[&a, &b], 0).unwrap().to_vec::<f32>().unwrap());
    let parts = m.split_sizes_dim(BlobDim::BatchLength, &[2, 4]).unwrap();
    assert_eq!(parts[1].dims(), [4, 3]);
    assert_eq!(parts[1].to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    // Merging along Height, past the rank, makes the padding non-1: rank 7.
    let h = Blob::merged_dim(&[&a, &a], BlobDim::Height).unwrap();
    assert_eq!(h.dims(), [2, 3, 1, 2, 1, 1, 1]);
    // Parts of different ranks merge when their padded dims agree.
    let c = ramp(&[2, 3, 1, 1], 50.0);
    let to = Blob::tensor(&common::engine(), DType::F32, &[2, 3, 1, 2]).unwrap();
    Blob::merge_dim(&[&a, &c], BlobDim::Height, &to).unwrap();
    let o = Blob::merged(&[&padded(&a), &padded(&c)], 3).unwrap();
    assert_eq!(to.to_vec::<f32>().unwrap(), o.to_vec::<f32>().unwrap());
}

#[test]
fn transposes_by_named_dims_match_the_padded_oracle() {
    let t = ramp(&[2, 3, 4], 0.0);
    // BatchWidth (3) with Channels (1, padding): rank 7.
    let r = t.transposed_dims(BlobDim::BatchWidth, BlobDim::Channels).unwrap();
    assert_eq!(r.dims(), [2, 1, 4, 1, 1, 1, 3]);
    let o = padded(&t).transposed(1, 6).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), o.to_vec::<f32>().unwrap());
    // r[i, 0, k, .., j] = t[i, j, k]
    let v = r.to_vec::<f32>().unwrap();
    assert_eq!(v[(1 * 4 + 2) * 3 + 1], (1 * 3 + 1) as f32 * 4.0 + 2.0);
    // Swapping two padding dims of a matrix changes nothing: rank 2 kept.
    let m = ramp(&[2, 3], 0.0);
    let s = m.transposed_dims(BlobDim::Height, BlobDim::Channels).unwrap();
    assert_eq!(s.dims(), [2, 3]);
    assert_eq!(s.to_vec::<f32>().unwrap(), m.to_vec::<f32>().unwrap());
    // Within the rank it is the integer-axis transpose.
    let w = m.transposed_dims(BlobDim::BatchLength, BlobDim::BatchWidth).unwrap();
    assert_eq!(w.dims(), [3, 2]);
    assert_eq!(w.to_vec::<f32>().unwrap(), m.transposed(0, 1).unwrap().to_vec::<f32>().unwrap());
    // transpose_from into a destination of rank 7.
    let d = Blob::tensor(&common::engine(), DType::F32, &[2, 1, 4, 1, 1, 1, 3]).unwrap();
    d.transpose_from_dims(&t, BlobDim::BatchWidth, BlobDim::Channels).unwrap();
    assert_eq!(d.to_vec::<f32>().unwrap(), o.to_vec::<f32>().unwrap());
    // ... and into a lower-rank one whose padding matches.
    let d2 = Blob::tensor(&common::engine(), DType::F32, &[3, 2]).unwrap();
    d2.transpose_from_dims(&m, BlobDim::BatchWidth, BlobDim::BatchLength).unwrap();
    assert_eq!(d2.to_vec::<f32>().unwrap(), w.to_vec::<f32>().unwrap());
}

#[test]
fn has_equal_dims_compares_the_padded_dims() {
    let e = common::engine();
    let t = |d: &[usize]| Blob::tensor(&e, DType::F32, d).unwrap();
    assert!(t(&[2, 3]).has_equal_dims(&t(&[2, 3, 1])));
    assert!(t(&[5]).has_equal_dims(&t(&[5, 1, 1, 1, 1, 1, 1])));
    assert!(!t(&[2, 3]).has_equal_dims(&t(&[3, 2])));
    assert!(!t(&[2, 3]).has_equal_dims(&t(&[1, 2, 3])));
    // Past rank 7 there are no named dims: exact comparison.
    assert!(t(&[1; 8]).has_equal_dims(&t(&[1; 8])));
    assert!(!t(&[1; 8]).has_equal_dims(&t(&[1; 7])));
    // Caffe's CopyFrom still compares shapes exactly.
    assert_eq!(t(&[2, 3]).copy_from_caffe(&t(&[2, 3, 1]), false, false).unwrap_err().code(), 4);
}

#[test]
fn named_ops_refuse_what_they_cannot_do() {
    let e = common::engine();
    let a = ramp(&[5], 0.0);
    let big = Blob::tensor(&e, DType::F32, &[1; 8]).unwrap();
    assert_eq!(Blob::merged_dim(&[&big, &big], BlobDim::Channels).unwrap_err().code(), 4);
    assert_eq!(big.transposed_dims(BlobDim::Height, BlobDim::Width).unwrap_err().code(), 4);
    assert_eq!(Blob::merged_dim(&[], BlobDim::Channels).unwrap_err().code(), 3);
    // Padded dims that differ elsewhere than the merged dim.
    let b = ramp(&[4], 0.0);
    assert_eq!(Blob::merged_dim(&[&a, &b], BlobDim::Channels).unwrap_err().code(), 4);
    let to = Blob::vector(&e, DType::F32, 5).unwrap();
    assert_eq!(Blob::merge_dim(&[&a, &a], BlobDim::Channels, &to).unwrap_err().code(), 4);
    assert_eq!(a.split_sizes_dim(BlobDim::BatchLength, &[2, 2]).unwrap_err().code(), 4);
    assert_eq!(a.split_equal_dim(BlobDim::BatchLength, 0).unwrap_err().code(), 4);
    let wrong = Blob::tensor(&e, DType::F32, &[5, 2]).unwrap();
    assert_eq!(wrong.transpose_from_dims(&a, BlobDim::BatchLength, BlobDim::Channels).unwrap_err().code(), 4);
    // Nothing was written.
    assert_eq!(to.to_vec::<f32>().unwrap(), [0.0; 5]);
}
