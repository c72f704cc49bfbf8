//! Element data types: the runtime [`DType`] tag and the [`Element`] trait
//! that ties each tag to a Rust type.

use crate::boolean::Bool;
use crate::convert;
use crate::error::{err, Result};
use crate::float8::{F8E4M3Fn, F8E5M2, F8E8M0Fnu};
use half::{bf16, f16};
use std::fmt;

/// The element type of a blob. The numeric codes are the C API's
/// `BLOB_F32` .. `BLOB_F8_E8M0FNU` and never change. Each is stored as
/// NumPy (and, for bfloat16 and the float8 types, ml_dtypes) stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum DType {
    /// 32-bit IEEE float (NeoML `CT_Float`). Code 1.
    F32 = 1,
    /// 32-bit signed integer (NeoML `CT_Int`). Code 2.
    I32 = 2,
    /// 64-bit IEEE float (Caffe `double`). Code 3.
    F64 = 3,
    /// 64-bit signed integer. Code 4.
    I64 = 4,
    /// 8-bit unsigned integer. Code 5.
    U8 = 5,
    /// 8-bit signed integer. Code 6.
    I8 = 6,
    /// 16-bit IEEE half float. Code 7.
    F16 = 7,
    /// 16-bit brain float. Code 8.
    BF16 = 8,
    /// Boolean, one byte holding 0 or 1 (NumPy `bool`). Code 9.
    Bool = 9,
    /// 16-bit signed integer. Code 10.
    I16 = 10,
    /// 16-bit unsigned integer. Code 11.
    U16 = 11,
    /// 32-bit unsigned integer. Code 12.
    U32 = 12,
    /// 64-bit unsigned integer. Code 13.
    U64 = 13,
    /// float8_e4m3fn: no infinities, largest 448 ([`crate::float8`]). Code 14.
    F8E4M3Fn = 14,
    /// float8_e5m2: IEEE-style with infinities. Code 15.
    F8E5M2 = 15,
    /// float8_e8m0fnu: an unsigned power-of-two scale. Code 16.
    F8E8M0Fnu = 16,
}

impl DType {
    /// Every dtype, in code order.
    pub const ALL: [DType; 16] = [
        DType::F32,
        DType::I32,
        DType::F64,
        DType::I64,
        DType::U8,
        DType::I8,
        DType::F16,
        DType::BF16,
        DType::Bool,
        DType::I16,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F8E4M3Fn,
        DType::F8E5M2,
        DType::F8E8M0Fnu,
    ];

