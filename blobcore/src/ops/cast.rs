//! `cast`: a copy converted to another dtype (NumPy `ndarray.astype`).
//!
//! Rules, per element, as NumPy's `astype` (C casts) where NumPy defines
//! the result:
//! - integer to integer wraps modulo 2^bits (`int64(-1)` to `uint8` is 255);
//! - integer to float rounds to nearest (float16 through float64,
//!   bfloat16 through float32, as ml_dtypes);
//! - float to float rounds to nearest even (float32 to bfloat16 as
//!   ml_dtypes; float64 to bfloat16 rounds once, directly);
//! - float to integer truncates toward zero. Out of range and NaN are
//!   undefined in C, so NumPy's results vary by platform; here they
//!   saturate at the target's range and NaN becomes 0.

use crate::blob::Blob;
use crate::dtype::{dispatch, DType, Element};
use crate::error::Result;
use half::{bf16, f16};
use rayon::prelude::*;

/// An element widened without loss: integers to i64, floats to f64.
#[derive(Clone, Copy)]
enum Wide {
    Int(i64),
    Float(f64),
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
                    Wide::Float(v) => v as $t, // truncates; saturates out of range, NaN -> 0
                }
            }
        }
    )*};
}
int_castable!(i32, i64, u8, i8);

impl Castable for f32 {
    #[inline]
    fn widen(self) -> Wide {
        Wide::Float(self as f64)
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        match w {
            Wide::Int(v) => v as f32,
            Wide::Float(v) => v as f32,
        }
    }
}

impl Castable for f64 {
    #[inline]
    fn widen(self) -> Wide {
        Wide::Float(self)
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        match w {
            Wide::Int(v) => v as f64,
            Wide::Float(v) => v,
        }
    }
}

impl Castable for f16 {
    #[inline]
    fn widen(self) -> Wide {
        Wide::Float(self.to_f64())
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        match w {
            Wide::Int(v) => f16::from_f64(v as f64),
            Wide::Float(v) => f16::from_f64(v),
        }
    }
}

impl Castable for bf16 {
    #[inline]
    fn widen(self) -> Wide {
        Wide::Float(self.to_f64())
    }
    #[inline]
    fn narrow(w: Wide) -> Self {
        match w {
            Wide::Int(v) => bf16::from_f32(v as f32),
            Wide::Float(v) => bf16::from_f64(v),
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
        dst.par_chunks_mut(CHUNK).zip(src.par_chunks(CHUNK)).for_each(body);
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
        let out = Blob::new(self.engine(), dtype, src.shape())?;
        let r = src.snapshot().into_read()?;
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
