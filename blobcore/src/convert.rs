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
//! The float8 formats ([`crate::float8`]) use the same routine: their
//! [`Kind`] says what the top of the range and NaN look like.
//!
//! - NaN stays NaN with its sign: float16 keeps the top payload bits as
//!   NumPy does (never turning a NaN into an infinity); bfloat16 and
//!   float8_e5m2 get the canonical quiet NaN (`0x7fc0`, `0x7e`) as
//!   ml_dtypes does; float8_e4m3fn its one NaN per sign; float8_e8m0fnu
//!   `0xff`.
//! - Overflow rounds to infinity (as IEEE round-to-nearest, NumPy and
//!   ml_dtypes), or to NaN in the formats without infinities (ml_dtypes);
//!   tiny values to subnormals or signed zero (float8_e8m0fnu: to its
//!   smallest value, 2^-127; zero and negatives are NaN there).
//! - Float to integer truncates toward zero and saturates at the target's
//!   range; NaN becomes 0 (Rust's `as`, the documented rule).
//! - Integer to integer wraps modulo 2^bits (C and NumPy).

use half::{bf16, f16};

/// What a format keeps at the top of its exponent range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// IEEE: the all-ones exponent holds infinity (mantissa 0) and NaNs.
    Ieee,
    /// "fn" (finite, NaN): no infinities; only the all-ones pattern
    /// (per sign) is NaN, the rest of the top exponent is finite.
    FiniteNan,
    /// "fnu": unsigned, exponent only, no zero, no subnormals; the
    /// all-ones byte is NaN.
    ExponentOnly,
}

/// A binary floating-point format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Format {
    /// Exponent field width in bits.
    pub exp_bits: u32,
    /// Stored mantissa (fraction) width in bits.
    pub man_bits: u32,
    /// Infinities, NaNs and sign.
    pub kind: Kind,
}

/// IEEE binary16.
pub(crate) const F16: Format = Format { exp_bits: 5, man_bits: 10, kind: Kind::Ieee };
/// bfloat16: float32's exponent, 7 mantissa bits.
pub(crate) const BF16: Format = Format { exp_bits: 8, man_bits: 7, kind: Kind::Ieee };
/// float8_e4m3fn.
pub(crate) const F8E4M3FN: Format = Format { exp_bits: 4, man_bits: 3, kind: Kind::FiniteNan };
/// float8_e5m2.
pub(crate) const F8E5M2: Format = Format { exp_bits: 5, man_bits: 2, kind: Kind::Ieee };
/// float8_e8m0fnu.
pub(crate) const F8E8M0FNU: Format = Format { exp_bits: 8, man_bits: 0, kind: Kind::ExponentOnly };
/// IEEE binary32.
pub(crate) const F32: Format = Format { exp_bits: 8, man_bits: 23, kind: Kind::Ieee };

impl Format {
    /// The bit pattern of NaN with the given sign: the canonical quiet NaN
    /// (top mantissa bit) for IEEE formats, all ones otherwise.
    #[inline]
    pub(crate) fn nan(self, neg: bool) -> u64 {
        let ones = ((1u64 << self.exp_bits) - 1) << self.man_bits;
        match self.kind {
            Kind::Ieee => self.sign(neg) | ones | (1 << (self.man_bits - 1)),
            Kind::FiniteNan => self.sign(neg) | ones | ((1 << self.man_bits) - 1),
            Kind::ExponentOnly => ones,
        }
    }

    /// Infinity with the given sign, or NaN where the format has none.
    #[inline]
    pub(crate) fn inf(self, neg: bool) -> u64 {
        match self.kind {
            Kind::Ieee => self.sign(neg) | ((1u64 << self.exp_bits) - 1) << self.man_bits,
            _ => self.nan(neg),
        }
    }

    #[inline]
    fn sign(self, neg: bool) -> u64 {
        match self.kind {
            Kind::ExponentOnly => 0,
            _ => (neg as u64) << (self.exp_bits + self.man_bits),
        }
    }
}

