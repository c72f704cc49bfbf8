//! asum (sum of absolute values) and sumsq (sum of squares), accumulated
//! in f64 with sixteen lanes per task (vectorised with AVX2 where the CPU
//! has it, the same additions in the same order either way) and a fixed
//! task split, so results do not depend on thread scheduling or the CPU.

use crate::blob::Blob;
use crate::dtype::{dispatch, Element};
use crate::engine::cpu::PARALLEL_BYTES;
use crate::error::Result;
use crate::ops::{gpu, prefetch, PREFETCH_BYTES, TASK_BYTES};
use rayon::prelude::*;

/// Independent f64 accumulators: enough to keep the vector adders busy
/// (four AVX registers of four), folded pairwise at the end.
const LANES: usize = 16;

#[inline(always)]
fn lanes_impl<T: Element>(x: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0f64; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        prefetch((c.as_ptr() as *const u8).wrapping_add(PREFETCH_BYTES), std::mem::size_of_val(c));
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f(v.to_f64());
        }
    }
    let mut tail = 0.0;
    for &v in rest {
        tail += f(v.to_f64());
    }
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for k in 0..width {
            acc[k] += acc[k + width];
        }
    }
    acc[0] + tail
}

/// [`lanes_impl`] compiled for AVX2: the same additions in the same order
/// (so the same result to the bit), with 4-wide conversions and adds.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn lanes_avx2<T: Element>(x: &[T], f: impl Fn(f64) -> f64) -> f64 {
    lanes_impl(x, f)
}

/// f32 with AVX intrinsics: lane `k` of the sixteen accumulates elements
/// `k mod 16` exactly as [`lanes_impl`] does, and the fold is the same, so
/// the result is the same to the bit.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
fn lanes_f32_avx(x: &[f32], square: bool) -> f64 {
    use std::arch::x86_64::*;
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    let mut acc = [_mm256_setzero_pd(); LANES / 4];
    let abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(i64::MAX));
    for c in chunks {
        prefetch((c.as_ptr() as *const u8).wrapping_add(PREFETCH_BYTES), std::mem::size_of_val(c));
        for (q, a) in acc.iter_mut().enumerate() {
            // SAFETY: `c` holds exactly LANES floats: LANES / 4 loads of
            // four, each converted to f64 straight from memory.
            let p = _mm256_cvtps_pd(unsafe { _mm_loadu_ps(c.as_ptr().add(4 * q)) });
            let t = if square { _mm256_mul_pd(p, p) } else { _mm256_and_pd(p, abs_mask) };
            *a = _mm256_add_pd(*a, t);
        }
    }
    // The fold of lanes_impl: register k holds lanes 4k..4k+3, so lane k
    // += lane k + width is register k += register k + width / 4 until one
    // register is left, then its four lanes are folded in place.
    let mut width = LANES / 4;
    while width > 1 {
        width /= 2;
        for k in 0..width {
            acc[k] = _mm256_add_pd(acc[k], acc[k + width]);
        }
    }
    let a = acc[0];
    let mut l = [0f64; 4];
    // SAFETY: `l` has room for four f64.
    unsafe { _mm256_storeu_pd(l.as_mut_ptr(), a) };
    let folded = (l[0] + l[2]) + (l[1] + l[3]);
    let mut tail = 0.0;
    for &v in rest {
        let v = v as f64;
        tail += if square { v * v } else { v.abs() };
    }
    folded + tail
}

#[inline]
fn lanes<T: Element>(x: &[T], f: impl Fn(f64) -> f64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: the CPU has AVX2 (checked at run time).
        return unsafe { lanes_avx2(x, f) };
    }
    lanes_impl(x, f)
}

#[cfg(target_arch = "x86_64")]
fn avx2() -> bool {
    // `std` detects it once and keeps the answer in an atomic.
    is_x86_feature_detected!("avx2")
}

