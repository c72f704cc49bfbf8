//! `scale` of int64 and uint64 elements eight at a time with AVX-512 (F
//! and DQ), for every value: AVX-512 DQ converts between 64-bit integers
//! and float64 in one instruction each way, and the exact product that
//! values past 2^53 need (`integer_scale`) is built from 32-bit limbs.
//!
//! Per element, as `Arith::scale` defines it:
//! - |x| <= 2^53 (float64 holds `x`): `trunc(x * factor)` in float64.
//!   `vcvtqq2pd` converts such `x` exactly, the multiply is the same IEEE
//!   multiply, and `vcvttpd2qq` truncates in range; out of range (and
//!   NaN) it gives the "integer indefinite" (int64: -2^63, uint64:
//!   2^64 - 1), which sends the vector to the scalar `scale`.
//! - |x| > 2^53: the exact product `|x| * m` (the factor is `±m * 2^e`,
//!   `m` below 2^53) as 128 bits from four 32 x 32-bit multiplies,
//!   shifted right by `-e` (truncation toward zero), its sign put back.
//!   A result that would saturate sends the vector to the scalar `scale`.
//!
//! Factors that are not finite, factors of 2^52 and more (`e >= 0`: every
//! value past 2^53 saturates), and negative factors of uint64 elements
//! (every product saturates to 0 or truncates to it) are left to the
//! caller: [`scale_64`] returns false, touching nothing. Every vector the
//! kernel does not finish goes element by element through the caller's
//! scalar `scale`, so the result is `Arith::scale`'s for every element,
//! bit for bit (property test `avx512_scale_is_the_scalar_scale`).

// Miri runs the scalar path only (it has no AVX-512), so there the
// kernel and its constants are unused.
#![cfg_attr(miri, allow(dead_code))]

use crate::integer_scale::Split;
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// 2^53: the largest magnitude whose float64 product is the scale's.
const HELD: u64 = 1 << 53;

/// Scales `xs` in place with AVX-512 F and DQ where the CPU has them and
/// the factor is one the kernel takes (see the module docs): `scalar`
/// for the vectors it does not finish and the tail; false, touching
/// nothing, otherwise. `unsigned`: the elements are uint64 (bits of `xs`).
pub(crate) fn scale_64(xs: &mut [i64], factor: f64, unsigned: bool, scalar: impl Fn(i64) -> i64) -> bool {
    let Some(split) = Split::of(factor) else {
        return false;
    };
    if split.e >= 0 || (unsigned && split.negative) {
        return false;
    }
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512dq") {
        // SAFETY: the CPU has AVX-512 F and DQ (checked at run time).
        unsafe { scale_64_avx512(xs, factor, split, unsigned, scalar) };
        return true;
    }
    let _ = (xs, unsigned, scalar);
    false
}

