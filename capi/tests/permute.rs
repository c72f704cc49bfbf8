//! `blob_permute` and `blob_transposed` (NumPy's `transpose(axes)` and
//! `swapaxes` as new dense blobs, made through the core's permuted views)
//! of float32 caller memory wrapped with `blob_wrap`, read directly or
//! through a DLPack alias of it (`blob_to_dlpack` then `blob_from_dlpack`),
//! compared with an oracle written here from index arithmetic alone:
//! element `(i_0, ...)` of the result is element `j` of the source with
//! `j[axes[k]] = i_k`. The caller's buffer must keep its bytes.

use blob::*;
use proptest::prelude::*;
use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};

fn ok(status: i32, what: &str) {
    assert_eq!(status, BLOB_OK, "{what}: {}", unsafe { CStr::from_ptr(blob_last_error()).to_string_lossy() });
}

/// The values of `src` (row-major, `dims`) permuted by `axes`, from
/// index arithmetic.
fn oracle(src: &[f32], dims: &[usize], axes: &[usize]) -> Vec<f32> {
    let out_dims: Vec<usize> = axes.iter().map(|&a| dims[a]).collect();
    let n: usize = out_dims.iter().product();
    let mut idx = vec![0usize; dims.len()];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let mut j = vec![0usize; dims.len()];
        for (k, &a) in axes.iter().enumerate() {
            j[a] = idx[k];
        }
        out.push(src[j.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)]);
        for k in (0..out_dims.len()).rev() {
            idx[k] += 1;
            if idx[k] < out_dims[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

/// The dims and values of `b`, read into the caller's memory.
fn read(b: *const Blob) -> (Vec<usize>, Vec<f32>) {
    let mut rank = 0usize;
    ok(blob_rank(b, &mut rank), "rank");
    let mut dims = vec![0i64; rank];
    ok(blob_dims(b, dims.as_mut_ptr(), rank), "dims");
    let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    let mut values = vec![0f32; dims.iter().product()];
    ok(blob_copy_to_host(b, values.as_mut_ptr() as *mut c_void, values.len() * 4), "copy_to_host");
    (dims, values)
}

#[test]
fn wrapped_memory_permutes_as_index_arithmetic_through_every_door() {
    let config = ProptestConfig { cases: 400, rng_seed: proptest::test_runner::RngSeed::Fixed(842), ..ProptestConfig::default() };
    let shape = proptest::collection::vec(1usize..5, 1..7);
    proptest!(config, |(dims in shape, keys in proptest::collection::vec(any::<u32>(), 6), swap in (0usize..6, 0usize..6), dlpack: bool)| {
        let n: usize = dims.iter().product();
        let src: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 - 7.0).collect();
        let mut data = src.clone();
        let d64: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        let mut wrapped = null_mut();
        ok(
            blob_wrap(null(), BLOB_F32, d64.as_ptr(), d64.len(), data.as_mut_ptr() as *mut c_void, n * 4, None, null_mut(), &mut wrapped),
            "wrap",
        );
        // The blob read: the wrap itself, or a DLPack alias of its memory.
        let b = if dlpack {
            let mut t = null_mut();
            ok(blob_to_dlpack(wrapped, 0, &mut t), "to_dlpack");
            let mut alias = null_mut();
            ok(blob_from_dlpack(null(), t, &mut alias), "from_dlpack");
            alias
        } else {
            wrapped
        };
        let mut axes: Vec<usize> = (0..dims.len()).collect();
        axes.sort_by_key(|&a| keys[a]);
        let a32: Vec<i32> = axes.iter().map(|&a| a as i32).collect();
        let mut p = null_mut();
        ok(blob_permute(b, a32.as_ptr(), a32.len(), &mut p), "permute");
        let (pd, pv) = read(p);
        prop_assert_eq!(pd, axes.iter().map(|&a| dims[a]).collect::<Vec<_>>());
        prop_assert_eq!(pv, oracle(&src, &dims, &axes), "axes {:?}", axes);
        ok(blob_free(p), "free permuted");
        // swapaxes(d1, d2), negative axes counted from the end.
        let (d1, d2) = (swap.0 % dims.len(), swap.1 % dims.len());
        let mut sw: Vec<usize> = (0..dims.len()).collect();
        sw.swap(d1, d2);
        let mut t = null_mut();
        ok(blob_transposed(b, d1 as i32 - dims.len() as i32, d2 as i32, &mut t), "transposed");
        let (td, tv) = read(t);
        prop_assert_eq!(td, sw.iter().map(|&a| dims[a]).collect::<Vec<_>>());
        prop_assert_eq!(tv, oracle(&src, &dims, &sw), "swap {} {}", d1, d2);
        ok(blob_free(t), "free transposed");
        if dlpack {
            ok(blob_free(b), "free alias");
        }
        ok(blob_free(wrapped), "free");
        prop_assert_eq!(&data, &src, "the caller's memory kept its bytes");
    });
}
