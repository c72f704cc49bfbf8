//! The GPU side of the operations: when every blob of an operation lives
//! on the same GPU engine, the op runs as a kernel of `engine/gpu.rs` on
//! the blobs' device buffers. Each function returns `Ok(false)` when the
//! kernels do not cover the case — 1- and 2-byte dtypes, f64/i64
//! arithmetic (WGSL has no 64-bit types), integer `scale` — and the
//! caller then runs the host code, whose memory access syncs the data back
//! (the blob's head moves to the CPU). That is the documented host
//! fallback.

use crate::blob::{Blob, Region};
use crate::dtype::DType;
use crate::engine::gpu::{DevBuf, Elementwise, Gpu, Reduction};
use crate::element::Scalar;
use crate::error::Result;
use crate::storage::Borrow;
use std::sync::Arc;

/// The GPU shared by every blob, if they all live on the same GPU engine.
pub(crate) fn common_gpu(blobs: &[&Blob]) -> Option<Arc<Gpu>> {
    let first = blobs.first()?.engine().gpu_device()?;
    blobs
        .iter()
        .all(|b| b.engine().gpu_device().is_some_and(|g| Arc::ptr_eq(g, first)))
        .then(|| Arc::clone(first))
}

/// One blob's words on the device, borrowed for the kernel.
struct Side {
    region: Region,
    buffer: DevBuf,
    /// First word and number of words of the region.
    off: usize,
    words: usize,
    write: bool,
    borrow: Option<Borrow>,
}

impl Side {
    /// Word-aligned regions of storages that fit one device buffer only
    /// (`None` otherwise: use the host path).
    fn new(g: &Gpu, region: Region, write: bool) -> Result<Option<Side>> {
        let (start, end) = region.byte_range();
        if !region.dense || start % 4 != 0 || (end - start) % 4 != 0 || !g.fits(region.storage.len()) {
            return Ok(None);
        }
        let (borrow, buffer) = region.storage.device(start, end, write)?;
        Ok(Some(Side { region, buffer, off: start / 4, words: (end - start) / 4, write, borrow: Some(borrow) }))
    }

    /// Records the kernel in the storage's head, then releases the borrow.
    fn done(mut self) -> Result<()> {
        let (start, end) = self.region.byte_range();
        let r = self.region.storage.device_done(start, end, self.write);
        self.borrow.take();
        r
    }

    fn same_buffer(&self, other: &Side) -> bool {
        Arc::ptr_eq(&self.region.storage, &other.region.storage)
    }
}

/// The source's buffer and word offset, copied to a temporary buffer when
/// it is the destination's (a kernel cannot bind one buffer twice).
fn source(g: &Gpu, dst: &Side, src: &Side) -> Result<(DevBuf, usize)> {
    if dst.same_buffer(src) {
        Ok((g.temp_copy(&src.buffer, src.off, src.words)?, 0))
    } else {
        Ok((src.buffer.clone(), src.off))
    }
}

fn words_per(dtype: DType) -> Option<usize> {
    dtype.size().is_multiple_of(4).then(|| dtype.size() / 4)
}

/// The fill pattern of `value`'s bits, as 32-bit words (4- and 8-byte
/// dtypes; the others take the host path).
fn pattern(value: &Scalar) -> Option<(Elementwise, [u32; 2])> {
    let b = value.bytes();
    let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    match b.len() {
        4 => Some((Elementwise::Fill1, [word(0), 0])),
        8 => Some((Elementwise::Fill2, [word(0), word(4)])),
        _ => None,
    }
}

/// Fills a region with `value`'s bits (`None`: zero bytes, any dtype).
pub(crate) fn fill(g: &Gpu, region: Region, value: Option<&Scalar>) -> Result<bool> {
    let (op, v) = match value {
        None => (Elementwise::Fill1, [0, 0]),
        Some(v) => match pattern(v) {
            Some(p) => p,
            None => return Ok(false),
        },
    };
    let Some(d) = Side::new(g, region, true)? else { return Ok(false) };
    g.batch("fill", || g.elementwise(op, &d.buffer, d.off, None, d.words, v))?;
    d.done()?;
    Ok(true)
}

/// `x *= factor` for f32 (other dtypes use the host path).
pub(crate) fn scale(g: &Gpu, region: Region, factor: f64) -> Result<bool> {
    if region.dtype != DType::F32 {
        return Ok(false);
    }
    let Some(d) = Side::new(g, region, true)? else { return Ok(false) };
    g.batch("scale", || g.elementwise(Elementwise::ScaleF32, &d.buffer, d.off, None, d.words, [(factor as f32).to_bits(), 0]))?;
    d.done()?;
    Ok(true)
}