fn reduce<T: Element>(x: &[T], f: impl Fn(f64) -> f64 + Sync + Send + Copy) -> f64 {
    let es = std::mem::size_of::<T>();
    if std::mem::size_of_val(x) < PARALLEL_BYTES {
        return lanes(x, f);
    }
    let parts: Vec<f64> = crate::engine::pool::install(|| x.par_chunks(TASK_BYTES / es).map(|c| lanes(c, f)).collect());
    parts.iter().sum()
}

impl Blob {
    /// Sum of absolute values, accumulated in f64 (Caffe `asum_data`).
    ///
    /// Error bound (CPU): the terms are added in 16 lanes per task of 256
    /// KiB (the last up to 15 of a task in one more), the lanes folded
    /// pairwise and the task sums added in order, so the result is within
    /// `(max(n/16, 11) + n/65536 + 5) * 2^-53` (to first order) of the sum
    /// of the absolute terms (terms of f32, f16, bf16 and integers up to
    /// 2^53 are exact in f64). The GPU engine adds f32 partials for f32 blobs
    /// (about 1e-5 relative; a sum past f32's range is computed here) and
    /// sums i32 blobs exactly in 96- or 128-bit integers, rounded once
    /// (bit-equal to this result below 2^53).
    pub fn asum(&self) -> Result<f64> {
        self.dtype().check_arithmetic("asum")?;
        if !self.is_dense() {
            return self.to_dense()?.asum();
        }
        if let Some(g) = gpu::common_gpu(&[self]) {
            if let Some(v) = gpu::reduce(&g, self.snapshot(), false)? {
                return Ok(v);
            }
        }
        if let Some(v) = self.f32_reduce(false)? {
            return Ok(v);
        }
        self.with_read(|r| dispatch!(self.dtype(), T => reduce(r.typed::<T>(), f64::abs)))
    }

    /// Sum of squares, accumulated in f64 (Caffe `sumsq_data`), with the
    /// error bound of [`Blob::asum`] (squares of f32 and narrower values
    /// are exact in f64; f64 squares add one rounding each).
    pub fn sumsq(&self) -> Result<f64> {
        self.dtype().check_arithmetic("sumsq")?;
        if !self.is_dense() {
            return self.to_dense()?.sumsq();
        }
        if let Some(g) = gpu::common_gpu(&[self]) {
            if let Some(v) = gpu::reduce(&g, self.snapshot(), true)? {
                return Ok(v);
            }
        }
        if let Some(v) = self.f32_reduce(true)? {
            return Ok(v);
        }
        self.with_read(|r| dispatch!(self.dtype(), T => reduce(r.typed::<T>(), |v| v * v)))
    }

    /// asum / sumsq of an f32 blob through the AVX kernel, where the CPU
    /// has AVX2 (None otherwise: the generic path gives the same result).
    fn f32_reduce(&self, square: bool) -> Result<Option<f64>> {
        #[cfg(target_arch = "x86_64")]
        if self.dtype() == crate::DType::F32 && avx2() {
            let kernel = move |x: &[f32]| {
                // SAFETY: avx2() implies AVX, checked at run time.
                unsafe { lanes_f32_avx(x, square) }
            };
            return self
                .with_read(|r| {
                    let x = r.typed::<f32>();
                    if std::mem::size_of_val(x) < PARALLEL_BYTES {
                        return kernel(x);
                    }
                    let parts: Vec<f64> = crate::engine::pool::install(|| x.par_chunks(TASK_BYTES / 4).map(kernel).collect());
                    parts.iter().sum()
                })
                .map(Some);
        }
        let _ = square;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_avx_kernel_gives_the_generic_result_to_the_bit() {
        if !avx2() {
            return;
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for len in [0usize, 1, 15, 16, 17, 100, 1000, 4099] {
            let x: Vec<f32> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / 1e3 - 8e3
                })
                .collect();
            // SAFETY: avx2() was checked above.
            let (a, s) = unsafe { (lanes_f32_avx(&x, false), lanes_f32_avx(&x, true)) };
            assert_eq!(a.to_bits(), lanes_impl(&x, f64::abs).to_bits(), "asum, {len} elements");
            assert_eq!(s.to_bits(), lanes_impl(&x, |v| v * v).to_bits(), "sumsq, {len} elements");
        }
    }
}
