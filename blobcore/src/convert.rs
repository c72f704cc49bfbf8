//! Element conversion between dtypes: one routine per pair, each rounding
//! once from the exact source value with round-to-nearest-even.
//!
//! Every source value is exactly `(-1)^neg * mag * 2^exp` with a 64-bit
//! `mag` (all integers up to 64 bits and every float of 53 significant
//! bits or fewer), so one routine, [`round_float`], rounds any of them into
//! any binary float format. The pairs where a primitive conversion is
//! already exact or correctly rounded use it (f64 -> f32 and integer ->
//! f32/f64 are correctly rounded by Rust's `as`; widening is exact); the
//! others — float64 and 32/64-bit integers into float16 and bfloat16,
//! float32 into bfloat16 — go through this module, never through a detour
//! that rounds twice (f64 -> f32 -> f16 would).
//!
//! - NaN stays NaN with its sign: float16 keeps the top payload bits as
//!   NumPy does (never turning a NaN into an infinity); bfloat16 gets the
//!   canonical quiet NaN `0x7fc0` as ml_dtypes does.
//! - Overflow rounds to infinity (as IEEE round-to-nearest, NumPy and
//!   ml_dtypes), tiny values to subnormals or signed zero.
//! - Float to integer truncates toward zero and saturates at the target's
//!   range; NaN becomes 0 (Rust's `as`, the documented rule).
//! - Integer to integer wraps modulo 2^bits (C and NumPy).

use half::{bf16, f16};

/// A binary floating-point format with IEEE infinities and NaNs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Format {
    /// Exponent field width in bits.
    pub exp_bits: u32,
    /// Stored mantissa (fraction) width in bits.
    pub man_bits: u32,
}

/// IEEE binary16.
pub(crate) const F16: Format = Format { exp_bits: 5, man_bits: 10 };
/// bfloat16: float32's exponent, 7 mantissa bits.
pub(crate) const BF16: Format = Format { exp_bits: 8, man_bits: 7 };
/// IEEE binary32.
#[cfg(test)]
pub(crate) const F32: Format = Format { exp_bits: 8, man_bits: 23 };

/// Rounds `(-1)^neg * mag * 2^exp` to the nearest value of `fmt` (ties to
/// even), returning its bit pattern. Values past the largest finite one
/// by half an ulp or more become infinity.
pub(crate) fn round_float(neg: bool, mag: u64, exp: i32, fmt: Format) -> u64 {
    let sign = (neg as u64) << (fmt.exp_bits + fmt.man_bits);
    if mag == 0 {
        return sign;
    }
    let mb = fmt.man_bits as i32;
    let bias = (1i32 << (fmt.exp_bits - 1)) - 1;
    let emin = 1 - bias;
    // The value is 1.f * 2^e with e the position of mag's top bit plus exp.
    let e = 63 - mag.leading_zeros() as i32 + exp;
    // The quantum (weight of the last mantissa bit) at this magnitude;
    // subnormals share the smallest normal exponent's quantum.
    let q = e.max(emin) - mb;
    let shift = q - exp;
    let r: u64 = if shift <= 0 {
        // Exact: fewer significant bits than the mantissa holds.
        mag << (-shift) as u32
    } else if shift >= 66 {
        0 // far below half the smallest subnormal
    } else {
        let m = mag as u128;
        let s = shift as u32;
        let kept = m >> s;
        let rest = m & ((1u128 << s) - 1);
        let half = 1u128 << (s - 1);
        let up = rest > half || (rest == half && kept & 1 == 1);
        (kept + up as u128) as u64
    };
    // Subnormals (q at its minimum, r below 2^mb) encode with a zero
    // exponent field; a carry into 2^mb or 2^(mb+1) lands in the exponent
    // field by the addition itself.
    let bits = (((q - (emin - mb)) as u64) << mb) + r;
    let inf = ((1u64 << fmt.exp_bits) - 1) << mb;
    sign | bits.min(inf)
}

