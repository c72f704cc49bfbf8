//! `scale` on integer elements: NumPy's `trunc(x * factor)` in float64,
//! saturated to the dtype's range, wherever float64 holds `x` exactly
//! (|x| <= 2^53: every element of the dtypes but int64 and uint64);
//! beyond, where converting `x` to float64 drops its low bits
//! (`scale(1.0)` of 2^53 + 1 gave 2^53), the exact product of `x` and
//! the factor, truncated toward zero and saturated. The two agree
//! wherever the float64 product is exact (factors such as 1, -1, 2 or
//! 0.5). `Arith::scale` for the integer types (in `dtype`) chooses per
//! element, `Arith::scale_slice` per run of 256; for the dtypes of 32
//! bits and less the choice folds away, leaving the float64 loop. For
//! int64 and uint64, `scale_slice` tries the vector kernels first
//! (`integer_scale_avx512`, then `integer_scale_avx2`), which give the
//! same result for every element.

/// The factor `±m · 2^e` (`m` an integer of at most 53 bits); split per
/// element, a loop invariant the compiler lifts out of `scale_slice`.
#[derive(Clone, Copy)]
pub(crate) struct Split {
    pub(crate) negative: bool,
    pub(crate) m: u64,
    pub(crate) e: i32,
}

impl Split {
    /// None for infinities and NaN.
    #[inline]
    pub(crate) fn of(factor: f64) -> Option<Split> {
        if !factor.is_finite() {
            return None;
        }
        let bits = factor.to_bits();
        let (exp, frac) = (((bits >> 52) & 0x7ff) as i32, bits & ((1 << 52) - 1));
        let (m, e) = if exp == 0 { (frac, -1074) } else { (frac | 1 << 52, exp - 1075) };
        Some(Split { negative: factor.is_sign_negative(), m, e })
    }
}

/// `trunc(x · factor)` exactly, saturated to `[min, max]`. A non-finite
/// factor gives what the float64 product gives: an infinite product
/// saturates, a NaN one (`0 · ∞`, or a NaN factor) is 0.
#[inline]
pub(crate) fn exact_product(x: i128, factor: f64, min: i128, max: i128) -> i128 {
    let Some(s) = Split::of(factor) else {
        let p = x as f64 * factor;
        return if p.is_nan() {
            0
        } else if p > 0.0 {
            max
        } else {
            min
        };
    };
    // |x| < 2^64 and m < 2^53: the product fits in 117 bits.
    let mag = x.unsigned_abs() * s.m as u128;
    let negative = (x < 0) != s.negative;
    let limit = if negative { min.unsigned_abs() } else { max as u128 };
    let mag = if mag == 0 {
        0
    } else if s.e >= 0 {
        // Shifting left past the top bit, or past the limit, saturates.
        if s.e >= 128 || mag.leading_zeros() <= s.e as u32 {
            return if negative { min } else { max };
        }
        mag << s.e
    } else if -s.e >= 128 {
        0
    } else {
        // The magnitude shifted right: truncation toward zero.
        mag >> -s.e
    };
    match (negative, mag.min(limit)) {
        (true, m) => (m as i128).wrapping_neg(),
        (false, m) => m as i128,
    }
}

#[cfg(test)]
mod tests {
    use crate::Arith;

    fn i64s(x: i64, f: f64) -> i64 {
        <i64 as Arith>::scale(x, f)
    }

    #[test]
    fn int64_past_two_to_the_53_keeps_its_low_bits() {
        let x = (1i64 << 53) + 1;
        assert_eq!(i64s(x, 1.0), x);
        assert_eq!(i64s(x, -1.0), -x);
        assert_eq!(i64s(i64::MAX, 1.0), i64::MAX);
        assert_eq!(i64s(i64::MIN, 1.0), i64::MIN);
        assert_eq!(i64s(i64::MIN, -1.0), i64::MAX); // saturates
        assert_eq!(i64s(i64::MAX, 0.5), i64::MAX / 2);
        assert_eq!(i64s(-i64::MAX, 0.5), -(i64::MAX / 2));
        assert_eq!(<u64 as Arith>::scale(u64::MAX, 1.0), u64::MAX);
        assert_eq!(<u64 as Arith>::scale(u64::MAX, -1.0), 0);
        assert_eq!(<u64 as Arith>::scale(u64::MAX - 1, 0.5), u64::MAX / 2);
        let mut run = [3i64, (1 << 53) + 1, -(1 << 53) - 1, 1 << 53, -(1 << 53)];
        <i64 as Arith>::scale_slice(&mut run, -1.0);
        assert_eq!(run, [-3, -(1 << 53) - 1, (1 << 53) + 1, -(1 << 53), 1 << 53]);
        let mut run = [u64::MAX, 1 << 53, 7];
        <u64 as Arith>::scale_slice(&mut run, 1.0);
        assert_eq!(run, [u64::MAX, 1 << 53, 7]);
    }

    #[test]
    fn below_two_to_the_53_it_is_numpys_float64_product() {
        // The double nearest 1/3 is below it: 3 times it is 1 - 2^-54
        // exactly, which float64 (and NumPy) round up to 1.
        let third = 1.0f64 / 3.0;
        assert_eq!(i64s(3, third), 1);
        assert_eq!(<u8 as Arith>::scale(252, third), 84);
        // Past 2^53 the product is exact: 3 (2^53 + 1) times it is
        // 2^53 + 1 - (2^53 + 1) 2^-54, just above 2^53 + 0.5.
        let x = 3 * ((1i64 << 53) + 1);
        assert_eq!(i64s(x, third), 1 << 53);
        assert_eq!(i64s(-x, third), -(1 << 53));
    }

    #[test]
    fn special_factors() {
        for x in [5i64, (1 << 60) + 1] {
            assert_eq!(i64s(x, f64::INFINITY), i64::MAX);
            assert_eq!(i64s(-x, f64::INFINITY), i64::MIN);
            assert_eq!(i64s(x, f64::NAN), 0);
            assert_eq!(i64s(x, -0.0), 0);
            assert_eq!(i64s(x, f64::MAX), i64::MAX);
            assert_eq!(i64s(-x, f64::MAX), i64::MIN);
            assert_eq!(i64s(x, 5e-324), 0);
            assert_eq!(i64s(x, 1e-300), 0);
        }
        assert_eq!(i64s(0, f64::INFINITY), 0);
        assert_eq!(<i8 as Arith>::scale(5, f64::INFINITY), 127);
        assert_eq!(<i8 as Arith>::scale(-5, f64::INFINITY), -128);
        // Powers of two as literals (Miri makes `powi` inexact on purpose).
        let (two_62, two_63) = (4611686018427387904.0f64, 9223372036854775808.0f64);
        assert_eq!(i64s(i64::MAX, 1.0 / two_62), 1);
        assert_eq!(i64s(1, two_63), i64::MAX);
        assert_eq!(i64s(-1, two_63), i64::MIN);
        let big = (1i64 << 60) + 1;
        assert_eq!(i64s(big, 8.0), i64::MAX);
        assert_eq!(i64s(-big, 8.0), i64::MIN);
        assert_eq!(i64s(big, 4.0), (1 << 62) + 4);
    }
}
