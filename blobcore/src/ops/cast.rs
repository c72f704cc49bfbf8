//! `cast`: a copy converted to another dtype (NumPy `ndarray.astype`).
//!
//! Rules, per element, as NumPy's `astype` (C casts) where NumPy defines
//! the result:
//! - integer to integer wraps modulo 2^bits (`int64(-1)` to `uint8` is 255);
//! - integer to float and float to float round once, to nearest even,
//!   from the exact source value (`blobcore::convert`): float64 and 32/64-bit
//!   integers into bfloat16 and the float8 types round directly, where
//!   ml_dtypes and PyTorch round through float32 (twice); float8_e8m0fnu
//!   rounds ties up, as ml_dtypes does ([`crate::float8`]);
//! - float to integer truncates toward zero. Out of range and NaN are
//!   undefined in C, so NumPy's results vary by platform; here they
//!   saturate at the target's range and NaN becomes 0;
//! - anything to bool is `value != 0` (NaN is true); bool is 0 or 1.

use crate::blob::Blob;
use crate::boolean::Bool;
use crate::convert;
use crate::dtype::{dispatch, DType, Element};
use crate::error::Result;
use crate::float8::{F8E4M3Fn, F8E5M2, F8E8M0Fnu};
use half::{bf16, f16};
use rayon::prelude::*;

/// An element widened without loss: signed integers and bool to i64,
/// uint64 as itself, float8, float16, bfloat16 and float32 to f32
/// (exact), float64 as itself. Keeping float32 apart
/// from float64 lets each narrowing pick its one correctly rounded
/// routine ([`crate::convert`]) instead of rounding twice.
#[derive(Clone, Copy)]
enum Wide {
    Int(i64),
    UInt(u64),
    F32(f32),
    F64(f64),
}

trait Castable: Element {
    fn widen(self) -> Wide;
    fn narrow(w: Wide) -> Self;
}

macro_rules! int_castable {
    ($($t:ty),*) => {$(
        impl Castable for $t {
            #[inline]
            fn widen(self) -> Wide {
                Wide::Int(self as i64)
            }
            #[inline]
            fn narrow(w: Wide) -> Self {
                match w {
                    Wide::Int(v) => v as $t,   // wraps, as C and NumPy
                    Wide::UInt(v) => v as $t,
                    Wide::F32(v) => v as $t,   // truncates; saturates out of range, NaN -> 0
                    Wide::F64(v) => v as $t,
                }
            }
        }
    )*};
}
int_castable!(i32, i64, u8, i8, i16, u16, u32);

impl Castable for u64 {
    #[inline]
    fn widen(self) -> Wide {
        Wide::UInt(self)
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        match w {
            Wide::Int(v) => v as u64, // wraps
            Wide::UInt(v) => v,
            Wide::F32(v) => v as u64, // truncates and saturates, NaN -> 0
            Wide::F64(v) => v as u64,
        }
    }
}

impl Castable for Bool {
    #[inline]
    fn widen(self) -> Wide {
        Wide::Int(self.get() as i64)
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        Bool::new(match w {
            Wide::Int(v) => v != 0,
            Wide::UInt(v) => v != 0,
            Wide::F32(v) => v != 0.0, // NaN is true
            Wide::F64(v) => v != 0.0,
        })
    }
}

macro_rules! float8_castable {
    ($($t:ident: $fmt:path),*) => {$(
        impl Castable for $t {
            #[inline]
            fn widen(self) -> Wide {
                Wide::F32(self.to_f32())
            }
            #[inline]
            fn narrow(w: Wide) -> Self {
                $t::from_bits(match w {
                    Wide::Int(v) => convert::i64_to_format(v, $fmt),
                    Wide::UInt(v) => convert::u64_to_format(v, $fmt),
                    Wide::F32(v) => convert::f32_to_format(v, $fmt),
                    Wide::F64(v) => convert::f64_to_format(v, $fmt),
                } as u8)
            }
        }
    )*};
}
float8_castable!(F8E4M3Fn: convert::F8E4M3FN, F8E5M2: convert::F8E5M2, F8E8M0Fnu: convert::F8E8M0FNU);

impl Castable for f32 {
    #[inline]
    fn widen(self) -> Wide {
        Wide::F32(self)
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        match w {
            Wide::Int(v) => v as f32, // Rust rounds to nearest even
            Wide::UInt(v) => v as f32,
            Wide::F32(v) => v,
            Wide::F64(v) => v as f32, // correctly rounded
        }
    }
}