    /// The stable numeric code (`BLOB_F32` = 1 .. `BLOB_F8_E8M0FNU` = 16).
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The dtype with this code, or a DType error naming the bad code.
    pub fn from_code(code: i32) -> Result<DType> {
        DType::ALL
            .iter()
            .copied()
            .find(|d| d.code() == code)
            .ok_or_else(|| err!(DType, "unknown dtype code {code} (valid codes are 1..=16)"))
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 | DType::I16 | DType::U16 => 2,
            DType::U8 | DType::I8 | DType::Bool | DType::F8E4M3Fn | DType::F8E5M2 | DType::F8E8M0Fnu => 1,
        }
    }

    /// NumPy's name for the dtype (`"float32"`, `"bfloat16"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::I32 => "int32",
            DType::F64 => "float64",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::Bool => "bool",
            DType::I16 => "int16",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F8E4M3Fn => "float8_e4m3fn",
            DType::F8E5M2 => "float8_e5m2",
            DType::F8E8M0Fnu => "float8_e8m0fnu",
        }
    }

    /// The dtype with NumPy's (or ml_dtypes') name, if blobcore has it.
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| d.name() == name)
    }

    /// True for the floating-point dtypes (float8 included).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64 | DType::F16 | DType::BF16) || self.is_float8()
    }

    /// True for the three float8 dtypes.
    pub fn is_float8(self) -> bool {
        matches!(self, DType::F8E4M3Fn | DType::F8E5M2 | DType::F8E8M0Fnu)
    }

    /// True for the signed and unsigned integer dtypes (not bool).
    pub fn is_integer(self) -> bool {
        matches!(self, DType::I8 | DType::U8 | DType::I16 | DType::U16 | DType::I32 | DType::U32 | DType::I64 | DType::U64)
    }

    /// True where blobcore does arithmetic (add, scale, update, asum,
    /// sumsq): every integer and float dtype except bool and the float8
    /// types, which are storage formats (cast them first).
    pub fn has_arithmetic(self) -> bool {
        !(self == DType::Bool || self.is_float8())
    }

    /// A DType error for `op` on a dtype without arithmetic, naming the
    /// way out (`astype`), or Ok.
    pub fn check_arithmetic(self, op: &str) -> Result<()> {
        if self.has_arithmetic() {
            return Ok(());
        }
        let to = if self == DType::Bool { "an integer dtype (astype(numpy.int32))" } else { "a wider float (astype(numpy.float32))" };
        Err(err!(DType, "{op} is not defined on {self} blobs, which blobcore stores but does not compute with; convert to {to} first"))
    }

    /// The smallest and largest value an integer dtype holds; None for
    /// bool and the floats.
    pub(crate) fn integer_range(self) -> Option<(i128, i128)> {
        Some(match self {
            DType::I8 => (i8::MIN.into(), i8::MAX.into()),
            DType::U8 => (0, u8::MAX.into()),
            DType::I16 => (i16::MIN.into(), i16::MAX.into()),
            DType::U16 => (0, u16::MAX.into()),
            DType::I32 => (i32::MIN.into(), i32::MAX.into()),
            DType::U32 => (0, u32::MAX.into()),
            DType::I64 => (i64::MIN.into(), i64::MAX.into()),
            DType::U64 => (0, u64::MAX.into()),
            _ => return None,
        })
    }

    /// Checks that `value` can be stored in this dtype as NumPy would
    /// store it without overflow: any value for the float dtypes (which
    /// round) and bool (nonzero and NaN are true); for the integer dtypes a finite value whose integer part
    /// (fractions truncate toward zero) is within the dtype's range, else
    /// `OutOfRange`.
    pub fn check_value(self, value: f64) -> Result<()> {
        let Some((lo, hi)) = self.integer_range() else { return Ok(()) };
        let (lo, hi) = (lo as f64, hi as f64);
        let t = value.trunc();
        // i64::MAX and u64::MAX as f64 are 2^63 and 2^64, themselves out
        // of range: compare below them.
        let above = if matches!(self, DType::I64 | DType::U64) { t >= hi } else { t > hi };
        if !value.is_finite() || t < lo || above {
            return Err(err!(OutOfRange, "{value} does not fit in {self}"));
        }
        Ok(())
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can be a blob element.
///
/// # Safety
/// Implementors must be plain old data: `Copy`, no padding, no invalid bit
/// patterns, and `size_of::<Self>() == Self::DTYPE.size()`, because blob
/// memory (zero-filled or written by C callers) is reinterpreted as `Self`.
pub unsafe trait Element:
    Copy + Send + Sync + Default + PartialEq + PartialOrd + fmt::Debug + 'static
{
    /// The runtime tag of this type.
    const DTYPE: DType;
    /// Converts a double to this type: floats round once to nearest even
    /// (`blobcore::convert`), integers truncate toward zero and saturate at
    /// their range (NaN becomes 0). Named apart from `half`'s inherent
    /// `f16::from_f64`, which rounds through f32 on F16C machines and would
    /// shadow a trait method of the same name on the concrete type.
    fn round_from_f64(v: f64) -> Self;
    /// Widens to a double (exact for every type but 64-bit integers
    /// beyond 2^53; bool is 0 or 1).
    fn to_f64(self) -> f64;
}

/// The byte `v` is made of when all its bytes are equal (zero, or for
/// example the f32 with bits 0x4141_4141): such a value fills memory as
/// `memset` does.
pub(crate) fn repeated_byte<T: Element>(v: T) -> Option<u8> {
    // SAFETY: Element types are plain old data without padding (the
    // trait's contract), so all size_of::<T>() bytes of `v` are initialised.
    let bytes = unsafe { std::slice::from_raw_parts(&v as *const T as *const u8, std::mem::size_of::<T>()) };
    let (&first, rest) = bytes.split_first()?;
    rest.iter().all(|&b| b == first).then_some(first)
}

/// An element type blobcore computes with (every dtype with
/// [`DType::has_arithmetic`]).
pub trait Arith: Element {
    /// `a + b`; integers wrap around as NumPy's do.
    fn add(a: Self, b: Self) -> Self;
    /// `a - b`; integers wrap around as NumPy's do.
    fn sub(a: Self, b: Self) -> Self;
    /// `x * factor`: floats multiply in their own precision (f16 and bf16
    /// through f32); integers multiply in f64 where f64 holds them
    /// (|x| <= 2^53) and exactly beyond, then truncate toward zero and
    /// saturate (an infinite product saturates, a NaN one gives 0).
    fn scale(x: Self, factor: f64) -> Self;
    /// [`Arith::scale`] of every element of `xs`, in place.
    #[inline]
    fn scale_slice(xs: &mut [Self], factor: f64) {
        xs.iter_mut().for_each(|x| *x = Self::scale(*x, factor));
    }
}

macro_rules! int_element {
    // `$held`: whether float64 holds the value exactly (|x| <= 2^53).
    // `$excess`: bits that are all zero for |x| < 2^53 (-2^53 included),
    // or'ed over a run so that the check vectorizes with plain 64-bit adds,
    // shifts and ors.
    // `$wide`: a whole-slice path tried first (for the 64-bit types
    // AVX-512, which takes values past 2^53 too, else AVX2); false when
    // it did nothing.
    ($t:ty, $d:expr, $held:expr, $excess:expr, $wide:expr) => {
        // SAFETY: primitive integers are plain old data of the dtype's size.
        unsafe impl Element for $t {
            const DTYPE: DType = $d;
            #[inline]
            fn round_from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
        impl Arith for $t {
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                a.wrapping_add(b)
            }
            #[inline]
            fn sub(a: Self, b: Self) -> Self {
                a.wrapping_sub(b)
            }
            #[inline]
            fn scale(x: Self, factor: f64) -> Self {
                let held: fn($t) -> bool = $held;
                if held(x) {
                    // Rust's float-to-integer `as` truncates, saturates and
                    // takes NaN to 0.
                    (x as f64 * factor) as $t
                } else {
                    // In range: saturated to the type's bounds (a
                    // non-finite factor too).
                    crate::integer_scale::exact_product(x as i128, factor, <$t>::MIN as i128, <$t>::MAX as i128) as $t
                }
            }
            #[inline]
            fn scale_slice(xs: &mut [Self], factor: f64) {
                let wide: fn(&mut [$t], f64) -> bool = $wide;
                if wide(xs, factor) {
                    return;
                }
                let excess: fn($t) -> u64 = $excess;
                // Runs float64 holds whole take the float64 loop; the others
                // go element by element.
                for run in xs.chunks_mut(256) {
                    if run.iter().fold(0, |acc, &x| acc | excess(x)) != 0 {
                        run.iter_mut().for_each(|x| *x = Self::scale(*x, factor));
                    } else {
                        run.iter_mut().for_each(|x| *x = (*x as f64 * factor) as $t);
                    }
                }
            }
        }
    };
}
int_element!(i32, DType::I32, |_| true, |_| 0, |_, _| false);
int_element!(i64, DType::I64, |x| x.unsigned_abs() <= 1 << 53, |x| (x as u64).wrapping_add(1 << 53) >> 54, |xs, f| {
    let scalar = |x| <i64 as Arith>::scale(x, f);
    crate::integer_scale_avx512::scale_64(xs, f, false, scalar) || crate::integer_scale_avx2::scale_64(xs, f, false, scalar)
});
int_element!(u8, DType::U8, |_| true, |_| 0, |_, _| false);
int_element!(i8, DType::I8, |_| true, |_| 0, |_, _| false);
int_element!(i16, DType::I16, |_| true, |_| 0, |_, _| false);
int_element!(u16, DType::U16, |_| true, |_| 0, |_, _| false);
int_element!(u32, DType::U32, |_| true, |_| 0, |_, _| false);
int_element!(u64, DType::U64, |x| x <= 1 << 53, |x| x >> 53, |xs, f| {
    // The same 8-byte words read as int64 (the kernel reads uint64 as
    // their bits); `scalar` turns them back.
    let (xs, scalar) = (bytemuck::cast_slice_mut(xs), |x| <u64 as Arith>::scale(x as u64, f) as i64);
    crate::integer_scale_avx512::scale_64(xs, f, true, scalar) || crate::integer_scale_avx2::scale_64(xs, f, true, scalar)
});

// SAFETY: f32 is plain old data of 4 bytes; every bit pattern is a float.
unsafe impl Element for f32 {
    const DTYPE: DType = DType::F32;
    #[inline]
    fn round_from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl Arith for f32 {
    #[inline]
    fn add(a: Self, b: Self) -> Self {
        a + b
    }
    #[inline]
    fn sub(a: Self, b: Self) -> Self {
        a - b
    }
    #[inline]
    fn scale(x: Self, factor: f64) -> Self {
        x * factor as f32
    }
}

// SAFETY: f64 is plain old data of 8 bytes; every bit pattern is a float.
unsafe impl Element for f64 {
    const DTYPE: DType = DType::F64;
    #[inline]
    fn round_from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
}

impl Arith for f64 {
    #[inline]
    fn add(a: Self, b: Self) -> Self {
        a + b
    }
    #[inline]
    fn sub(a: Self, b: Self) -> Self {
        a - b
    }
    #[inline]
    fn scale(x: Self, factor: f64) -> Self {
        x * factor
    }
}

macro_rules! half_element {
    ($t:ty, $d:expr, $from64:path, $from32:path, $to32:path) => {
        // SAFETY: half's types are repr(transparent) over u16; every bit
        // pattern is a valid (possibly NaN) value.
        unsafe impl Element for $t {
            const DTYPE: DType = $d;
            #[inline]
            fn round_from_f64(v: f64) -> Self {
                $from64(v)
            }
            #[inline]
            fn to_f64(self) -> f64 {
                $to32(self) as f64
            }
        }
        impl Arith for $t {
            #[inline]
            fn add(a: Self, b: Self) -> Self {
                $from32($to32(a) + $to32(b))
            }
            #[inline]
            fn sub(a: Self, b: Self) -> Self {
                $from32($to32(a) - $to32(b))
            }
            #[inline]
            fn scale(x: Self, factor: f64) -> Self {
                $from32($to32(x) * factor as f32)
            }
        }
    };
}
half_element!(f16, DType::F16, convert::f64_to_f16, convert::f32_to_f16, convert::f16_to_f32);
half_element!(bf16, DType::BF16, convert::f64_to_bf16, convert::f32_to_bf16, convert::bf16_to_f32);

// SAFETY: Bool is repr(transparent) over u8; every byte is a valid Bool
// (nonzero reads as true).
unsafe impl Element for Bool {
    const DTYPE: DType = DType::Bool;
    #[inline]
    fn round_from_f64(v: f64) -> Self {
        Bool::new(v != 0.0) // NaN is true, as in NumPy
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self.get() as u8 as f64
    }
}

macro_rules! float8_element {
    ($t:ty, $d:expr) => {
        // SAFETY: the float8 types are repr(transparent) over u8; every
        // byte is a value (some are NaN).
        unsafe impl Element for $t {
            const DTYPE: DType = $d;
            #[inline]
            fn round_from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
            #[inline]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
        }
    };
}
float8_element!(F8E4M3Fn, DType::F8E4M3Fn);
float8_element!(F8E5M2, DType::F8E5M2);
float8_element!(F8E8M0Fnu, DType::F8E8M0Fnu);

/// Calls `$body` with the type alias `$T` bound to the Rust type of `$dtype`.
macro_rules! dispatch {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::dtype::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DType::Bool => {
                type $T = $crate::boolean::Bool;
                $body
            }
            $crate::dtype::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::dtype::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::dtype::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::dtype::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::dtype::DType::F8E4M3Fn => {
                type $T = $crate::float8::F8E4M3Fn;
                $body
            }
            $crate::dtype::DType::F8E5M2 => {
                type $T = $crate::float8::F8E5M2;
                $body
            }
            $crate::dtype::DType::F8E8M0Fnu => {
                type $T = $crate::float8::F8E8M0Fnu;
                $body
            }
        }
    };
}
pub(crate) use dispatch;

