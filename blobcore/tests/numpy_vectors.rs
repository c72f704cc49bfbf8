//! Checks merge, split, transposed and reductions against expectations
//! computed by NumPy (tests/vectors/gen_numpy.py -> numpy_ops.txt).

mod common;

use blobcore::{Blob, DType};
use std::collections::HashMap;

struct Vector {
    dims: Vec<usize>,
    values: Vec<f64>,
}

fn vectors() -> HashMap<String, Vector> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/vectors/numpy_ops.txt");
    let text = std::fs::read_to_string(path).expect("test vectors present");
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let mut it = l.split('|');
            let name = it.next().unwrap().to_string();
            let dims = it.next().unwrap().split(',').filter(|s| !s.is_empty()).map(|d| d.parse().unwrap()).collect();
            let values = it.next().unwrap().split(' ').map(|v| v.parse().unwrap()).collect();
            (name, Vector { dims, values })
        })
        .collect()
}

fn blob_f32(v: &Vector) -> Blob {
    let data: Vec<f32> = v.values.iter().map(|&x| x as f32).collect();
    Blob::from_slice(&common::engine(), &v.dims, &data).unwrap()
}

fn assert_matches(b: &Blob, v: &Vector, what: &str) {
    assert_eq!(b.dims(), v.dims, "{what}: dims");
    let got: Vec<f64> = b.to_vec::<f32>().unwrap().iter().map(|&x| x as f64).collect();
    assert_eq!(got, v.values, "{what}: values");
}

#[test]
fn neoml_merge_example_along_every_named_dim() {
    let vs = vectors();
    let e = common::engine();
    let a: Vec<f32> = (1..=16).map(|x| x as f32).collect();
    let b: Vec<f32> = (17..=32).map(|x| x as f32).collect();
    let a = Blob::from_slice(&e, &[1, 2, 1, 2, 2, 2, 1], &a).unwrap();
    let b = Blob::from_slice(&e, &[1, 2, 1, 2, 2, 2, 1], &b).unwrap();
    for axis in 0..7 {
        let want = &vs[&format!("merge_neoml_axis{axis}")];
        // Into a preallocated blob, as NeoML does.
        let to = Blob::tensor(&e, DType::F32, &want.dims).unwrap();
        Blob::merge(&[&a, &b], axis, &to).unwrap();
        assert_matches(&to, want, &format!("merge axis {axis}"));
        // And back: split gives the inputs.
        let pa = a.clone_zeroed().unwrap();
        let pb = b.clone_zeroed().unwrap();
        Blob::split(&to, axis, &[&pa, &pb]).unwrap();
        assert_eq!(pa.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap(), "split axis {axis}");
        assert_eq!(pb.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap(), "split axis {axis}");
    }
}

#[test]
fn merge_three_parts_and_swapaxes_match_numpy() {
    let vs = vectors();
    let x = blob_f32(&vs["x_2345"]);
    let x2 = x.copy().unwrap();
    x2.scale(2.0).unwrap();
    let x3 = x.copy().unwrap();
    x3.scale(3.0).unwrap();
    for axis in 0..4 {
        let m = Blob::merged(&[&x, &x2, &x3], axis).unwrap();
        assert_matches(&m, &vs[&format!("merge3_axis{axis}")], &format!("merge3 axis {axis}"));
        // Negative axes name the same axis.
        let m2 = Blob::merged(&[&x, &x2, &x3], axis - 4).unwrap();
        assert_matches(&m2, &vs[&format!("merge3_axis{axis}")], "negative axis");
        let parts = m.split_equal(axis, 3).unwrap();
        assert_eq!(parts[2].to_vec::<f32>().unwrap(), x3.to_vec::<f32>().unwrap());
    }
    for d1 in 0..4 {
        for d2 in 0..4 {
            let t = x.transposed(d1, d2).unwrap();
            assert_matches(&t, &vs[&format!("swap_{d1}{d2}")], &format!("swap {d1} {d2}"));
        }
    }
}

#[test]
fn merge_objects_matches_numpy() {
    let vs = vectors();
    let e = common::engine();
    let p: Vec<f32> = (0..18).map(|x| x as f32).collect();
    let q: Vec<f32> = (0..12).map(|x| 100.0 + x as f32).collect();
    let p = Blob::from_slice(&e, &[1, 3, 1, 1, 2, 1, 3], &p).unwrap();
    let q = Blob::from_slice(&e, &[1, 3, 1, 2, 1, 2, 1], &q).unwrap();
    let to = Blob::list(&e, DType::F32, 1, 3, 1, 10).unwrap();
    Blob::merge_objects(&[&p, &q], &to).unwrap();
    let want = &vs["merge_objects"];
    let got: Vec<f64> = to.to_vec::<f32>().unwrap().iter().map(|&x| x as f64).collect();
    assert_eq!(got, want.values);
    let (p2, q2) = (p.clone_zeroed().unwrap(), q.clone_zeroed().unwrap());
    Blob::split_objects(&to, &[&p2, &q2]).unwrap();
    assert_eq!(p2.to_vec::<f32>().unwrap(), p.to_vec::<f32>().unwrap());
    assert_eq!(q2.to_vec::<f32>().unwrap(), q.to_vec::<f32>().unwrap());
}

#[test]
fn reductions_match_numpy_float64() {
    let vs = vectors();
    let r = blob_f32(&vs["ramp"]);
    let asum = vs["ramp_asum"].values[0];
    let sumsq = vs["ramp_sumsq"].values[0];
    // The CPU accumulates in f64; GPU kernels add f32 partials (Kahan in
    // each thread, a tree per workgroup) and promise 1e-5 relative.
    let tol = if r.engine().is_gpu() { 1e-5 } else { 1e-9 };
    assert!((r.asum().unwrap() - asum).abs() <= tol * asum);
    assert!((r.sumsq().unwrap() - sumsq).abs() <= tol * sumsq);
}