/// # Safety
/// AVX-512 F and DQ present; `split` is `factor`'s, with `e < 0`, and not
/// negative when `unsigned`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq")]
unsafe fn scale_64_avx512(xs: &mut [i64], factor: f64, split: Split, unsigned: bool, scalar: impl Fn(i64) -> i64) {
    let f = _mm512_set1_pd(factor);
    let held_limit = _mm512_set1_epi64(HELD as i64);
    // The float path's "integer indefinite": out of range or NaN.
    let indefinite = _mm512_set1_epi64(if unsigned { -1 } else { i64::MIN });
    // The factor's significand in two 32-bit limbs (the high one below 2^21).
    let low32 = _mm512_set1_epi64(0xFFFF_FFFF);
    let (m0, m1) = (_mm512_set1_epi64((split.m & 0xFFFF_FFFF) as i64), _mm512_set1_epi64((split.m >> 32) as i64));
    // The product is shifted right by s = -e (at least 1): within the low
    // word's reach (s < 64) both words contribute; past it only the high
    // one (a count of 64 or more shifts everything out, as the product,
    // below 2^117, is then 0 past s = 117).
    let s = split.e.unsigned_abs() as i64;
    let near = s < 64;
    let (right, left) = if near { (s, 64 - s) } else { (s - 64, 0) };
    let (right, left) = (_mm_cvtsi64_si128(right), _mm_cvtsi64_si128(left));
    // The sign bit in every lane when the factor is negative.
    let fsign = _mm512_set1_epi64(if split.negative { i64::MIN } else { 0 });
    let top = _mm512_set1_epi64(i64::MIN);
    let mut chunks = xs.chunks_exact_mut(8);
    for c in &mut chunks {
        let p = c.as_mut_ptr() as *mut __m512i;
        // SAFETY: `c` is eight i64s; unaligned loads and stores.
        unsafe {
            let x = _mm512_loadu_si512(p as *const _);
            // The magnitude: |x| for int64 (|-2^63| is 2^63 as u64), x for uint64.
            let a = if unsigned { x } else { _mm512_abs_epi64(x) };
            let held = _mm512_cmple_epu64_mask(a, held_limit);
            let (mut r, mut bad) = (_mm512_setzero_si512(), 0u8);
            if held != 0 {
                let xf = if unsigned { _mm512_cvtepu64_pd(x) } else { _mm512_cvtepi64_pd(x) };
                let t = _mm512_mul_pd(xf, f);
                r = if unsigned { _mm512_cvttpd_epu64(t) } else { _mm512_cvttpd_epi64(t) };
                bad = _mm512_mask_cmpeq_epi64_mask(held, r, indefinite);
            }
            if held != 0xFF {
                // a * m as 128 bits (hi, lo) from 32-bit limbs (a = a1 a0,
                // m = m1 m0, m1 below 2^21). u = a0 m1 + the carry out of
                // a0 m0 stays below 2^54; v = a1 m0 + u's low half below
                // 2^64 (a1 m0 is at most (2^32 - 1)^2).
                let a1 = _mm512_srli_epi64::<32>(a);
                let t00 = _mm512_mul_epu32(a, m0);
                let t01 = _mm512_mul_epu32(a, m1);
                let t10 = _mm512_mul_epu32(a1, m0);
                let t11 = _mm512_mul_epu32(a1, m1);
                let u = _mm512_add_epi64(t01, _mm512_srli_epi64::<32>(t00));
                let v = _mm512_add_epi64(t10, _mm512_and_si512(u, low32));
                let lo = _mm512_or_si512(_mm512_and_si512(t00, low32), _mm512_slli_epi64::<32>(v));
                let hi = _mm512_add_epi64(t11, _mm512_add_epi64(_mm512_srli_epi64::<32>(u), _mm512_srli_epi64::<32>(v)));
                // (hi, lo) >> s, and the bits that would stay above the
                // low word (a result past 2^64: saturates).
                let (q, over) = if near {
                    (_mm512_or_si512(_mm512_srl_epi64(lo, right), _mm512_sll_epi64(hi, left)), _mm512_srl_epi64(hi, right))
                } else {
                    (_mm512_srl_epi64(hi, right), _mm512_setzero_si512())
                };
                let exact = !held;
                bad |= _mm512_mask_test_epi64_mask(exact, over, over);
                let q = if unsigned {
                    q
                } else {
                    // int64: magnitudes of 2^63 and more saturate (-2^63
                    // itself is left to the scalar path too); the sign is
                    // x's times the factor's.
                    bad |= _mm512_mask_cmpge_epu64_mask(exact, q, top);
                    let neg = _mm512_movepi64_mask(_mm512_xor_si512(x, fsign));
                    _mm512_mask_sub_epi64(q, neg, _mm512_setzero_si512(), q)
                };
                r = _mm512_mask_blend_epi64(exact, r, q);
            }
            if bad != 0 {
                c.iter_mut().for_each(|v| *v = scalar(*v));
                continue;
            }
            _mm512_storeu_si512(p as *mut _, r);
        }
    }
    chunks.into_remainder().iter_mut().for_each(|v| *v = scalar(*v));
}

#[cfg(test)]
mod tests {
    use crate::dtype::Arith;
    use proptest::prelude::*;

    /// Whether this machine runs the kernel (a test of it skips elsewhere).
    fn runs_here() -> bool {
        let mut probe = [0i64; 8];
        super::scale_64(&mut probe, 1.0, false, |x| x)
    }

