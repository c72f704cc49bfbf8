//! The three 8-bit float element types of today's checkpoints, stored as
//! ml_dtypes, PyTorch and safetensors store them (one byte each):
//!
//! | type | sign | exponent | mantissa | bias | infinities | NaN | largest |
//! |---|---|---|---|---|---|---|---|
//! | [`F8E4M3Fn`] | 1 | 4 | 3 | 7 | none | `S.1111.111` | 448 |
//! | [`F8E5M2`] | 1 | 5 | 2 | 15 | `S.11111.00` | `S.11111.xx`, xx ≠ 0 | 57344 |
//! | [`F8E8M0Fnu`] | none | 8 | 0 | 127 | none | `0xff` | 2^127 |
//!
//! `F8E8M0Fnu` is an unsigned power-of-two scale (the MX formats' block
//! scale): byte `e` is 2^(e-127), so it has no zero; byte 0 is 2^-127.
//!
//! Conversions round once, to nearest, from the exact source value
//! (blobcore's one rounding routine for every float format): ties go to
//! the even mantissa for the two signed types and up (away from zero) for
//! `F8E8M0Fnu`, as ml_dtypes rounds them. Values past the largest finite one become infinity in `F8E5M2`
//! and NaN in the two types without infinities; NaN stays NaN (with its
//! sign, where the type has one); zero and negative values are NaN in
//! `F8E8M0Fnu`, and positive values below 2^-127 round up to 2^-127.

use crate::convert;
use std::fmt;

macro_rules! float8 {
    ($(#[$doc:meta])* $name:ident, $fmt:path) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default)]
        #[repr(transparent)]
        pub struct $name(u8);

        impl $name {
            /// The value with this bit pattern.
            pub const fn from_bits(bits: u8) -> Self {
                $name(bits)
            }

            /// The bit pattern.
            pub const fn to_bits(self) -> u8 {
                self.0
            }

            /// The nearest value to `x`, rounded once (see the module docs).
            pub fn from_f64(x: f64) -> Self {
                $name(convert::f64_to_format(x, $fmt) as u8)
            }

            /// The nearest value to `x`, rounded once (see the module docs).
            pub fn from_f32(x: f32) -> Self {
                $name(convert::f32_to_format(x, $fmt) as u8)
            }

            /// The value as a float32 (exact: every value of the type is one).
            pub fn to_f32(self) -> f32 {
                convert::f8_to_f32(self.0, $fmt)
            }

            /// The value as a float64 (exact).
            pub fn to_f64(self) -> f64 {
                self.to_f32() as f64
            }

            /// True for the NaN patterns.
            pub fn is_nan(self) -> bool {
                self.to_f32().is_nan()
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.to_f32(), f)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.to_f32(), f)
            }
        }

        /// Compares values, as floats compare: NaN equals nothing and
        /// the two zeros are equal (compare `to_bits` for identity).
        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.to_f32() == other.to_f32()
            }
        }

        /// Orders by value, as floats order (NaN is unordered).
        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                self.to_f32().partial_cmp(&other.to_f32())
            }
        }
    };
}

float8!(
    /// float8_e4m3fn: 4 exponent bits, 3 mantissa bits, finite (no
    /// infinities), one NaN per sign; largest value 448.
    F8E4M3Fn,
    convert::F8E4M3FN
);
float8!(
    /// float8_e5m2: IEEE-style, 5 exponent bits, 2 mantissa bits, with
    /// infinities and NaNs; largest finite value 57344.
    F8E5M2,
    convert::F8E5M2
);
float8!(
    /// float8_e8m0fnu: an unsigned power of two, 2^(byte - 127), with
    /// NaN at `0xff` and no zero.
    F8E8M0Fnu,
    convert::F8E8M0FNU
);
