//! transposed / transpose_from: numpy.swapaxes followed by a contiguous
//! copy, cache-blocked so that swapping the innermost axis still streams
//! whole cache lines.

use crate::blob::Blob;
use crate::engine::cpu::PARALLEL_BYTES;
use crate::error::{err, Result};
use crate::ops::{dst_src, gpu, par_copy};
use rayon::prelude::*;

/// The five-part view of a swap of axes `a < b`: `[batch, h, mid, w, inner]`
/// becomes `[batch, w, mid, h, inner]`.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    batch: usize,
    h: usize,
    mid: usize,
    w: usize,
    /// Bytes of one inner chunk (the product of dims after `b`, times the element size).
    cb: usize,
}

impl Geometry {
    fn new(dims: &[usize], a: usize, b: usize, es: usize) -> Geometry {
        Geometry {
            batch: dims[..a].iter().product(),
            h: dims[a],
            mid: dims[a + 1..b].iter().product(),
            w: dims[b],
            cb: dims[b + 1..].iter().product::<usize>() * es,
        }
    }

    /// Bytes per batch entry.
    fn plane(&self) -> usize {
        self.h * self.mid * self.w * self.cb
    }

    /// Output rows (one per `w`) handled by one task: about a cache tile.
    fn tile_w(&self) -> usize {
        (128 / self.cb).clamp(1, 64)
    }

    fn tile_h(&self) -> usize {
        (128 / self.cb).clamp(4, 64)
    }
}

/// Writes output rows `w0 .. w0 + out.len() / row` of one batch entry,
/// tile by tile: each output row segment is written contiguously while the
/// matching source column is read from a few cache lines.
#[inline(always)]
fn rows<const CB: usize>(src: &[u8], out: &mut [u8], w0: usize, g: Geometry, cb: usize) {
    let cb = if CB == 0 { cb } else { CB };
    let (h, mid, w) = (g.h, g.mid, g.w);
    let dst_row = mid * h * cb;
    let h_stride = mid * w * cb;
    let m_stride = w * cb;
    let wn = out.len() / dst_row;
    // Every read below is at most the last byte of source row h-1, entry
    // (mid-1, w0+wn-1); every write at most the end of `out`. Checking those
    // two bounds once makes the unchecked copies in the loop sound.
    if wn == 0 || h == 0 || mid == 0 {
        return;
    }
    let last_read = (h - 1) * h_stride + (mid - 1) * m_stride + (w0 + wn - 1) * cb + cb;
    if last_read > src.len() || wn * dst_row > out.len() {
        debug_assert!(false, "transpose tile out of bounds");
        return;
    }
    let th = g.tile_h();
    let sp = src.as_ptr();
    let dp = out.as_mut_ptr();
    for mi in 0..mid {
        let mut h0 = 0;
        while h0 < h {
            let h1 = (h0 + th).min(h);
            for wi in 0..wn {
                let o = wi * dst_row + mi * h * cb;
                let s0 = mi * m_stride + (w0 + wi) * cb;
                for hi in h0..h1 {
                    // SAFETY: s0 + hi*h_stride + cb <= last_read <= src.len()
                    // and o + hi*cb + cb <= wn*dst_row <= out.len() (checked
                    // above); source and destination are different slices.
                    unsafe {
                        std::ptr::copy_nonoverlapping(sp.add(s0 + hi * h_stride), dp.add(o + hi * cb), cb);
                    }
                }
            }
            h0 = h1;
        }
    }
}

/// `rows` with the chunk size made a compile-time constant for common sizes,
/// so each element copy is one load and one store.
fn rows_dispatch(src: &[u8], out: &mut [u8], w0: usize, g: Geometry) {
    match g.cb {
        1 => rows::<1>(src, out, w0, g, 1),
        2 => rows::<2>(src, out, w0, g, 2),
        4 => rows::<4>(src, out, w0, g, 4),
        8 => rows::<8>(src, out, w0, g, 8),
        12 => rows::<12>(src, out, w0, g, 12),
        16 => rows::<16>(src, out, w0, g, 16),
        cb => rows::<0>(src, out, w0, g, cb),
    }
}

