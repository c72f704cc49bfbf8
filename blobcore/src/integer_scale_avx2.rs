//! `scale` of int64 and uint64 elements four at a time with AVX2, for
//! the common case: values and products below 2^51 in magnitude. x86-64
//! before AVX-512 has no vector conversion between 64-bit integers and
//! float64, so the scalar loop (`cvtsi2sd`, `mulsd`, `cvttsd2si` and
//! Rust's saturation checks) was compute-bound at about half a streamed
//! copy. Here both conversions add and subtract 1.5 * 2^52, which is
//! exact for integers below 2^51 in magnitude: `x + 1.5 * 2^52` as
//! float64 bits is `x + 0x4338_0000_0000_0000` as an integer.
//!
//! Every vector whose four values or four products fall outside that
//! range (or are NaN) is done element by element by the caller's scalar
//! `scale` instead, so the result is `Arith::scale`'s for every element,
//! bit for bit: float64 holds such `x` exactly, the product is the same
//! IEEE multiply, and truncating it then converting it exactly is what
//! `as` does in range (property test `avx2_scale_is_the_scalar_scale`).
//!
//! Processors with AVX-512 F and DQ run `integer_scale_avx512` instead,
//! which converts in one instruction and multiplies values past 2^53
//! exactly in the vector registers; this kernel takes the factors that
//! one leaves (see there).

// Miri runs the scalar path only (it has no AVX2), so there the kernel
// and its constants are unused.
#![cfg_attr(miri, allow(dead_code))]

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// 1.5 * 2^52: its float64 bits are `MAGIC_BITS`.
const MAGIC: f64 = 6755399441055744.0;
const MAGIC_BITS: i64 = 0x4338_0000_0000_0000;
/// 2^51: the magnitudes both conversions take exactly.
const LIMIT: f64 = 2251799813685248.0;

/// Scales `xs` in place with AVX2 where the CPU has it (`scalar` for the
/// vectors out of range and the tail); false, touching nothing, where it
/// does not. `unsigned`: the elements are uint64 (bits of `xs`), whose
/// negative products saturate to 0 (left to `scalar`).
pub(crate) fn scale_64(xs: &mut [i64], factor: f64, unsigned: bool, scalar: impl Fn(i64) -> i64) -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked at run time).
        unsafe { scale_64_avx2(xs, factor, unsigned, scalar) };
        return true;
    }
    let _ = (xs, factor, unsigned, scalar);
    false
}

/// # Safety
/// AVX2 present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn scale_64_avx2(xs: &mut [i64], factor: f64, unsigned: bool, scalar: impl Fn(i64) -> i64) {
    let f = _mm256_set1_pd(factor);
    let (magic, magic_bits) = (_mm256_set1_pd(MAGIC), _mm256_set1_epi64x(MAGIC_BITS));
    // Values in range: x + 2^51 (signed) or x (unsigned) below 2^52 or
    // 2^51, so the bits above are zero.
    let (bias, shift) = if unsigned { (0, 51) } else { (1i64 << 51, 52) };
    let bias = _mm256_set1_epi64x(bias);
    let shift = _mm_cvtsi64_si128(shift);
    // Products in range: above -2^51 (signed) or -1 (unsigned: a
    // truncated product above -1 is 0 or more), below 2^51; NaN is not.
    let low = _mm256_set1_pd(if unsigned { -1.0 } else { -LIMIT });
    let high = _mm256_set1_pd(LIMIT);
    let mut chunks = xs.chunks_exact_mut(4);
    for c in &mut chunks {
        let p = c.as_mut_ptr() as *mut __m256i;
        // SAFETY: `c` is four i64s; unaligned loads and stores.
        unsafe {
            let x = _mm256_loadu_si256(p);
            let out_of_range = _mm256_srl_epi64(_mm256_add_epi64(x, bias), shift);
            if _mm256_testz_si256(out_of_range, out_of_range) == 0 {
                c.iter_mut().for_each(|v| *v = scalar(*v));
                continue;
            }
            let xf = _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(x, magic_bits)), magic);
            let t = _mm256_round_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(_mm256_mul_pd(xf, f));
            let ok = _mm256_and_pd(_mm256_cmp_pd::<_CMP_GT_OQ>(t, low), _mm256_cmp_pd::<_CMP_LT_OQ>(t, high));
            if _mm256_movemask_pd(ok) != 0b1111 {
                c.iter_mut().for_each(|v| *v = scalar(*v));
                continue;
            }
            let r = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(t, magic)), magic_bits);
            _mm256_storeu_si256(p, r);
        }
    }
    chunks.into_remainder().iter_mut().for_each(|v| *v = scalar(*v));
}

