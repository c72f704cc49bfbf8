//! reorder: copy between any two layouts of the same logical data
//! (NCHW <-> NHWC <-> channel-blocked <-> strided regions).
//!
//! Both descs are turned into one list of axes over a common refinement of
//! the logical dims (a dim blocked by `b` in either desc becomes an outer
//! axis of `dim / b` and an inner axis of `b`, plus a tail when `b` does not
//! divide it), each axis with a stride in the destination and one in the
//! source. The axes run in destination order; when the innermost axes of
//! both sides differ (a transpose such as NCHW -> NHWC) they are copied in
//! small square tiles so that reads and writes both stay in cache. Large
//! copies are split across threads along the outermost axis.

use crate::axes::Axes;
use crate::blob::Blob;
use crate::engine::cpu::PARALLEL_BYTES;
use crate::error::{err, Result};
use crate::layout::TensorDesc;
use crate::ops::{gpu, source_for, Source};
use crate::ops::strided::{self, normalise, Axis};
use crate::storage::Borrow;
use std::sync::Arc;

/// How one logical dim is laid out: unblocked (`block` 1, `outer` stride)
/// or split into blocks of `block` with `outer` and `inner` strides.
/// Strides are in elements and may be negative (reversed views).
#[derive(Debug, Clone, Copy)]
struct DimLayout {
    block: usize,
    outer: isize,
    inner: isize,
}

/// Per-dim layouts and the offset of element 0, relative to the blob's base.
fn dim_layouts(desc: &TensorDesc) -> Result<(Vec<DimLayout>, usize)> {
    let b = desc.blocking();
    let base = desc.origin();
    let mut out = Vec::with_capacity(desc.dims().len());
    for d in 0..desc.dims().len() {
        let pos: Vec<usize> = (0..b.order().len()).filter(|&i| b.order()[i] == d).collect();
        out.push(match pos.as_slice() {
            [i] => DimLayout { block: 1, outer: b.strides()[*i], inner: b.strides()[*i] },
            [i0, i1] => DimLayout { block: b.blk_dims()[*i1].max(1), outer: b.strides()[*i0], inner: b.strides()[*i1] },
            _ => {
                return Err(err!(
                    Unsupported,
                    "reorder supports at most one level of blocking per dim; dim {d} is split {} times",
                    pos.len()
                ))
            }
        });
    }
    Ok((out, base))
}

/// Subproblems (destination offset, source offset, axes) covering every
/// logical element exactly once.
///
/// A dim blocked by `B` on one side and `b` on the other (`b` dividing
/// `B`, or unblocked) is cut into levels of `B`, `b` and 1 elements; the
/// stride of a level of `u` elements on a side with block `k` is
/// `(u / k) * outer` when `u >= k`, else `u * inner`. A dim whose size is
/// not a multiple of `B` adds subproblems for the partial blocks.
fn plan(dims: &[usize], dst: &[DimLayout], src: &[DimLayout]) -> Result<Vec<(isize, isize, Vec<Axis>)>> {
    let stride = |l: DimLayout, u: usize| {
        if l.block == 1 {
            u as isize * l.outer
        } else if u >= l.block {
            (u / l.block) as isize * l.outer
        } else {
            u as isize * l.inner
        }
    };
    let mut parts: Vec<(isize, isize, Vec<Axis>)> = vec![(0, 0, Vec::new())];
    for (d, &n) in dims.iter().enumerate() {
        let (a, b) = (dst[d], src[d]);
        let mut units: Vec<usize> = vec![a.block, b.block, 1];
        units.sort_unstable_by(|x, y| y.cmp(x));
        units.dedup();
        if units.windows(2).any(|w| w[0] % w[1] != 0) {
            return Err(err!(
                Unsupported,
                "reorder between blocks of {} and {} along dim {d} is not supported (neither divides the other); reorder through a planar layout",
                b.block,
                a.block
            ));
        }
        // Variants of this dim: (dst offset, src offset, axes).
        let mut variants: Vec<(isize, isize, Vec<Axis>)> = Vec::new();
        let (mut rem, mut pd, mut ps) = (n, 0isize, 0isize);
        for k in 0..units.len() {
            let cnt = rem / units[k];
            if cnt > 0 {
                let mut axes = vec![Axis { n: cnt, ds: stride(a, units[k]), ss: stride(b, units[k]) }];
                for j in k + 1..units.len() {
                    axes.push(Axis { n: units[j - 1] / units[j], ds: stride(a, units[j]), ss: stride(b, units[j]) });
                }
                variants.push((pd, ps, axes));
            }
            pd += cnt as isize * stride(a, units[k]);
            ps += cnt as isize * stride(b, units[k]);
            rem -= cnt * units[k];
        }
        let mut next = Vec::with_capacity(parts.len() * variants.len());
        for p in &parts {
            for v in &variants {
                let mut axes = p.2.clone();
                axes.extend_from_slice(&v.2);
                next.push((p.0 + v.0, p.1 + v.1, axes));
            }
        }
        parts = next;
    }
    Ok(parts)
}