/// `dst += src` (`subtract`: `dst -= src`) for f32, i32 and u32 (whose
/// wrapping sums have i32's bits).
pub(crate) fn binary(g: &Gpu, dst: Region, src: Region, subtract: bool) -> Result<bool> {
    let op = match (dst.dtype, subtract) {
        (DType::F32, false) => Elementwise::AddF32,
        (DType::F32, true) => Elementwise::SubF32,
        (DType::I32 | DType::U32, false) => Elementwise::AddI32,
        (DType::I32 | DType::U32, true) => Elementwise::SubI32,
        _ => return Ok(false),
    };
    let same = dst.same_bytes(&src);
    let Some(s) = Side::new(g, src, false)? else { return Ok(false) };
    if same {
        // x += x: one exclusive borrow covers both roles.
        drop(s);
        let Some(d) = Side::new(g, dst, true)? else { return Ok(false) };
        g.batch("add", || {
            let (buf, off) = (g.temp_copy(&d.buffer, d.off, d.words)?, 0);
            g.elementwise(op, &d.buffer, d.off, Some((&buf, off)), d.words, [0, 0])
        })?;
        return d.done().map(|_| true);
    }
    let Some(d) = Side::new(g, dst, true)? else { return Ok(false) };
    g.batch("add", || {
        let (buf, off) = source(g, &d, &s)?;
        g.elementwise(op, &d.buffer, d.off, Some((&buf, off)), d.words, [0, 0])
    })?;
    s.done()?;
    d.done()?;
    Ok(true)
}

/// asum (`squares`: sumsq) of an f32 or i32 region; None when the host
/// must compute it (other dtypes, a region the device cannot take, or an
/// f32 sum that is not finite).
pub(crate) fn reduce(g: &Gpu, region: Region, squares: bool) -> Result<Option<f64>> {
    let op = match (region.dtype, squares) {
        (DType::F32, false) => Reduction::AsumF32,
        (DType::F32, true) => Reduction::SumsqF32,
        (DType::I32, false) => Reduction::AsumI32,
        (DType::I32, true) => Reduction::SumsqI32,
        _ => return Ok(None),
    };
    let Some(s) = Side::new(g, region, false)? else { return Ok(None) };
    let sum = g.reduce(op, &s.buffer, s.off, s.words)?;
    s.done()?;
    // An f32 sum that is not finite may be the device's f32 overflowing
    // (a square past 1.8e19, partials past 3.4e38) where the host's f64
    // sum is finite: the host decides (also when the data holds inf or
    // NaN, which it then returns).
    if !sum.is_finite() {
        return Ok(None);
    }
    Ok(Some(sum))
}

pub(crate) use crate::engine::gpu::Strided;

/// Strided element copies from `src` into `dst` (dtypes of whole words);
/// offsets are in elements from the start of each region's storage, and
/// every element a copy reaches must lie inside its region.
pub(crate) fn copies(g: &Gpu, dst: Region, src: Region, parts: &[Strided]) -> Result<bool> {
    let Some(k) = words_per(dst.dtype) else { return Ok(false) };
    let Some(s) = Side::new(g, src, false)? else { return Ok(false) };
    let Some(d) = Side::new(g, dst, true)? else { return Ok(false) };
    // One submission for the whole copy.
    g.batch("copy", || copy_parts(g, &d, &s, parts, k))?;
    s.done()?;
    d.done()?;
    Ok(true)
}

fn copy_parts(g: &Gpu, d: &Side, s: &Side, parts: &[Strided], k: usize) -> Result<()> {
    // Offsets in `parts` are relative to the storage; a temporary copy of
    // the source starts at the source region's first word.
    let (buf, _) = source(g, d, s)?;
    let shift = if d.same_buffer(s) { s.off } else { 0 };
    for p in parts {
        let mut dims = p.dims.clone();
        let mut ds: Vec<isize> = p.dst_strides.iter().map(|x| x * k as isize).collect();
        let mut ss: Vec<isize> = p.src_strides.iter().map(|x| x * k as isize).collect();
        if k > 1 {
            dims.push(k);
            ds.push(1);
            ss.push(1);
        }
        let words = fused(Strided { dims, dst_off: p.dst_off * k, dst_strides: ds, src_off: p.src_off * k - shift, src_strides: ss });
        // Contiguous runs on both sides (merges, splits, plain copies)
        // are row copies; the rest is the general strided kernel.
        let r = words.dims.len();
        let run = words.dims.last().copied().unwrap_or(1);
        let inner = words.dst_strides.last().is_none_or(|&x| x == 1) && words.src_strides.last().is_none_or(|&x| x == 1);
        // Reversed views (negative strides) take the general kernel.
        let forwards = words.dst_strides.iter().chain(&words.src_strides).all(|&x| x >= 0);
        if r <= 3 && inner && forwards {
            let at = |v: &[isize], k: usize| if r > k { v[r - 1 - k] as usize } else { 0 };
            let (rows, planes) = (if r >= 2 { words.dims[r - 2] } else { 1 }, if r == 3 { words.dims[0] } else { 1 });
            let dd = (words.dst_off, at(&words.dst_strides, 1), at(&words.dst_strides, 2));
            let ss = (words.src_off, at(&words.src_strides, 1), at(&words.src_strides, 2));
            g.copy_rows(&d.buffer, &buf, planes, rows, run, dd, ss)?;
        } else if let Some((planes, rows, cols, dd, ss)) = transpose_shape(&words).filter(|_| forwards) {
            g.transpose(&d.buffer, &buf, planes, rows, cols, dd, ss)?;
        } else {
            g.strided_copy(&d.buffer, &buf, &words)?;
        }
    }
    Ok(())
}

