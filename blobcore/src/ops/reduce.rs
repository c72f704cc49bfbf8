//! asum (sum of absolute values) and sumsq (sum of squares), accumulated
//! in f64 with eight lanes per task and a fixed task split, so results do
//! not depend on thread scheduling.

use crate::blob::Blob;
use crate::dtype::{dispatch, Element};
use crate::engine::cpu::PARALLEL_BYTES;
use crate::error::Result;
use crate::ops::{gpu, TASK_BYTES};
use rayon::prelude::*;

#[inline]
fn lanes<T: Element>(x: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut acc = [0f64; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a += f(v.to_f64());
        }
    }
    let mut tail = 0.0;
    for &v in rest {
        tail += f(v.to_f64());
    }
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail
}

fn reduce<T: Element>(x: &[T], f: impl Fn(f64) -> f64 + Sync + Send + Copy) -> f64 {
    let es = std::mem::size_of::<T>();
    if std::mem::size_of_val(x) < PARALLEL_BYTES {
        return lanes(x, f);
    }
    let parts: Vec<f64> = x.par_chunks(TASK_BYTES / es).map(|c| lanes(c, f)).collect();
    parts.iter().sum()
}

impl Blob {
    /// Sum of absolute values, accumulated in f64 (Caffe `asum_data`).
    pub fn asum(&self) -> Result<f64> {
        if let Some(g) = gpu::common_gpu(&[self]) {
            if let Some(v) = gpu::reduce(&g, self.snapshot(), false)? {
                return Ok(v);
            }
        }
        self.with_read(|r| dispatch!(self.dtype(), T => reduce(r.typed::<T>(), f64::abs)))
    }

    /// Sum of squares, accumulated in f64 (Caffe `sumsq_data`).
    pub fn sumsq(&self) -> Result<f64> {
        if let Some(g) = gpu::common_gpu(&[self]) {
            if let Some(v) = gpu::reduce(&g, self.snapshot(), true)? {
                return Ok(v);
            }
        }
        self.with_read(|r| dispatch!(self.dtype(), T => reduce(r.typed::<T>(), |v| v * v)))
    }
}