/// What a reorder touches on one side: a borrow of the blob's whole span.
struct Side {
    _borrow: Borrow,
    base: usize,
    layouts: Vec<DimLayout>,
    dims: Vec<usize>,
}

/// Where a blob's elements are for a reorder: its storage, its span
/// `[offset, offset + span)` in elements, the per-dim layouts and the
/// offset of element 0 relative to `offset`.
struct Extent {
    storage: Arc<crate::storage::Storage>,
    offset: usize,
    span: usize,
    layouts: Vec<DimLayout>,
    rel: usize,
    /// The dims the layouts describe, read under the same state lock:
    /// another thread may reshape the blob between two looks.
    dims: Vec<usize>,
}

fn extent(b: &Blob) -> Result<Extent> {
    let st = b.state();
    let desc = match st.desc() {
        Some(d) => d.clone(),
        None => TensorDesc::dense(b.dtype(), st.shape.dims())?,
    };
    let (storage, offset) = (Arc::clone(&st.storage), st.offset);
    drop(st);
    let (layouts, rel) = dim_layouts(&desc)?;
    Ok(Extent { storage, offset, span: desc.span()?, layouts, rel, dims: desc.dims().to_vec() })
}

impl Extent {
    /// The span as a dense region (what a GPU kernel borrows).
    fn region(&self, dtype: crate::dtype::DType) -> Result<crate::blob::Region> {
        Ok(crate::blob::Region {
            dense: true,
            storage: Arc::clone(&self.storage),
            offset: self.offset,
            shape: crate::shape::Shape::new(&[self.span])?,
            dtype,
        })
    }
}

/// The Shape error of a reorder between different dims.
fn same_dims(dst: &[usize], src: &[usize]) -> Result<()> {
    if dst != src {
        return Err(err!(Shape, "reorder: dims differ ({dst:?} and {src:?})"));
    }
    Ok(())
}

fn side(b: &Blob, exclusive: bool) -> Result<Side> {
    let x = extent(b)?;
    let es = b.dtype().size();
    let (start, end) = (x.offset * es, (x.offset + x.span) * es);
    let (borrow, ptr) = x.storage.acquire(start, end, exclusive, exclusive)?;
    Ok(Side { _borrow: borrow, base: ptr.as_ptr() as usize + start + x.rel * es, layouts: x.layouts, dims: x.dims })
}

/// A dense or strided blob's elements, read under one state lock: what
/// a reorder between two such blobs needs, without building their descs
/// or a plan (the per-call path of `b.T.copy()` and strided assignment).
struct Planar {
    storage: Arc<crate::storage::Storage>,
    /// The base, in elements from the storage's start.
    offset: usize,
    /// Element 0's offset from the base.
    origin: usize,
    /// Elements of memory from the base.
    span: usize,
    dims: Axes<usize>,
    strides: Axes<isize>,
}

impl Planar {
    /// None for layouts with blocks, padding or regions (the general path).
    fn of(b: &Blob) -> Option<Planar> {
        let st = b.state();
        let (strides, origin, span) = st.placement.plain_strides(st.shape.dims())?;
        Some(Planar { storage: Arc::clone(&st.storage), offset: st.offset, origin, span, dims: st.shape.dims().iter().copied().collect(), strides })
    }

