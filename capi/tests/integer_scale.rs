//! `blob_scale` on int64 caller memory wrapped with `blob_wrap`, scaled
//! through that blob or through a DLPack alias of it (`blob_to_dlpack`
//! then `blob_from_dlpack`), read back in the caller's own buffer, and
//! compared with an oracle written here from the rule alone: NumPy's
//! float64 `trunc(x * factor)` where float64 holds `x` (|x| <= 2^53), the
//! exact product beyond, truncated toward zero and saturated. The factors
//! are `k / 2^j`, exact doubles whose exact product is integer arithmetic
//! (`x * k`, then a division truncating toward zero), so the oracle needs
//! none of blobcore's code. Lengths cross the vector kernels' widths (4
//! with AVX2, 8 with AVX-512), values mix both kinds of lane.

use blob::*;
use proptest::prelude::*;
use std::ffi::{c_void, CStr};
use std::ptr::{null, null_mut};

fn ok(status: i32, what: &str) {
    assert_eq!(status, BLOB_OK, "{what}: {}", unsafe { CStr::from_ptr(blob_last_error()).to_string_lossy() });
}

/// `k / 2^j`, exactly (a power of two's reciprocal is exact for j < 1023).
fn factor(k: i64, j: u32) -> f64 {
    k as f64 * 2f64.powi(-(j as i32))
}

/// The rule, from integers: `k / 2^j` is the factor.
fn oracle(x: i64, k: i64, j: u32) -> i64 {
    let f = factor(k, j);
    if x.unsigned_abs() <= 1 << 53 {
        // Rust's `as` truncates toward zero and saturates, as the rule does.
        return (x as f64 * f) as i64;
    }
    let p = x as i128 * k as i128 / (1i128 << j); // i128 division truncates toward zero
    p.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

fn value() -> impl Strategy<Value = i64> {
    let t53 = 1i64 << 53;
    prop_oneof![
        any::<i64>(),
        -1000i64..1000,
        (-8i64..8).prop_map(move |d| t53 + d),
        (-8i64..8).prop_map(move |d| -t53 + d),
        (0i64..4).prop_map(|d| i64::MAX - d),
        (0i64..4).prop_map(|d| i64::MIN + d),
        any::<i64>().prop_map(|x| x >> 9),
    ]
}

#[test]
fn wrapped_int64_scales_as_the_rule_through_every_door() {
    let config = ProptestConfig { cases: 400, rng_seed: proptest::test_runner::RngSeed::Fixed(831), ..ProptestConfig::default() };
    proptest!(config, |(xs in proptest::collection::vec(value(), 1..40), k in -9i64..10, j in 0u32..70, dlpack: bool)| {
        let mut data = xs.clone();
        let dims = [data.len() as i64];
        let mut b = null_mut();
        ok(
            blob_wrap(null(), BLOB_I64, dims.as_ptr(), 1, data.as_mut_ptr() as *mut c_void, data.len() * 8, None, null_mut(), &mut b),
            "wrap",
        );
        let f = factor(k, j);
        if dlpack {
            let mut t = null_mut();
            ok(blob_to_dlpack(b, 0, &mut t), "to_dlpack");
            let mut alias = null_mut();
            ok(blob_from_dlpack(null(), t, &mut alias), "from_dlpack");
            ok(blob_scale(alias, f), "scale through the DLPack alias");
            ok(blob_free(alias), "free alias");
        } else {
            ok(blob_scale(b, f), "scale");
        }
        ok(blob_free(b), "free");
        let want: Vec<i64> = xs.iter().map(|&x| oracle(x, k, j)).collect();
        prop_assert_eq!(&data, &want, "factor {} / 2^{}", k, j);
    });
}