impl Castable for f64 {
    #[inline]
    fn widen(self) -> Wide {
        Wide::F64(self)
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        match w {
            Wide::Int(v) => v as f64,
            Wide::UInt(v) => v as f64,
            Wide::F32(v) => v as f64,
            Wide::F64(v) => v,
        }
    }
}

impl Castable for f16 {
    #[inline]
    fn widen(self) -> Wide {
        Wide::F32(convert::f16_to_f32(self))
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        match w {
            Wide::Int(v) => convert::i64_to_f16(v),
            Wide::UInt(v) => f16::from_bits(convert::u64_to_format(v, convert::F16) as u16),
            Wide::F32(v) => convert::f32_to_f16(v),
            Wide::F64(v) => convert::f64_to_f16(v),
        }
    }
}

impl Castable for bf16 {
    #[inline]
    fn widen(self) -> Wide {
        Wide::F32(convert::bf16_to_f32(self))
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        match w {
            Wide::Int(v) => convert::i64_to_bf16(v),
            Wide::UInt(v) => bf16::from_bits(convert::u64_to_format(v, convert::BF16) as u16),
            Wide::F32(v) => convert::f32_to_bf16(v),
            Wide::F64(v) => convert::f64_to_bf16(v),
        }
    }
}

fn convert<S: Castable, D: Castable>(src: &[S], dst: &mut [D]) {
    const CHUNK: usize = 64 << 10;
    let body = |(d, s): (&mut [D], &[S])| {
        for (d, &s) in d.iter_mut().zip(s) {
            *d = D::narrow(s.widen());
        }
    };
    if src.len() >= CHUNK * 2 {
        crate::engine::pool::install(|| dst.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(body));
    } else {
        body((dst, src));
    }
}

impl Blob {
    /// NumPy `astype(dtype)`: a new dense blob on the same engine with the
    /// same dims, every element converted by the rules of this module.
    /// Casting to the same dtype is a plain copy. Any layout is accepted
    /// (non-dense blobs are copied dense first).
    pub fn cast(&self, dtype: DType) -> Result<Blob> {
        let src = if self.is_dense() { self.clone() } else { self.copy()? };
        if dtype == self.dtype() {
            return if self.is_dense() { src.copy() } else { Ok(src) };
        }
        // The dims and the data from one look (another thread may reshape
        // a shared source in between).
        let snap = src.snapshot();
        let out = Blob::new(self.engine(), dtype, snap.shape.clone())?;
        let r = snap.into_read()?;
        let mut w = out.snapshot().into_write()?;
        dispatch!(src.dtype(), S => {
            let s: &[S] = r.typed::<S>();
            dispatch!(dtype, D => convert::<S, D>(s, w.typed_mut::<D>()))
        });
        drop((r, w));
        Ok(out)
    }
}

#[cfg(test)]
#[allow(clippy::excessive_precision)] // exact halfway cases, digit for digit
mod tests {
    use crate::{Blob, DType, Engine};

    #[test]
    fn numpy_rules() {
        let e = Engine::cpu();
        let i = Blob::from_slice(&e, &[4], &[-1i64, 255, 256, 1 << 40]).unwrap();
        assert_eq!(i.cast(DType::U8).unwrap().to_vec::<u8>().unwrap(), [255, 255, 0, 0]);
        assert_eq!(i.cast(DType::I8).unwrap().to_vec::<i8>().unwrap(), [-1, -1, 0, 0]);
        let f = Blob::from_slice(&e, &[5], &[-1.7f32, 2.9, 1e10, f32::NAN, 0.5]).unwrap();
        assert_eq!(f.cast(DType::I32).unwrap().to_vec::<i32>().unwrap(), [-1, 2, i32::MAX, 0, 0]);
        let h = f.cast(DType::F16).unwrap().cast(DType::F32).unwrap().to_vec::<f32>().unwrap();
        assert_eq!(h[0], -1.7001953);
        assert!(h[2].is_infinite());
        let b = Blob::from_slice(&e, &[1], &[1.00390625f32]).unwrap(); // halfway: ties to even
        assert_eq!(b.cast(DType::BF16).unwrap().cast(DType::F32).unwrap().to_vec::<f32>().unwrap(), [1.0]);
        assert_eq!(f.cast(DType::F32).unwrap().to_vec::<f32>().unwrap()[1], 2.9);
    }
}