    /// Copies `src`'s elements (elements of `es` bytes) into these, which
    /// the caller has made apart from them ([`source_for`]).
    fn copy_from(self, src: &Planar, es: usize) -> Result<()> {
        // The dims checked by the caller may have changed since (another
        // thread's reshape): these are the snapshots the borrows cover.
        same_dims(&self.dims, &src.dims)?;
        let axes = strided::loops(&self.dims, &self.strides, &src.strides);
        let (_s, sp) = Arc::clone(&src.storage).acquire(src.offset * es, (src.offset + src.span) * es, false, false)?;
        let (_d, dp) = Arc::clone(&self.storage).acquire(self.offset * es, (self.offset + self.span) * es, true, true)?;
        let parallel = self.dims.iter().product::<usize>() * es >= PARALLEL_BYTES;
        // SAFETY: every index of the axes is a logical index of both blobs,
        // whose elements lie inside the spans borrowed above (exclusive for
        // the destination, shared for the source, apart); a dense or
        // strided view maps distinct indices to distinct elements; bases
        // are element-aligned.
        unsafe {
            let (d, s) = (dp.as_ptr().add((self.offset + self.origin) * es), sp.as_ptr().add((src.offset + src.origin) * es));
            strided::copy(es, &axes, d, s, parallel);
        }
        Ok(())
    }
}