#[cfg(test)]
mod tests {
    use crate::dtype::Arith;
    use proptest::prelude::*;

    /// Values and factors around every edge the vector path has: the
    /// range limits 2^51 and 2^53, the type's ends, zero, NaN, infinities,
    /// subnormals, and random ones.
    fn value() -> impl Strategy<Value = i64> {
        let edges = [0, 1, -1, 1 << 51, (1 << 51) - 1, -(1 << 51), -(1 << 51) - 1, 1 << 53, -(1 << 53), i64::MAX, i64::MIN, 3];
        prop_oneof![
            proptest::sample::select(edges.to_vec()),
            (-(1i64 << 52)..(1i64 << 52)),
            (-1000i64..1000),
            any::<i64>(),
        ]
    }

    fn factor() -> impl Strategy<Value = f64> {
        let edges = [1.0, -1.0, 0.0, -0.0, 0.5, 2.0, 3.0, 1e-300, 5e-324, 1e300, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1.0 + f64::EPSILON, 0.1];
        prop_oneof![proptest::sample::select(edges.to_vec()), any::<f64>(), -4.0f64..4.0]
    }

    /// Whole slices (vectors and tails, vectors mixing in- and
    /// out-of-range lanes) against `Arith::scale` element by element,
    /// for int64 and uint64; fails if the vector path rounds, converts or
    /// saturates differently anywhere.
    #[test]
    fn avx2_scale_is_the_scalar_scale() {
        let config = ProptestConfig { cases: 3000, rng_seed: proptest::test_runner::RngSeed::Fixed(73), ..ProptestConfig::default() };
        proptest!(config, |(xs in proptest::collection::vec(value(), 0..40), f in factor())| {
            let mut got = xs.clone();
            if !super::scale_64(&mut got, f, false, |x| i64::scale(x, f)) {
                return Ok(());
            }
            let want: Vec<i64> = xs.iter().map(|&x| i64::scale(x, f)).collect();
            prop_assert_eq!(&got, &want, "int64 factor {}", f);
            let ux: Vec<i64> = xs.iter().map(|&x| x.wrapping_abs()).collect();
            let mut got = ux.clone();
            super::scale_64(&mut got, f, true, |x| u64::scale(x as u64, f) as i64);
            let want: Vec<i64> = ux.iter().map(|&x| u64::scale(x as u64, f) as i64).collect();
            prop_assert_eq!(&got, &want, "uint64 factor {}", f);
        });
    }

    /// The range edges exactly, with factors that keep the product in
    /// range or push it just out: every value of `x * f` near 2^51.
    #[test]
    fn avx2_scale_at_the_range_edges() {
        let xs: Vec<i64> = (-6..6).flat_map(|d| [(1i64 << 51) + d, -(1i64 << 51) + d, (1 << 50) + d, -(1 << 50) + d]).collect();
        for f in [1.0, -1.0, 2.0, -2.0, 1.0 - f64::EPSILON, 0.5, 1.5, -0.75] {
            let mut got = xs.clone();
            if !super::scale_64(&mut got, f, false, |x| i64::scale(x, f)) {
                return;
            }
            let want: Vec<i64> = xs.iter().map(|&x| i64::scale(x, f)).collect();
            assert_eq!(got, want, "int64 factor {f}");
            let mut got = xs.clone();
            super::scale_64(&mut got, f, true, |x| u64::scale(x as u64, f) as i64);
            let want: Vec<i64> = xs.iter().map(|&x| u64::scale(x as u64, f) as i64).collect();
            assert_eq!(got, want, "uint64 factor {f}");
        }
    }
}