/// As [`dispatch`], over the dtypes with arithmetic ([`Arith`]); the
/// others evaluate `$other` (the caller checks
/// [`DType::check_arithmetic`] first, so it names the error).
macro_rules! dispatch_arith {
    ($dtype:expr, $T:ident => $body:expr, else => $other:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::U8 => {
                type $T = u8;
                $body
            }
            $crate::dtype::DType::I8 => {
                type $T = i8;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $T = half::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DType::I16 => {
                type $T = i16;
                $body
            }
            $crate::dtype::DType::U16 => {
                type $T = u16;
                $body
            }
            $crate::dtype::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::dtype::DType::U64 => {
                type $T = u64;
                $body
            }
            $crate::dtype::DType::Bool
            | $crate::dtype::DType::F8E4M3Fn
            | $crate::dtype::DType::F8E5M2
            | $crate::dtype::DType::F8E8M0Fnu => $other,
        }
    };
}
pub(crate) use dispatch_arith;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_sizes() {
        for d in DType::ALL {
            assert_eq!(DType::from_code(d.code()).unwrap(), d);
            dispatch!(d, T => assert_eq!(std::mem::size_of::<T>(), d.size()));
            dispatch!(d, T => assert_eq!(T::DTYPE, d));
        }
        assert_eq!(DType::F32.code(), 1);
        assert_eq!(DType::BF16.code(), 8);
        assert_eq!(DType::F8E8M0Fnu.code(), 16);
        for (i, d) in DType::ALL.iter().enumerate() {
            assert_eq!(d.code(), i as i32 + 1);
            assert_eq!(DType::from_name(d.name()), Some(*d));
            assert_eq!(d.has_arithmetic(), d.check_arithmetic("add").is_ok());
        }
        assert!(DType::from_code(0).is_err());
        assert!(DType::from_code(17).is_err());
        assert_eq!(DType::from_code(-1).unwrap_err().code(), 5);
    }

    #[test]
    fn fills_of_half_types_round_once() {
        // Just above half the smallest float16 subnormal: rounds up once;
        // through f32 (2^-25 exactly, a tie) it would round to zero.
        let v = 2.980232238769532e-08;
        assert_eq!(<f16 as Element>::round_from_f64(v).to_bits(), 1);
        let b = crate::Blob::full(&crate::Engine::cpu(), DType::F16, &[3], v).unwrap();
        assert_eq!(b.to_vec::<f16>().unwrap()[2].to_bits(), 1);
        let b = crate::Blob::full(&crate::Engine::cpu(), DType::BF16, &[3], 1.0 + 2f64.powi(-8) + 2f64.powi(-30)).unwrap();
        assert_eq!(b.to_vec::<bf16>().unwrap()[0].to_bits(), 0x3f81);
    }

    #[test]
    fn conversions_saturate_and_truncate() {
        assert_eq!(i8::round_from_f64(300.0), 127);
        assert_eq!(i8::round_from_f64(-2.7), -2);
        assert_eq!(u8::round_from_f64(-5.0), 0);
        assert_eq!(i32::round_from_f64(f64::NAN), 0);
        assert_eq!(<i32 as Arith>::add(i32::MAX, 1), i32::MIN);
        assert_eq!(<u8 as Arith>::sub(0, 1), 255);
        assert_eq!(<u64 as Arith>::sub(0, 1), u64::MAX);
        assert_eq!(<i32 as Arith>::scale(7, 0.5), 3);
        assert_eq!(<f16 as Arith>::scale(f16::from_f32(3.0), 0.5), f16::from_f32(1.5));
        assert_eq!(u64::round_from_f64(1e30), u64::MAX);
        assert_eq!(u16::round_from_f64(-3.5), 0);
        assert!(Bool::round_from_f64(f64::NAN).get() && !Bool::round_from_f64(-0.0).get());
        assert_eq!(Bool::from_bits(7).to_f64(), 1.0);
        assert!(DType::U64.check_value(18446744073709549568.0).is_ok());
        assert!(DType::U64.check_value(18446744073709551616.0).is_err());
        assert!(DType::I16.check_value(-32768.9).is_ok() && DType::I16.check_value(32768.0).is_err());
        assert!(DType::Bool.check_value(f64::NAN).is_ok() && DType::F8E4M3Fn.check_value(1e9).is_ok());
    }
}