/// The exact value of a finite f64 as (neg, mag, exp), or None for NaN
/// and infinities.
#[inline]
fn split_f64(x: f64) -> Option<(bool, u64, i32)> {
    let b = x.to_bits();
    let neg = b >> 63 == 1;
    let ef = ((b >> 52) & 0x7ff) as i32;
    let f = b & ((1u64 << 52) - 1);
    match ef {
        0x7ff => None,
        0 => Some((neg, f, -1074)),
        _ => Some((neg, f | (1u64 << 52), ef - 1075)),
    }
}

/// float64 to float16, rounded once (NumPy's `astype(float16)`).
#[inline]
pub(crate) fn f64_to_f16(x: f64) -> f16 {
    match split_f64(x) {
        Some((neg, mag, exp)) => f16::from_bits(round_float(neg, mag, exp, F16) as u16),
        None => {
            let b = x.to_bits();
            let sign = ((b >> 48) & 0x8000) as u16;
            let payload = b & ((1u64 << 52) - 1);
            if payload == 0 {
                f16::from_bits(sign | 0x7c00)
            } else {
                // NumPy: the payload's top 10 bits, kept a NaN.
                let top = (payload >> 42) as u16;
                f16::from_bits(sign | 0x7c00 | if top == 0 { 1 } else { top })
            }
        }
    }
}

/// float64 to bfloat16, rounded once (ml_dtypes rounds through float32,
/// which can round twice; blobcore does not).
#[inline]
pub(crate) fn f64_to_bf16(x: f64) -> bf16 {
    match split_f64(x) {
        Some((neg, mag, exp)) => bf16::from_bits(round_float(neg, mag, exp, BF16) as u16),
        None => {
            let sign = ((x.to_bits() >> 48) & 0x8000) as u16;
            bf16::from_bits(sign | if x.is_nan() { 0x7fc0 } else { 0x7f80 })
        }
    }
}

/// float32 to bfloat16, rounded to nearest even from the float32 bits
/// (ml_dtypes' `astype(bfloat16)`); NaN becomes the quiet NaN `0x7fc0`
/// with the sign kept.
#[inline]
pub(crate) fn f32_to_bf16(x: f32) -> bf16 {
    let b = x.to_bits();
    if x.is_nan() {
        return bf16::from_bits(((b >> 16) as u16 & 0x8000) | 0x7fc0);
    }
    // Adding 0x7fff plus the lowest kept bit rounds half to even; a carry
    // out of the mantissa increments the exponent (up to infinity).
    let lsb = (b >> 16) & 1;
    bf16::from_bits((b.wrapping_add(0x7fff + lsb) >> 16) as u16)
}

/// float32 to float16, rounded to nearest even (`half`'s conversion,
/// checked over every float32 bit pattern by the tests below).
#[inline]
pub(crate) fn f32_to_f16(x: f32) -> f16 {
    f16::from_f32(x)
}

/// A signed 64-bit integer to float16, rounded once.
#[inline]
pub(crate) fn i64_to_f16(v: i64) -> f16 {
    f16::from_bits(round_float(v < 0, v.unsigned_abs(), 0, F16) as u16)
}

/// A signed 64-bit integer to bfloat16, rounded once (ml_dtypes rounds
/// 32- and 64-bit integers through float32; blobcore does not).
#[inline]
pub(crate) fn i64_to_bf16(v: i64) -> bf16 {
    bf16::from_bits(round_float(v < 0, v.unsigned_abs(), 0, BF16) as u16)
}

/// float16 to float32 (exact).
#[inline]
pub(crate) fn f16_to_f32(x: f16) -> f32 {
    x.to_f32()
}