impl Blob {
    /// Copies `src` into this blob, converting between any two layouts of
    /// the same logical dims and dtype (NCHW, NHWC, channel-blocked,
    /// strided regions ...). Padding of a blocked destination is left as it
    /// is (zeros in a new blob). Cache-blocked and parallel for large blobs.
    /// Source and destination may share memory: the result is as if the
    /// source had been copied first.
    pub fn reorder_from(&self, src: &Blob) -> Result<()> {
        if self.dtype() != src.dtype() {
            return Err(err!(DType, "reorder: dtypes differ ({} and {}); convert with astype (cast) first", self.dtype(), src.dtype()));
        }
        let dims = self.dims();
        same_dims(&dims, &src.dims())?;
        if dims.iter().product::<usize>() == 0 {
            return Ok(());
        }
        let es = self.dtype().size();
        // One state lock at a time (`x.reorder_from(x)` takes it once).
        let src = match source_for(self, src)? {
            Source::Same => return Ok(()), // the same elements in the same places
            Source::Apart(s) => s,
        };
        let src = &src;
        if let Some(g) = gpu::common_gpu(&[self, src]) {
            let (dx, sx) = (extent(self)?, extent(src)?);
            same_dims(&dx.dims, &sx.dims)?;
            let parts: Vec<gpu::Strided> = plan(&dx.dims, &dx.layouts, &sx.layouts)?
                .into_iter()
                .map(|(doff, soff, axes)| {
                    let axes = normalise(axes);
                    // Element 0 plus a part's offset is an element of the
                    // blob: never below the storage's start.
                    Ok(gpu::Strided {
                        dims: axes.iter().map(|a| a.n).collect(),
                        dst_off: (dx.offset + dx.rel).checked_add_signed(doff).ok_or_else(|| err!(Internal, "reorder part below the storage"))?,
                        dst_strides: axes.iter().map(|a| a.ds).collect(),
                        src_off: (sx.offset + sx.rel).checked_add_signed(soff).ok_or_else(|| err!(Internal, "reorder part below the storage"))?,
                        src_strides: axes.iter().map(|a| a.ss).collect(),
                    })
                })
                .collect::<Result<_>>()?;
            if gpu::copies(&g, dx.region(self.dtype())?, sx.region(src.dtype())?, &parts)? {
                return Ok(());
            }
        }
        if let (Some(d), Some(s)) = (Planar::of(self), Planar::of(src)) {
            return d.copy_from(&s, es);
        }
        let s = side(src, false)?;
        let d = side(self, true)?;
        // The dims checked above may have changed since (another thread's
        // reshape): the plan is made from the snapshots the borrows cover.
        same_dims(&d.dims, &s.dims)?;
        let parts = plan(&d.dims, &d.layouts, &s.layouts)?;
        let total = d.dims.iter().product::<usize>() * es;
        let parallel = total >= PARALLEL_BYTES;
        for (doff, soff, axes) in parts {
            let axes = normalise(axes);
            let (dp, sp) = (d.base.wrapping_add_signed(doff * es as isize), s.base.wrapping_add_signed(soff * es as isize));
            // SAFETY: every index of the axes is a logical index of the
            // blobs, whose offsets lie inside the spans borrowed above
            // (exclusive for the destination, shared for the source, on
            // different storages); valid descs map distinct indices to
            // distinct elements; bases are element-aligned.
            unsafe { strided::copy(es, &axes, dp as *mut u8, sp as *const u8, parallel) };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::layout::{BlockingDesc, Layout, TensorDesc};
    use crate::{Blob, DType, Engine};

    fn ramp(dims: &[usize]) -> Blob {
        let n: usize = dims.iter().product();
        let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
        Blob::from_slice(&Engine::cpu(), dims, &v).unwrap()
    }

    /// Reads every logical element through the desc's offsets (the slow oracle).
    fn logical(b: &Blob) -> Vec<f32> {
        let desc = b.desc();
        let dims = desc.dims().to_vec();
        let mem = unsafe_mem(b);
        let n: usize = dims.iter().product();
        (0..n).map(|l| mem[desc.offset_linear(l).unwrap()]).collect()
    }

    /// The blob's whole storage from its base (an independent view of memory).
    fn unsafe_mem(b: &Blob) -> Vec<f32> {
        let st = b.state();
        let p = st.storage.host_read().unwrap();
        let n = st.storage.len() / 4 - st.offset;
        // SAFETY: the storage holds len bytes; no writer is active in this test.
        unsafe { std::slice::from_raw_parts((p.as_ptr() as *const f32).add(st.offset), n) }.to_vec()
    }

    #[test]
    fn nchw_nhwc_blocked_round_trips() {
        let dims = [2, 11, 5, 7];
        let a = ramp(&dims);
        let nhwc = Blob::with_desc(&Engine::cpu(), &TensorDesc::new(DType::F32, &dims, Layout::Nhwc).unwrap()).unwrap();
        nhwc.reorder_from(&a).unwrap();
        assert_eq!(logical(&nhwc), a.to_vec::<f32>().unwrap());
        let blk = BlockingDesc::new(&[2, 2, 5, 7, 8], &[0, 1, 2, 3, 1]).unwrap();
        let b8 = Blob::with_desc(&Engine::cpu(), &TensorDesc::with_blocking(DType::F32, &dims, blk).unwrap()).unwrap();
        b8.reorder_from(&nhwc).unwrap();
        assert_eq!(logical(&b8), a.to_vec::<f32>().unwrap());
        let back = Blob::tensor(&Engine::cpu(), DType::F32, &dims).unwrap();
        back.reorder_from(&b8).unwrap();
        assert_eq!(back.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
        // every operation takes the blocked blob, on its logical values
        let want: f32 = a.to_vec::<f32>().unwrap().iter().sum();
        assert_eq!(b8.asum().unwrap(), want as f64);
        b8.scale(2.0).unwrap();
        assert_eq!(logical(&b8), a.to_vec::<f32>().unwrap().iter().map(|v| v * 2.0).collect::<Vec<_>>());
        back.copy_from(&b8).unwrap();
    }

    #[test]
    fn regions_reorder_and_keep_strides() {
        let a = ramp(&[4, 6, 5]);
        let r = a.region(&[1, 2, 1], &[3, 6, 4]).unwrap();
        assert!(!r.is_dense());
        let out = Blob::tensor(&Engine::cpu(), DType::F32, &[2, 4, 3]).unwrap();
        out.reorder_from(&r).unwrap();
        let all = a.to_vec::<f32>().unwrap();
        let mut want = vec![];
        for i in 1..3 {
            for j in 2..6 {
                for k in 1..4 {
                    want.push(all[(i * 6 + j) * 5 + k]);
                }
            }
        }
        assert_eq!(out.to_vec::<f32>().unwrap(), want);
        // writing into a region lands in the parent only inside it
        let z = Blob::tensor(&Engine::cpu(), DType::F32, &[2, 4, 3]).unwrap();
        r.reorder_from(&z).unwrap();
        assert_eq!(a.asum().unwrap(), all.iter().sum::<f32>() as f64 - want.iter().sum::<f32>() as f64);
        r.fill(1.0).unwrap();
        assert_eq!(a.asum().unwrap(), all.iter().sum::<f32>() as f64 - want.iter().sum::<f32>() as f64 + want.len() as f64);
        assert_eq!(a.reorder_from(&r).unwrap_err().code(), 4);
    }
}