    /// Values around every edge the kernel has: 2^53 (the float path's
    /// end), 2^63 (the exact path's), 2^32 (the limbs), the type's ends,
    /// zero, and random ones of every size.
    fn value() -> impl Strategy<Value = i64> {
        let t53 = 1i64 << 53;
        let edges = [0, 1, -1, 3, t53, t53 + 1, t53 - 1, -t53, -t53 - 1, -t53 + 1, 1 << 32, (1 << 32) - 1, i64::MAX, i64::MIN, i64::MIN + 1, (1 << 62) + 1];
        prop_oneof![
            proptest::sample::select(edges.to_vec()),
            (-(1i64 << 54)..(1i64 << 54)),
            (-1000i64..1000),
            any::<i64>(),
            any::<i64>().prop_map(|x| x >> 3),
        ]
    }

    /// Factors of every exponent the kernel takes (and the ones it leaves
    /// to the caller: non-finite, 2^52 and more, negative for uint64).
    fn factor() -> impl Strategy<Value = f64> {
        let edges = [
            1.0, -1.0, 0.0, -0.0, 0.5, 2.0, 3.0, 1.0 / 3.0, 0.1, 1e-300, 5e-324, 1e300, 4503599627370496.0, 4503599627370495.5, 2.0f64.powi(-64),
            2.0f64.powi(-63), 2.0f64.powi(-11), 1.0 + f64::EPSILON, 1.0 - f64::EPSILON / 2.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY,
        ];
        prop_oneof![proptest::sample::select(edges.to_vec()), any::<f64>(), -4.0f64..4.0, (-70i32..60).prop_map(|e| 1.5f64 * 2.0f64.powi(e))]
    }

    /// Whole slices (vectors and tails; vectors mixing held and exact
    /// lanes, in- and out-of-range ones) against `Arith::scale` element by
    /// element, for int64 and uint64; fails if the kernel rounds,
    /// multiplies, shifts or saturates differently anywhere.
    #[test]
    fn avx512_scale_is_the_scalar_scale() {
        if !runs_here() {
            return;
        }
        let config = ProptestConfig { cases: 6000, rng_seed: proptest::test_runner::RngSeed::Fixed(83), ..ProptestConfig::default() };
        proptest!(config, |(xs in proptest::collection::vec(value(), 0..40), f in factor())| {
            let mut got = xs.clone();
            if super::scale_64(&mut got, f, false, |x| i64::scale(x, f)) {
                let want: Vec<i64> = xs.iter().map(|&x| i64::scale(x, f)).collect();
                prop_assert_eq!(&got, &want, "int64 factor {:e}", f);
            } else {
                prop_assert_eq!(&got, &xs, "refused, yet changed");
            }
            let mut got = xs.clone();
            if super::scale_64(&mut got, f, true, |x| u64::scale(x as u64, f) as i64) {
                let want: Vec<i64> = xs.iter().map(|&x| u64::scale(x as u64, f) as i64).collect();
                prop_assert_eq!(&got, &want, "uint64 factor {:e}", f);
            }
        });
    }

    /// Whole vectors of one kind of lane (all held, all exact), where the
    /// kernel takes one path only, at every shift of the exact path's two
    /// branches (below 64, 64 and more) and at the saturation edges.
    #[test]
    fn avx512_scale_at_the_edges() {
        if !runs_here() {
            return;
        }
        let t53 = 1i64 << 53;
        let rows: [Vec<i64>; 4] = [
            (0..16).map(|k| t53 + 1 + k * 977).collect(),
            (0..16).map(|k| -(t53 + 1) - k * 12_345_679).collect(),
            (0..16).map(|k| i64::MAX - k).chain((0..16).map(|k| i64::MIN + k)).collect(),
            (0..16).map(|k| (k - 8) * 3).collect(),
        ];
        for e in -120..0 {
            for f in [2.0f64.powi(e), -(2.0f64.powi(e)), 1.75 * 2.0f64.powi(e), 2.0f64.powi(e + 1) - 2.0f64.powi(e - 52)] {
                for xs in &rows {
                    let mut got = xs.clone();
                    assert!(super::scale_64(&mut got, f, false, |x| i64::scale(x, f)));
                    let want: Vec<i64> = xs.iter().map(|&x| i64::scale(x, f)).collect();
                    assert_eq!(got, want, "int64 factor {f:e}");
                    let mut got = xs.clone();
                    if super::scale_64(&mut got, f, true, |x| u64::scale(x as u64, f) as i64) {
                        let want: Vec<i64> = xs.iter().map(|&x| u64::scale(x as u64, f) as i64).collect();
                        assert_eq!(got, want, "uint64 factor {f:e}");
                    }
                }
            }
        }
    }
}