/// The copy with size-1 dims dropped and adjacent dims fused where both
/// sides are contiguous across them (fewer dims: fewer divisions per
/// element, and contiguous runs the row kernel can take).
fn fused(c: Strided) -> Strided {
    let mut dims = Vec::with_capacity(c.dims.len());
    let (mut ds, mut ss) = (Vec::with_capacity(c.dims.len()), Vec::with_capacity(c.dims.len()));
    for i in 0..c.dims.len() {
        if c.dims[i] == 1 {
            continue;
        }
        if let (Some(_), Some(&d), Some(&s)) = (dims.last(), ds.last(), ss.last()) {
            if d == c.dst_strides[i] * c.dims[i] as isize && s == c.src_strides[i] * c.dims[i] as isize {
                let last = dims.len() - 1;
                dims[last] *= c.dims[i];
                ds[last] = c.dst_strides[i];
                ss[last] = c.src_strides[i];
                continue;
            }
        }
        dims.push(c.dims[i]);
        ds.push(c.dst_strides[i]);
        ss.push(c.src_strides[i]);
    }
    Strided { dims, dst_off: c.dst_off, dst_strides: ds, src_off: c.src_off, src_strides: ss }
}

/// A (batched) 2-D transpose: the destination's inner dim (the last) is
/// the source's row dim, and another dim is contiguous in the source; a
/// third dim, if any, is the batch (planes). Returns (planes, source rows,
/// source columns, destination (offset, row, plane), source (offset, row,
/// plane)) for the transpose kernels (tiles, or one thread per line when
/// a side is short).
#[allow(clippy::type_complexity)]
fn transpose_shape(c: &Strided) -> Option<(usize, usize, usize, (usize, usize, usize), (usize, usize, usize))> {
    let r = c.dims.len();
    if !(2..=3).contains(&r) {
        return None;
    }
    let b = r - 1;
    if c.dst_strides[b] != 1 {
        return None;
    }
    let a = (0..b).find(|&i| c.src_strides[i] == 1)?;
    let u = |x: isize| x as usize; // the caller checked every stride >= 0
    let (planes, dp, sp) = match (0..b).find(|&i| i != a) {
        Some(p) => (c.dims[p], u(c.dst_strides[p]), u(c.src_strides[p])),
        None => (1, 0, 0),
    };
    // Source rows run along dst's inner dim b; source columns along a.
    Some((planes, c.dims[b], c.dims[a], (c.dst_off, u(c.dst_strides[a]), dp), (c.src_off, u(c.src_strides[b]), sp)))
}

/// Several sources into one destination (merge) or one source into
/// several destinations (split), as 2-D copies of `outer` rows: part `i`
/// holds `chunks[i]` elements per row, the whole `row` elements.
pub(crate) fn merge_split(g: &Gpu, whole: &Region, parts: &[Region], outer: usize, chunks: &[usize], merge: bool) -> Result<bool> {
    if words_per(whole.dtype).is_none() {
        return Ok(false);
    }
    let row: usize = chunks.iter().sum();
    let mut at = 0;
    for (p, &c) in parts.iter().zip(chunks) {
        let whole_part = Strided { dims: vec![outer, c], dst_off: 0, dst_strides: vec![row as isize, 1], src_off: 0, src_strides: vec![c as isize, 1] };
        let (dst, src, s) = if merge {
            let s = Strided { dst_off: whole.offset + at, src_off: p.offset, ..whole_part };
            (whole.clone(), p.clone(), s)
        } else {
            let s = Strided {
                dims: vec![outer, c],
                dst_off: p.offset,
                dst_strides: vec![c as isize, 1],
                src_off: whole.offset + at,
                src_strides: vec![row as isize, 1],
            };
            (p.clone(), whole.clone(), s)
        };
        if !copies(g, dst, src, &[s])? {
            return Ok(false);
        }
        at += c;
    }
    Ok(true)
}