/// Copies `src` (dims `[batch, h, mid, w, inner]`) into `dst` with `h` and
/// `w` swapped.
fn swap_axes_bytes(src: &[u8], dst: &mut [u8], g: Geometry) {
    let plane = g.plane();
    if plane == 0 || g.batch == 0 {
        return;
    }
    let dst_row = g.mid * g.h * g.cb;
    if plane * g.batch < PARALLEL_BYTES {
        for (s, d) in src.chunks_exact(plane).zip(dst.chunks_exact_mut(plane)) {
            rows_dispatch(s, d, 0, g);
        }
    } else if plane <= (PARALLEL_BYTES / 4) {
        src.par_chunks_exact(plane)
            .zip(dst.par_chunks_exact_mut(plane))
            .for_each(|(s, d)| rows_dispatch(s, d, 0, g));
    } else {
        let tw = g.tile_w();
        for (s, d) in src.chunks_exact(plane).zip(dst.chunks_exact_mut(plane)) {
            d.par_chunks_mut(tw * dst_row)
                .enumerate()
                .for_each(|(t, out)| rows_dispatch(s, out, t * tw, g));
        }
    }
}

impl Blob {
    /// NeoML `GetTransposed(d1, d2)`: a new blob with axes `d1` and `d2`
    /// swapped as `numpy.swapaxes` does (the axes between keep their
    /// order), laid out contiguously. Negative axes count from the end.
    pub fn transposed(&self, d1: isize, d2: isize) -> Result<Blob> {
        let shape = self.shape();
        let a = shape.canonical_axis(d1)?;
        let b = shape.canonical_axis(d2)?;
        let out = Blob::new(self.engine(), self.dtype(), shape.swapped(a, b)?)?;
        out.transpose_from(self, d1, d2)?;
        Ok(out)
    }

    /// NeoML `TransposeFrom(src, d1, d2)`: fills this blob with `src` with
    /// axes `d1` and `d2` swapped. This blob's dims must be `src`'s with
    /// those two swapped, and the dtypes equal; the two may not share memory.
    pub fn transpose_from(&self, src: &Blob, d1: isize, d2: isize) -> Result<()> {
        if self.dtype() != src.dtype() {
            return Err(err!(DType, "transpose_from: dtypes differ ({} and {})", self.dtype(), src.dtype()));
        }
        let s = src.snapshot();
        let d = self.snapshot();
        let a = s.shape.canonical_axis(d1)?;
        let b = s.shape.canonical_axis(d2)?;
        let want = s.shape.swapped(a, b)?;
        if d.shape != want {
            return Err(err!(
                Shape,
                "transpose_from: swapping axes {a} and {b} of {} gives {want}, but the destination is {}",
                s.shape,
                d.shape
            ));
        }
        if a == b && d.same_bytes(&s) {
            return Ok(());
        }
        if let Some(g) = gpu::common_gpu(&[self, src]) {
            // Walk the destination row-major; the source strides are its
            // own with axes a and b swapped.
            let mut ss = gpu::row_major(s.shape.dims());
            ss.swap(a, b);
            let t = gpu::Strided {
                dims: d.shape.dims().to_vec(),
                dst_off: d.offset,
                dst_strides: gpu::row_major(d.shape.dims()),
                src_off: s.offset,
                src_strides: ss,
            };
            if !d.overlaps(&s) && gpu::copies(&g, d.clone(), s.clone(), &[t])? {
                return Ok(());
            }
        }
        let (mut w, r) = dst_src(&d, &s, "transpose_from")?;
        if a == b || s.shape.dims()[a.min(b)] == 1 && s.shape.dims()[a.max(b)] == 1 {
            par_copy(w.bytes_mut(), r.bytes());
            return Ok(());
        }
        let g = Geometry::new(s.shape.dims(), a.min(b), a.max(b), self.dtype().size());
        swap_axes_bytes(r.bytes(), w.bytes_mut(), g);
        Ok(())
    }
}