/// bfloat16 to float32 (exact: the bits shifted up).
#[inline]
pub(crate) fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits((x.to_bits() as u32) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An independent reference: the two neighbours of `x` in the target
    /// (from a table of every finite positive value, by binary search),
    /// compared by exact distance in f64 (Sterbenz: the differences of
    /// such close values are exact), ties to the even mantissa.
    fn reference_16(x: f64, table: &[f64], inf_at: f64) -> u16 {
        let sign = if x.is_sign_negative() { 0x8000u16 } else { 0 };
        let a = x.abs();
        if a >= inf_at {
            return sign | (table.len() as u16); // the infinity pattern follows the finite ones
        }
        // table[i] is the value of bit pattern i (positive, finite).
        let i = table.partition_point(|&v| v <= a) - 1;
        if table[i] == a || i + 1 == table.len() {
            return sign | i as u16;
        }
        let (lo, hi) = (table[i], table[i + 1]);
        let (dl, dh) = (a - lo, hi - a);
        let pick = if dl < dh || (dl == dh && i % 2 == 0) { i } else { i + 1 };
        sign | pick as u16
    }

    fn table(fmt: Format) -> (Vec<f64>, f64) {
        let n = (((1u64 << fmt.exp_bits) - 1) << fmt.man_bits) as usize;
        let v: Vec<f64> = (0..n)
            .map(|b| {
                let bits = b as u64;
                let e = (bits >> fmt.man_bits) as i32;
                let m = bits & ((1 << fmt.man_bits) - 1);
                let bias = (1i32 << (fmt.exp_bits - 1)) - 1;
                if e == 0 {
                    m as f64 * 2f64.powi(1 - bias - fmt.man_bits as i32)
                } else {
                    (m | (1 << fmt.man_bits)) as f64 * 2f64.powi(e - bias - fmt.man_bits as i32)
                }
            })
            .collect();
        // Half an ulp above the largest finite value rounds to infinity
        // (the largest has an odd mantissa, so the tie goes up).
        let max = v[n - 1];
        let ulp = max - v[n - 2];
        (v, max + ulp / 2.0)
    }

    #[test]
    fn generic_rounding_matches_the_reference_on_constructed_cases() {
        for fmt in [F16, BF16] {
            let (t, inf_at) = table(fmt);
            let mut cases = vec![0.0f64, -0.0, 1.0, 1.5, 65504.0, 65519.99, 65520.0, 1e-8, 3e-8, 5.960464477539063e-8, 2.9802322387695312e-8, 2.98023223876953125e-8 * 1.0000001];
            for i in 0..t.len() - 1 {
                // each value, the midpoints, and just around them
                let mid = t[i] + (t[i + 1] - t[i]) / 2.0;
                cases.extend([t[i], mid, f64::from_bits(mid.to_bits() + 1), f64::from_bits(mid.to_bits() - 1)]);
            }
            for &x in &cases {
                for x in [x, -x] {
                    let (neg, mag, exp) = split_f64(x).unwrap();
                    let got = round_float(neg, mag, exp, fmt) as u16;
                    assert_eq!(got, reference_16(x, &t, inf_at), "{x:e} in {fmt:?}");
                }
            }
        }
    }

    #[test]
    fn known_double_rounding_cases_round_once() {
        // 1 + 2^-11 + 2^-40: through f32 it becomes the tie 1 + 2^-11 and
        // rounds to even (1.0); once, it is above the tie.
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11) + 2f64.powi(-40)).to_bits(), 0x3c01);
        assert_eq!(f64_to_f16(2049.0000001).to_f32(), 2050.0);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f808001)).to_bits(), 0x3f81);
        assert_eq!(f64_to_bf16(f32::from_bits(0x3f808001) as f64).to_bits(), 0x3f81);
        // 1 + 2^-8 + 2^-30 in f64 -> bf16: once is up; via f32 (1 + 2^-8, a tie) it would be 1.0
        assert_eq!(f64_to_bf16(1.0 + 2f64.powi(-8) + 2f64.powi(-30)).to_bits(), 0x3f81);
        // integers: 2^24 + 1 + 2^? ... i64 values whose f32 rounding makes a tie
        let v: i64 = (1 << 32) + (1 << 24) + 1; // bf16 quantum at 2^32 is 2^25: just above the tie
        assert_eq!(i64_to_bf16(v).to_bits(), bf16::from_f32(((1u64 << 32) + (1 << 25)) as f32).to_bits());
        assert_eq!(i64_to_f16(65520).to_bits(), 0x7c00);
        assert_eq!(i64_to_f16(-65519).to_bits(), 0xfbff);
        assert_eq!(i64_to_f16(i64::MIN).to_bits(), 0xfc00);
        assert_eq!(i64_to_bf16(i64::MIN).to_bits(), 0xdf00);
        assert!(f64_to_f16(f64::NAN).is_nan() && f64_to_bf16(-f64::NAN).to_bits() == 0xffc0);
        assert_eq!(f64_to_f16(f64::NEG_INFINITY).to_bits(), 0xfc00);
        assert_eq!(f64_to_bf16(1e300).to_bits(), 0x7f80);
        assert_eq!(f64_to_f16(-1e-300).to_bits(), 0x8000);
        assert_eq!(f64_to_f16(f64::from_bits(1)).to_bits(), 0);
    }

    /// Every float32 bit pattern into bfloat16 and float16, against
    /// independent references: for bfloat16 the two neighbours compared by
    /// exact distance; for float16 the generic rounding routine (a
    /// different algorithm from `half`'s and the processor's). Release
    /// mode only (2^32 conversions each); `make test` runs it.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "exhaustive: run in release mode")]
    fn every_f32_pattern_to_bf16_and_f16() {
        use rayon::prelude::*;
        let bad: u64 = (0u64..1 << 16)
            .into_par_iter()
            .map(|hi| {
                let mut bad = 0u64;
                for lo in 0u64..1 << 16 {
                    let bits = ((hi << 16) | lo) as u32;
                    let x = f32::from_bits(bits);
                    // bfloat16
                    let got = f32_to_bf16(x).to_bits();
                    let want = if x.is_nan() {
                        ((bits >> 16) as u16 & 0x8000) | 0x7fc0
                    } else {
                        let lo_c = (bits >> 16) as u16; // toward zero
                        let tl = f32::from_bits((lo_c as u32) << 16) as f64;
                        let th = f32::from_bits(((lo_c as u32) + 1) << 16) as f64;
                        // Past the largest finite value, infinity stands
                        // where 2^128 would be (IEEE's overflow rule).
                        let th = if th.is_infinite() { 2f64.powi(128).copysign(th) } else { th };
                        let a = x as f64;
                        if tl == a {
                            lo_c
                        } else {
                            let (dl, dh) = ((a - tl).abs(), (th - a).abs());
                            if dl < dh || (dl == dh && lo_c % 2 == 0) { lo_c } else { lo_c + 1 }
                        }
                    };
                    if got != want {
                        if bad < 3 { eprintln!("bf16 {bits:#x}: got {got:#x} want {want:#x}"); }
                        bad += 1;
                    }
                    // float16: half's conversion (the processor's F16C
                    // instruction where it has one) against the generic
                    // rounding routine, itself checked against the table
                    // reference at every boundary above.
                    let got = f32_to_f16(x).to_bits();
                    let want = match split_f64(x as f64) {
                        Some((neg, mag, exp)) => round_float(neg, mag, exp, F16) as u16,
                        None if x.is_nan() => got,
                        None => ((bits >> 16) as u16 & 0x8000) | 0x7c00,
                    };
                    let nan_ok = !x.is_nan() || (f16::from_bits(got).is_nan() && (got & 0x8000) == ((bits >> 16) as u16 & 0x8000));
                    if got != want || !nan_ok {
                        if bad < 3 { eprintln!("f16 {bits:#x}: got {got:#x} want {want:#x}"); }
                        bad += 1;
                    }
                }
                bad
            })
            .sum();
        assert_eq!(bad, 0, "{bad} float32 patterns convert wrongly");
    }

    /// Every float16 and bfloat16 pattern widens exactly and narrows back
    /// to itself (NaNs stay NaNs with their sign).
    #[test]
    fn sixteen_bit_patterns_round_trip() {
        for b in 0..=u16::MAX {
            let h = f16::from_bits(b);
            let w = f16_to_f32(h);
            if h.is_nan() {
                assert!(f32_to_f16(w).is_nan() && f64_to_f16(w as f64).is_nan(), "{b:#x}");
                continue;
            }
            assert_eq!(f32_to_f16(w).to_bits(), b, "{b:#x}");
            assert_eq!(f64_to_f16(w as f64).to_bits(), f32_to_f16(w).to_bits(), "{b:#x}");
        }
        for b in 0..=u16::MAX {
            let g = bf16::from_bits(b);
            let w = bf16_to_f32(g);
            if !g.is_nan() {
                assert_eq!(f32_to_bf16(w).to_bits(), b);
                assert_eq!(f64_to_bf16(w as f64).to_bits(), b);
            }
        }
        let _ = F32;
    }
}