/// Rounds `(-1)^neg * mag * 2^exp` to the nearest value of `fmt` (ties to
/// even), returning its bit pattern. Values past the largest finite one
/// by half an ulp or more become infinity (NaN in formats without one).
/// The exponent-only format rounds ties up, as ml_dtypes does.
pub(crate) fn round_float(neg: bool, mag: u64, exp: i32, fmt: Format) -> u64 {
    if fmt.kind == Kind::ExponentOnly {
        return round_exponent_only(neg, mag, exp, fmt);
    }
    let sign = fmt.sign(neg);
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
    } else if shift < 64 {
        let s = shift as u32;
        let kept = mag >> s;
        let rest = mag & ((1u64 << s) - 1);
        let half = 1u64 << (s - 1);
        let up = rest > half || (rest == half && kept & 1 == 1);
        kept + up as u64
    } else {
        // Nothing is kept; only above half of 2^shift (2^63 when shift is
        // 64, beyond any u64 when it is larger) rounds up, and the tie
        // goes to the even 0.
        (shift == 64 && mag > 1u64 << 63) as u64
    };
    // Subnormals (q at its minimum, r below 2^mb) encode with a zero
    // exponent field; a carry into 2^mb or 2^(mb+1) lands in the exponent
    // field by the addition itself.
    let bits = (((q - (emin - mb)) as u64) << mb) + r;
    match fmt.kind {
        Kind::Ieee => sign | bits.min(fmt.inf(false)),
        // The all-ones pattern and anything past it (an overflow) is NaN.
        _ if bits >= fmt.nan(false) => fmt.nan(neg),
        _ => sign | bits,
    }
}

/// [`round_float`] into an exponent-only format: 2^e or 2^(e+1), the
/// latter from 1.5 * 2^e up (ties up, as ml_dtypes); below the smallest
/// power the smallest (the nearest value: there is no zero); zero,
/// negatives and overflow are NaN.
fn round_exponent_only(neg: bool, mag: u64, exp: i32, fmt: Format) -> u64 {
    let nan = fmt.nan(false);
    if neg || mag == 0 {
        return nan;
    }
    let top = 63 - mag.leading_zeros() as i32;
    let up = top > 0 && (mag >> (top - 1)) & 1 == 1;
    let bias = (1i64 << (fmt.exp_bits - 1)) - 1;
    let field = (top + exp) as i64 + up as i64 + bias;
    if field >= nan as i64 {
        nan
    } else {
        field.max(0) as u64
    }
}

/// The exact value of a finite f32 as (neg, mag, exp), or None for NaN
/// and infinities.
#[inline]
fn split_f32(x: f32) -> Option<(bool, u64, i32)> {
    let b = x.to_bits();
    let neg = b >> 31 == 1;
    let ef = ((b >> 23) & 0xff) as i32;
    let f = (b & ((1u32 << 23) - 1)) as u64;
    match ef {
        0xff => None,
        0 => Some((neg, f, -149)),
        _ => Some((neg, f | (1u64 << 23), ef - 150)),
    }
}

/// float64 into `fmt` (bfloat16 or a float8 format), rounded once; NaN to
/// the format's NaN with its sign, infinities to infinity (NaN where the
/// format has none).
#[inline]
pub(crate) fn f64_to_format(x: f64, fmt: Format) -> u64 {
    match split_f64(x) {
        Some((neg, mag, exp)) => round_float(neg, mag, exp, fmt),
        None => {
            let neg = x.to_bits() >> 63 == 1;
            if x.is_nan() { fmt.nan(neg) } else { fmt.inf(neg) }
        }
    }
}

/// float32 into `fmt` (bfloat16 or a float8 format), rounded once.
#[inline]
pub(crate) fn f32_to_format(x: f32, fmt: Format) -> u64 {
    match split_f32(x) {
        Some((neg, mag, exp)) => round_float(neg, mag, exp, fmt),
        None => {
            let neg = x.to_bits() >> 31 == 1;
            if x.is_nan() { fmt.nan(neg) } else { fmt.inf(neg) }
        }
    }
}

/// A signed 64-bit integer into `fmt`, rounded once.
#[inline]
pub(crate) fn i64_to_format(v: i64, fmt: Format) -> u64 {
    round_float(v < 0, v.unsigned_abs(), 0, fmt)
}

/// The integer `(-1)^neg * m` into `fmt`, rounded once. Magnitudes past
/// 64 bits keep their top 64 bits with the rest folded into the lowest
/// (a sticky bit: round to odd), which leaves the rounding to `fmt` exact
/// because 64 bits exceed every format's precision by at least two.
pub(crate) fn u128_to_format(neg: bool, m: u128, fmt: Format) -> u64 {
    let bits = 128 - m.leading_zeros();
    if bits <= 64 {
        return round_float(neg, m as u64, 0, fmt);
    }
    let shift = bits - 64;
    let sticky = (m & ((1u128 << shift) - 1) != 0) as u64;
    round_float(neg, (m >> shift) as u64 | sticky, shift as i32, fmt)
}

/// An unsigned 64-bit integer into `fmt`, rounded once.
#[inline]
pub(crate) fn u64_to_format(v: u64, fmt: Format) -> u64 {
    round_float(false, v, 0, fmt)
}

/// A float8 pattern of `fmt` as a float32 (exact: every float8 value is
/// a float32 value, subnormals included).
#[inline]
pub(crate) fn f8_to_f32(bits: u8, fmt: Format) -> f32 {
    let b = bits as u32;
    let mb = fmt.man_bits;
    let bias = (1i32 << (fmt.exp_bits - 1)) - 1;
    // 2^k as a float32, for k in float32's normal range.
    let pow2 = |k: i32| f32::from_bits(((k + 127) as u32) << 23);
    if fmt.kind == Kind::ExponentOnly {
        return match b {
            0xff => f32::NAN,
            0 => f32::from_bits(1 << 22), // 2^-127, a float32 subnormal
            _ => pow2(b as i32 - bias),
        };
    }
    let neg = b >> (fmt.exp_bits + mb) & 1 == 1;
    let e = ((b >> mb) & ((1 << fmt.exp_bits) - 1)) as i32;
    let m = b & ((1 << mb) - 1);
    let all = (1i32 << fmt.exp_bits) - 1;
    let mag = if fmt.kind == Kind::Ieee && e == all {
        if m == 0 { f32::INFINITY } else { f32::NAN }
    } else if fmt.kind == Kind::FiniteNan && e == all && m == (1 << mb) - 1 {
        f32::NAN
    } else if e == 0 {
        m as f32 * pow2(1 - bias - mb as i32)
    } else {
        (m | 1 << mb) as f32 * pow2(e - bias - mb as i32)
    };
    if neg { -mag } else { mag }
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
    bf16::from_bits(f64_to_format(x, BF16) as u16)
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
    bf16::from_bits(i64_to_format(v, BF16) as u16)
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
#[allow(clippy::excessive_precision)] // exact halfway and boundary cases, digit for digit
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
                            if dl < dh || (dl == dh && lo_c.is_multiple_of(2)) { lo_c } else { lo_c + 1 }
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
    }

    // ------------------------------------------------------------ float8

    const F8S: [Format; 3] = [F8E4M3FN, F8E5M2, F8E8M0FNU];

    /// The value of a float8 pattern by the formats' definitions, in f64
    /// (written from the table in `float8.rs`, apart from `f8_to_f32`).
    fn f8_value(bits: u8, fmt: Format) -> f64 {
        let b = bits as i32;
        if fmt == F8E8M0FNU {
            return if b == 0xff { f64::NAN } else { 2f64.powi(b - 127) };
        }
        let (eb, mb) = (fmt.exp_bits as i32, fmt.man_bits as i32);
        let s = if b >> (eb + mb) & 1 == 1 { -1.0 } else { 1.0 };
        let e = (b >> mb) & ((1 << eb) - 1);
        let m = b & ((1 << mb) - 1);
        let bias = (1 << (eb - 1)) - 1;
        if e == (1 << eb) - 1 {
            if fmt == F8E5M2 {
                return if m == 0 { s * f64::INFINITY } else { f64::NAN };
            }
            if m == (1 << mb) - 1 {
                return f64::NAN;
            }
        }
        if e == 0 {
            s * m as f64 * 2f64.powi(1 - bias - mb)
        } else {
            s * (m + (1 << mb)) as f64 * 2f64.powi(e - bias - mb)
        }
    }

    /// Every finite non-negative value of `fmt` with its pattern, ascending.
    fn f8_table(fmt: Format) -> Vec<(f64, u8)> {
        let mut t: Vec<(f64, u8)> = (0..=255u8)
            .map(|b| (f8_value(b, fmt), b))
            .filter(|(v, b)| v.is_finite() && v.is_sign_positive() && (*v != 0.0 || *b == 0))
            .collect();
        t.sort_by(|a, b| a.0.total_cmp(&b.0));
        t
    }

    /// The independent reference: the nearest table value by exact
    /// distance (f64 differences of close values are exact), ties to the
    /// even pattern (up for e8m0fnu, as ml_dtypes); past the top, the
    /// next step up would be infinity (e5m2) or NaN.
    fn f8_reference(x: f64, fmt: Format, t: &[(f64, u8)]) -> u8 {
        f8_reference_at(x, fmt, t, t.partition_point(|p| p.0 <= x.abs()))
    }

    /// [`f8_reference`] given `i`, the number of table values <= |x|.
    fn f8_reference_at(x: f64, fmt: Format, t: &[(f64, u8)], i: usize) -> u8 {
        let nan = || fmt.nan(x.is_sign_negative()) as u8;
        if x.is_nan() {
            return nan();
        }
        let unsigned = fmt == F8E8M0FNU;
        if unsigned && (x <= 0.0) {
            return nan();
        }
        let sign = if x.is_sign_negative() { 0x80u8 } else { 0 };
        let a = x.abs();
        let (lo, lo_bits) = if i == 0 { (f64::NEG_INFINITY, 0) } else { t[i - 1] };
        if lo == a {
            return sign | lo_bits;
        }
        // The value above the table: one step past the largest finite one.
        let (hi, hi_bits) = if i < t.len() {
            t[i]
        } else {
            let top = t[t.len() - 1].0;
            let step = if unsigned { top } else { top - t[t.len() - 2].0 };
            (top + step, fmt.inf(false) as u8)
        };
        if i == 0 {
            return sign | hi_bits;
        }
        let (dl, dh) = (a - lo, hi - a);
        let down = dl < dh || (dl == dh && !unsigned && lo_bits % 2 == 0);
        let bits = if down { lo_bits } else { hi_bits };
        if fmt.kind != Kind::Ieee && bits == fmt.inf(false) as u8 {
            return nan();
        }
        sign | bits
    }

    fn f8_bits_eq(got: u8, want: u8, fmt: Format) -> bool {
        // Equal patterns first: the exhaustive test calls this 2^33 times
        // per format, and decoding both patterns is most of its time.
        got == want || {
            let (g, w) = (f8_value(got, fmt), f8_value(want, fmt));
            g.is_nan() && w.is_nan() && (fmt == F8E8M0FNU || got >> 7 == want >> 7)
        }
    }

    #[test]
    fn every_float8_pattern_widens_exactly_and_narrows_back() {
        for fmt in F8S {
            for b in 0..=255u8 {
                let w = f8_to_f32(b, fmt);
                let v = f8_value(b, fmt);
                assert!(w as f64 == v || (w.is_nan() && v.is_nan()), "{fmt:?} {b:#x}: {w} vs {v}");
                assert!(f8_bits_eq(f32_to_format(w, fmt) as u8, b, fmt), "{fmt:?} {b:#x}");
                assert!(f8_bits_eq(f64_to_format(w as f64, fmt) as u8, b, fmt), "{fmt:?} {b:#x}");
            }
        }
        // The formats' landmarks (ml_dtypes' finfo).
        assert_eq!(f8_to_f32(0x7e, F8E4M3FN), 448.0);
        assert_eq!(f8_to_f32(0x01, F8E4M3FN), 2f32.powi(-9));
        assert_eq!(f8_to_f32(0x7b, F8E5M2), 57344.0);
        assert_eq!(f8_to_f32(0x7c, F8E5M2), f32::INFINITY);
        assert_eq!(f8_to_f32(0x01, F8E5M2), 2f32.powi(-16));
        assert_eq!(f8_to_f32(0x00, F8E8M0FNU), 2f32.powi(-127));
        assert_eq!(f8_to_f32(0xfe, F8E8M0FNU), 2f32.powi(127));
        assert_eq!(f8_to_f32(0x7f, F8E8M0FNU), 1.0);
    }

    #[test]
    fn float8_rounding_matches_the_reference_and_ml_dtypes_landmarks() {
        for fmt in F8S {
            let t = f8_table(fmt);
            let mut cases = vec![0.0, -0.0, 1e-300, -1e-300, 1e300, -1e300, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, -f64::NAN];
            for w in t.windows(2) {
                let (lo, hi) = (w[0].0, w[1].0);
                let mid = lo + (hi - lo) / 2.0;
                cases.extend([lo, mid, f64::from_bits(mid.to_bits() + 1), f64::from_bits(mid.to_bits() - 1)]);
            }
            let top = t[t.len() - 1].0;
            let step = if fmt == F8E8M0FNU { top } else { top - t[t.len() - 2].0 };
            for k in [0.49, 0.5, 0.51, 1.0, 3.0] {
                cases.push(top + step * k);
            }
            for &x in &cases {
                for x in [x, -x] {
                    let want = f8_reference(x, fmt, &t);
                    assert!(f8_bits_eq(f64_to_format(x, fmt) as u8, want, fmt), "{x:e} in {fmt:?}: got {:#x} want {want:#x}", f64_to_format(x, fmt));
                    if (x as f32) as f64 == x {
                        assert!(f8_bits_eq(f32_to_format(x as f32, fmt) as u8, want, fmt), "{x:e} f32 in {fmt:?}");
                    }
                }
            }
        }
        // ml_dtypes 0.6 (NumPy 2.4): float32 -> float8.
        let e4 = |x: f32| f32_to_format(x, F8E4M3FN) as u8;
        assert_eq!([e4(448.0), e4(464.0), e4(464.01), e4(480.0), e4(f32::INFINITY), e4(f32::NEG_INFINITY)], [0x7e, 0x7e, 0x7f, 0x7f, 0x7f, 0xff]);
        assert_eq!([e4(2f32.powi(-10)), e4(2f32.powi(-10) * 1.0001), e4(-0.0)], [0, 1, 0x80]);
        let e5 = |x: f32| f32_to_format(x, F8E5M2) as u8;
        assert_eq!([e5(57344.0), e5(61439.0), e5(61440.0), e5(f32::NAN), e5(-f32::NAN)], [0x7b, 0x7b, 0x7c, 0x7e, 0xfe]);
        let e8 = |x: f32| f32_to_format(x, F8E8M0FNU) as u8;
        assert_eq!([e8(1.5), e8(3.0), e8(2.5), e8(6.0), e8(0.75)], [128, 129, 128, 130, 127]);
        assert_eq!([e8(0.0), e8(-1.0), e8(f32::INFINITY), e8(f32::MAX), e8(f32::from_bits(1 << 20))], [255, 255, 255, 255, 0]);
        // Integers round once, from 64 bits.
        assert_eq!(i64_to_format(464, F8E4M3FN), 0x7e);
        assert_eq!(i64_to_format(-465, F8E4M3FN), 0xff);
        assert_eq!(u64_to_format(u64::MAX, F8E5M2), 0x7c);
        assert_eq!(u64_to_format(u64::MAX, F8E8M0FNU), 127 + 64);
        assert_eq!(i64_to_format(0, F8E8M0FNU), 0xff);
        assert_eq!(i64_to_format(-3, F8E5M2), 0xc2);
        // float64 -> float8 once: just above a float8 tie that float32
        // would round onto the tie (1 + 2^-4 + 2^-40 in e4m3fn is 1.125).
        assert_eq!(f64_to_format(1.0 + 2f64.powi(-4) + 2f64.powi(-40), F8E4M3FN), 0x39);
        assert_eq!(f32_to_format(1.0 + 2f32.powi(-4), F8E4M3FN), 0x38);
    }

    /// Every float32 bit pattern into the three float8 formats against the
    /// table reference. Positive patterns ascend with their values, so the
    /// reference's table position is walked rather than searched; each
    /// magnitude is checked with both signs. Release mode only; `make
    /// test` runs it.
    #[test]
    #[cfg_attr(debug_assertions, ignore = "exhaustive: run in release mode")]
    fn every_f32_pattern_to_float8() {
        use rayon::prelude::*;
        for fmt in F8S {
            let t = f8_table(fmt);
            let bad: u64 = (0u64..1 << 15)
                .into_par_iter()
                .map(|hi| {
                    let mut bad = 0u64;
                    let first = f32::from_bits((hi << 16) as u32) as f64;
                    let mut i = if first.is_nan() { 0 } else { t.partition_point(|p| p.0 <= first) };
                    for lo in 0u64..1 << 16 {
                        let x = f32::from_bits(((hi << 16) | lo) as u32);
                        let a = x as f64;
                        while i < t.len() && t[i].0 <= a {
                            i += 1;
                        }
                        for x in [x, -x] {
                            let got = f32_to_format(x, fmt) as u8;
                            let want = f8_reference_at(x as f64, fmt, &t, i);
                            if !f8_bits_eq(got, want, fmt) {
                                if bad < 3 {
                                    eprintln!("{fmt:?} {:#x}: got {got:#x} want {want:#x}", x.to_bits());
                                }
                                bad += 1;
                            }
                        }
                    }
                    bad
                })
                .sum();
            assert_eq!(bad, 0, "{bad} float32 patterns convert wrongly to {fmt:?}");
        }
    }
}
