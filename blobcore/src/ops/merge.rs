//! Merge and split along any axis (NeoML `MergeByDim` / `SplitByDim`,
//! i.e. `numpy.concatenate` and its inverse) and by objects, with every
//! shape checked.

use crate::blob::{Blob, HostMut, HostRef, Region};
use crate::engine::cpu::PARALLEL_BYTES;
use crate::error::{err, Result};
use crate::ops::strided::copy_chunk;
use crate::ops::{gpu, par_copy_pieces, source_for, strided, Source, TASK_BYTES};
use crate::overlap::{Footprint, Overlap, OP_WORK};
use crate::shape::{BlobDim, Shape};
use rayon::prelude::*;

/// How the whole (merged) blob is cut into parts: `outer` rows, and in
/// each row one chunk of `chunks[i]` bytes from part `i`, in order.
struct Plan {
    outer: usize,
    chunks: Vec<usize>,
    row: usize,
}

impl Plan {
    fn new(outer: usize, chunks: Vec<usize>) -> Plan {
        let row = chunks.iter().sum();
        Plan { outer, chunks, row }
    }

    /// The chunks in elements of `es` bytes.
    fn element_chunks(&self, es: usize) -> Option<Vec<usize>> {
        self.chunks.iter().map(|&c| (c % es == 0).then_some(c / es)).collect()
    }

    fn rows_per_task(&self) -> usize {
        (TASK_BYTES / self.row.max(1)).max(1)
    }

    /// Gathers the parts into `whole`.
    fn merge(&self, parts: &[&[u8]], whole: &mut [u8]) {
        if self.row == 0 || self.outer == 0 {
            return;
        }
        // Large merges write with streaming stores (see ops::strided).
        let stream = strided::streams(whole.len());
        let gather = |o0: usize, d: &mut [u8]| {
            if stream {
                // Out of cache. Short aligned chunks (a channel merge) go
                // row by row in one loop (strided::merge_rows). Otherwise
                // part by part over the task's rows, each part read in one
                // long run: reading the parts' chunks in turn with a call
                // per chunk slowed merges 2.4x when the parts lay a large
                // power of two apart (every read then went to the same
                // DRAM bank as the one before). Either way the streamed
                // stores write whole lines.
                let rows = d.len() / self.row;
                let from: Vec<&[u8]> = parts.iter().zip(&self.chunks).map(|(p, &c)| &p[o0 * c..]).collect();
                if strided::merge_rows(d, &from, &self.chunks, rows) {
                    strided::store_fence();
                    return;
                }
                let mut at = 0;
                for (p, &c) in parts.iter().zip(&self.chunks) {
                    // As in split: copy_rows always copies here; the loop
                    // is its bounds-checked twin.
                    if !strided::copy_rows(&mut d[at..], self.row, &p[o0 * c..], c, c, rows, true) {
                        for (r, drow) in d.chunks_exact_mut(self.row).enumerate() {
                            copy_chunk(&mut drow[at..at + c], &p[(o0 + r) * c..(o0 + r) * c + c]);
                        }
                    }
                    at += c;
                }
                strided::store_fence();
                return;
            }
            for (r, drow) in d.chunks_exact_mut(self.row).enumerate() {
                let o = o0 + r;
                let mut at = 0;
                for (p, &c) in parts.iter().zip(&self.chunks) {
                    copy_chunk(&mut drow[at..at + c], &p[o * c..o * c + c]);
                    at += c;
                }
            }
        };
        if self.row * self.outer < PARALLEL_BYTES {
            gather(0, whole);
        } else if self.row >= 4 * TASK_BYTES {
            // Rows of several MiB: every part's piece of every row in one
            // parallel pass.
            let mut pairs = Vec::with_capacity(self.outer * parts.len());
            for (o, drow) in whole.chunks_exact_mut(self.row).enumerate() {
                let mut rest = drow;
                for (p, &c) in parts.iter().zip(&self.chunks) {
                    let (d, r) = rest.split_at_mut(c);
                    rest = r;
                    pairs.push((d, &p[o * c..o * c + c]));
                }
            }
            par_copy_pieces(pairs, stream);
        } else {
            let rpt = self.rows_per_task();
            crate::engine::pool::install(|| whole.par_chunks_mut(rpt * self.row).enumerate().for_each(|(t, d)| gather(t * rpt, d)));
        }
    }

    /// Scatters `whole` into the parts.
    fn split(&self, whole: &[u8], parts: &mut [&mut [u8]]) {
        if self.row == 0 || self.outer == 0 {
            return;
        }
        let stream = strided::streams(whole.len());
        let scatter = |o0: usize, n: usize, outs: &mut [&mut [u8]]| {
            if stream {
                // Short aligned chunks (a channel split) go row by row in
                // one loop that reads whole in order (strided::split_rows):
                // part by part, each part's pass read half of every row
                // and the split Channels row at 1 GiB took 0.71-0.73x of
                // a dense copy against 0.84-0.88x row by row. Otherwise
                // part by part, as in merge: one loop per part over the
                // task's rows, not a call per chunk.
                if strided::split_rows(&whole[o0 * self.row..], outs, &self.chunks, n) {
                    strided::store_fence();
                    return;
                }
                let mut at = o0 * self.row;
                for (p, &c) in outs.iter_mut().zip(&self.chunks) {
                    // The plan keeps every row inside the part and the
                    // whole, so copy_rows always copies; the per-row loop
                    // is only its bounds-checked twin.
                    if !strided::copy_rows(p, c, &whole[at..], self.row, c, n, true) {
                        for r in 0..n {
                            copy_chunk(&mut p[r * c..r * c + c], &whole[at + r * self.row..at + r * self.row + c]);
                        }
                    }
                    at += c;
                }
                strided::store_fence();
                return;
            }
            for r in 0..n {
                let o = o0 + r;
                let mut at = o * self.row;
                for (p, &c) in outs.iter_mut().zip(&self.chunks) {
                    copy_chunk(&mut p[r * c..r * c + c], &whole[at..at + c]);
                    at += c;
                }
            }
        };
        if self.row * self.outer < PARALLEL_BYTES {
            scatter(0, self.outer, parts);
        } else if self.row >= 4 * TASK_BYTES {
            // As in merge: one parallel pass over all the pieces.
            let mut rows: Vec<_> = parts.iter_mut().zip(&self.chunks).map(|(p, &c)| p.chunks_mut(c.max(1))).collect();
            let mut pairs = Vec::with_capacity(self.outer * rows.len());
            for o in 0..self.outer {
                let mut at = o * self.row;
                for (it, &c) in rows.iter_mut().zip(&self.chunks) {
                    if let Some(d) = it.next() {
                        pairs.push((d, &whole[at..at + c]));
                    }
                    at += c;
                }
            }
            par_copy_pieces(pairs, stream);
        } else {
            let rpt = self.rows_per_task();
            let tasks = self.outer.div_ceil(rpt);
            // One list of output pieces per task: rows [t*rpt, t*rpt + rpt) of every part.
            let mut iters: Vec<_> = parts
                .iter_mut()
                .zip(&self.chunks)
                .map(|(p, &c)| p.chunks_mut((rpt * c).max(1)))
                .collect();
            let lists: Vec<Vec<&mut [u8]>> = (0..tasks)
                .map(|_| iters.iter_mut().map(|it| it.next().unwrap_or(&mut [])).collect())
                .collect();
            crate::engine::pool::install(|| {
                lists.into_par_iter().enumerate().for_each(|(t, mut outs)| {
                    let o0 = t * rpt;
                    scatter(o0, rpt.min(self.outer - o0), &mut outs);
                })
            });
        }
    }
}

fn check_same_dtype(blobs: &[&Blob], with: &Blob, op: &str) -> Result<()> {
    if blobs.is_empty() {
        return Err(err!(InvalidArgument, "{op}: the list of blobs is empty"));
    }
    for (i, b) in blobs.iter().enumerate() {
        if b.dtype() != with.dtype() {
            return Err(err!(DType, "{op}: blob {i} holds {} but the other side holds {}; convert with astype (cast) first", b.dtype(), with.dtype()));
        }
    }
    Ok(())
}

/// The plan for concatenating `parts` along `axis` into `whole`, after
/// checking every dim.
fn axis_plan(parts: &[Region], axis: isize, whole: &Region, op: &str) -> Result<Plan> {
    let ax = whole.shape.canonical_axis(axis)?;
    let dims: Vec<&[usize]> = parts.iter().map(|p| p.shape.dims()).collect();
    dims_plan(&dims, ax, whole.shape.dims(), whole.dtype.size(), op)
}

/// The plan for concatenating `parts` along the named dim `d` into
/// `whole`, every blob seen through its 7 padded named dims (NeoML's
/// `MergeByDim`, which accepts blobs of any rank <= 7 this way).
fn named_plan(parts: &[Region], d: BlobDim, whole: &Region, op: &str) -> Result<Plan> {
    let named: Vec<[usize; 7]> = parts.iter().map(|p| p.shape.named_dims()).collect::<Result<_>>()?;
    let dims: Vec<&[usize]> = named.iter().map(|n| &n[..]).collect();
    dims_plan(&dims, d.index(), &whole.shape.named_dims()?, whole.dtype.size(), op)
}

/// The plan for concatenating parts of dims `parts` along axis `ax` into a
/// whole of dims `whole` (elements of `es` bytes), after checking that
/// ranks are equal, dims differ only at `ax` and those sizes add up.
fn dims_plan(parts: &[&[usize]], ax: usize, whole: &[usize], es: usize, op: &str) -> Result<Plan> {
    let mut sum = 0usize;
    for (i, pd) in parts.iter().enumerate() {
        if pd.len() != whole.len() {
            return Err(err!(Shape, "{op}: blob {i} has rank {} but the merged blob has rank {}", pd.len(), whole.len()));
        }
        for (k, (&a, &b)) in pd.iter().zip(whole).enumerate() {
            if k != ax && a != b {
                return Err(err!(
                    Shape,
                    "{op}: blob {i} is {pd:?} but the merged blob is {whole:?}; they may differ only at axis {ax}"
                ));
            }
        }
        sum = sum.checked_add(pd[ax]).ok_or_else(|| err!(Shape, "{op}: the parts' axis {ax} sizes overflow"))?;
    }
    if sum != whole[ax] {
        return Err(err!(
            Shape,
            "{op}: the parts' axis {ax} sizes add up to {sum} but the merged blob's is {}",
            whole[ax]
        ));
    }
    let outer: usize = whole[..ax].iter().product();
    let chunks = parts.iter().map(|pd| pd[ax..].iter().product::<usize>() * es).collect();
    Ok(Plan::new(outer, chunks))
}

/// The plan for merging whole objects: equal BatchLength, BatchWidth and
/// ListSize everywhere, object sizes adding up.
fn object_plan(parts: &[Region], whole: &Region, op: &str) -> Result<Plan> {
    let wn = whole.shape.named_dims()?;
    let mut sum = 0usize;
    for (i, p) in parts.iter().enumerate() {
        let pn = p.shape.named_dims()?;
        if pn[..3] != wn[..3] {
            return Err(err!(
                Shape,
                "{op}: blob {i} has BatchLength x BatchWidth x ListSize {:?} but the merged blob has {:?}",
                &pn[..3],
                &wn[..3]
            ));
        }
        sum += p.shape.object_size()?;
    }
    let total = whole.shape.object_size()?;
    if sum != total {
        return Err(err!(Shape, "{op}: the parts' object sizes add up to {sum} but the merged blob's is {total}"));
    }
    let es = whole.dtype.size();
    let chunks = parts.iter().map(|p| p.shape.object_size().map(|s| s * es)).collect::<Result<_>>()?;
    Ok(Plan::new(whole.shape.object_count()?, chunks))
}

fn run_merge(from: &[&Blob], to: &Blob, op: &str, plan: &dyn Fn(&[Region], &Region) -> Result<Plan>) -> Result<()> {
    check_same_dtype(from, to, op)?;
    if !to.is_dense() || from.iter().any(|b| !b.is_dense()) {
        // Any layout: merge the logical values (read first) into a dense
        // blob, copied into the destination after.
        let dense: Vec<Blob> = from.iter().map(|b| b.to_dense()).collect::<Result<_>>()?;
        let refs: Vec<&Blob> = dense.iter().collect();
        return to.through_dense(true, |t| run_merge(&refs, t, op, plan));
    }
    let parts: Vec<Region> = from.iter().map(|b| b.snapshot()).collect();
    let whole = to.snapshot();
    // A first look checks the shapes before any copy is taken.
    plan(&parts, &whole)?;
    // Parts that share memory with the destination are read from copies
    // taken first (NumPy's rule for overlapping operands).
    let mut apart: Vec<Blob> = Vec::with_capacity(from.len());
    for b in from {
        apart.push(match source_for(to, b)? {
            Source::Same => b.copy()?,
            Source::Apart(s) => s,
        });
    }
    let from: Vec<&Blob> = apart.iter().collect();
    let parts: Vec<Region> = from.iter().map(|b| b.snapshot()).collect();
    // Planned again from the regions it runs on: another thread may have
    // reshaped a part since the first look (a Shape error, not a panic).
    let plan = plan(&parts, &whole)?;
    let blobs: Vec<&Blob> = from.iter().copied().chain([to]).collect();
    if let Some(g) = gpu::common_gpu(&blobs) {
        if let Some(chunks) = plan.element_chunks(whole.dtype.size()) {
            if gpu::merge_split(&g, &whole, &parts, plan.outer, &chunks, true)? {
                return Ok(());
            }
        }
    }
    let reads: Vec<HostRef> = parts.iter().map(|p| p.read()).collect::<Result<_>>()?;
    let mut write = whole.write()?;
    let slices: Vec<&[u8]> = reads.iter().map(|r| r.bytes()).collect();
    plan.merge(&slices, write.bytes_mut());
    Ok(())
}

fn run_split(from: &Blob, to: &[&Blob], op: &str, plan: &dyn Fn(&[Region], &Region) -> Result<Plan>) -> Result<()> {
    check_same_dtype(to, from, op)?;
    // Shapes first (the plan checks them), then overlapping destinations.
    plan(&to.iter().map(|b| b.snapshot()).collect::<Vec<_>>(), &from.snapshot())?;
    let prints: Vec<Footprint> = to.iter().map(|b| b.footprint()).collect();
    for (i, p) in prints.iter().enumerate() {
        if let Some(j) = prints[..i].iter().position(|q| q.overlap(p, OP_WORK) != Overlap::No) {
            return Err(err!(InvalidArgument, "{op}: destinations {j} and {i} share memory; each element would be written twice"));
        }
    }
    if !from.is_dense() || to.iter().any(|b| !b.is_dense()) {
        // Any layout: split the logical values (read first) into dense
        // blobs, each copied into its destination after.
        if let Some(i) = to.iter().position(|b| !b.is_writable()) {
            return Err(err!(ReadOnly, "{op}: destination {i} is read-only (it wraps memory lent read-only)"));
        }
        let src = from.to_dense()?;
        let tmps: Vec<Blob> = to.iter().map(|b| if b.is_dense() { Ok((*b).clone()) } else { b.clone_zeroed() }).collect::<Result<_>>()?;
        let refs: Vec<&Blob> = tmps.iter().collect();
        run_split(&src, &refs, op, plan)?;
        for (t, b) in tmps.iter().zip(to) {
            if !b.is_dense() {
                b.copy_from(t)?;
            }
        }
        return Ok(());
    }
    let parts: Vec<Region> = to.iter().map(|b| b.snapshot()).collect();
    let whole = from.snapshot();
    plan(&parts, &whole)?;
    // A source that shares memory with a destination is copied first.
    let whole_fp = from.footprint();
    let copied;
    let from = if prints.iter().any(|p| p.overlap(&whole_fp, OP_WORK) != Overlap::No) {
        copied = from.copy()?;
        &copied
    } else {
        from
    };
    let whole = from.snapshot();
    // As in run_merge: planned again from the regions it runs on.
    let plan = plan(&parts, &whole)?;
    let blobs: Vec<&Blob> = to.iter().copied().chain([from]).collect();
    if let Some(g) = gpu::common_gpu(&blobs) {
        if let Some(chunks) = plan.element_chunks(whole.dtype.size()) {
            if gpu::merge_split(&g, &whole, &parts, plan.outer, &chunks, false)? {
                return Ok(());
            }
        }
    }
    let read = whole.read()?;
    let mut writes: Vec<HostMut> = parts.iter().map(|p| p.write()).collect::<Result<_>>()?;
    let mut slices: Vec<&mut [u8]> = writes.iter_mut().map(|w| w.bytes_mut()).collect();
    plan.split(read.bytes(), &mut slices);
    Ok(())
}

impl Blob {
    /// NeoML `MergeByDim` = `numpy.concatenate(from, axis)` into the
    /// preallocated `to`. Ranks must match, dims may differ only at `axis`,
    /// and those sizes must add up to `to`'s; dtypes must be equal. Named
    /// dims are axes 0..=6 ([`BlobDim`] converts).
    pub fn merge(from: &[&Blob], axis: isize, to: &Blob) -> Result<()> {
        run_merge(from, to, "merge", &|p, w| axis_plan(p, axis, w, "merge"))
    }

    /// NeoML `SplitByDim`: the inverse of [`Blob::merge`]; the parts' sizes
    /// are the `to` blobs' dims at `axis`.
    pub fn split(from: &Blob, axis: isize, to: &[&Blob]) -> Result<()> {
        run_split(from, to, "split", &|p, w| axis_plan(p, axis, w, "split"))
    }

    /// NeoML `MergeByObject`: for every object position (BatchLength x
    /// BatchWidth x ListSize, equal in all blobs), the merged object is the
    /// parts' objects one after another. Object sizes must add up.
    pub fn merge_objects(from: &[&Blob], to: &Blob) -> Result<()> {
        run_merge(from, to, "merge_objects", &|p, w| object_plan(p, w, "merge_objects"))
    }

    /// NeoML `SplitByObject`: the inverse of [`Blob::merge_objects`].
    pub fn split_objects(from: &Blob, to: &[&Blob]) -> Result<()> {
        run_split(from, to, "split_objects", &|p, w| object_plan(p, w, "split_objects"))
    }

    /// Merges into a new blob: `numpy.concatenate(from, axis)`.
    pub fn merged(from: &[&Blob], axis: isize) -> Result<Blob> {
        let first = from.first().ok_or_else(|| err!(InvalidArgument, "merge: the list of blobs is empty"))?;
        let shape = first.shape();
        let ax = shape.canonical_axis(axis)?;
        let mut total = 0usize;
        for b in from {
            let s = b.shape();
            if s.rank() != shape.rank() {
                return Err(err!(Shape, "merge: ranks differ ({} and {})", s.rank(), shape.rank()));
            }
            total = total
                .checked_add(s.dims()[ax])
                .ok_or_else(|| err!(Shape, "merge: merged axis size overflows"))?;
        }
        let out = Blob::new(first.engine(), first.dtype(), shape.with_dim(ax, total)?)?;
        Blob::merge(from, axis, &out)?;
        Ok(out)
    }

    /// Splits into new blobs whose sizes at `axis` are `sizes` (which must
    /// add up to the blob's size there).
    pub fn split_sizes(&self, axis: isize, sizes: &[usize]) -> Result<Vec<Blob>> {
        let shape = self.shape();
        let ax = shape.canonical_axis(axis)?;
        let sum = sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s));
        if sizes.is_empty() || sum != Some(shape.dims()[ax]) {
            return Err(err!(
                Shape,
                "split: sizes {sizes:?} do not add up to axis {ax}'s size {}",
                shape.dims()[ax]
            ));
        }
        let parts: Vec<Blob> = sizes
            .iter()
            .map(|&s| Blob::new(self.engine(), self.dtype(), shape.with_dim(ax, s)?))
            .collect::<Result<_>>()?;
        let refs: Vec<&Blob> = parts.iter().collect();
        Blob::split(self, axis, &refs)?;
        Ok(parts)
    }

    /// Splits into `n` equal parts along `axis` (`numpy.split(a, n, axis)`):
    /// a Shape error unless `n` divides the axis size.
    pub fn split_equal(&self, axis: isize, n: usize) -> Result<Vec<Blob>> {
        let size = self.dim(axis)?;
        if n == 0 || size % n != 0 {
            return Err(err!(Shape, "split: {n} equal parts do not divide axis size {size}"));
        }
        self.split_sizes(axis, &vec![size / n; n])
    }

    /// NeoML `MergeByDim(d)` with a named dim: every blob is seen through
    /// its 7 named dims (its shape padded with trailing 1s), so a vector
    /// or a matrix merges along `Channels` as NeoML does. Blobs of
    /// different ranks merge when their padded dims agree. Rank > 7 is a
    /// Shape error.
    pub fn merge_dim(from: &[&Blob], d: BlobDim, to: &Blob) -> Result<()> {
        run_merge(from, to, "merge", &|p, w| named_plan(p, d, w, "merge"))
    }

    /// NeoML `SplitByDim(d)` with a named dim: the inverse of
    /// [`Blob::merge_dim`].
    pub fn split_dim(from: &Blob, d: BlobDim, to: &[&Blob]) -> Result<()> {
        run_split(from, to, "split", &|p, w| named_plan(p, d, w, "split"))
    }

    /// Merges along a named dim into a new blob. Its rank is the largest
    /// rank `r` of the parts when its named dims past `r` stay 1, else 7
    /// (see [`Shape::from_named`]).
    pub fn merged_dim(from: &[&Blob], d: BlobDim) -> Result<Blob> {
        let first = from.first().ok_or_else(|| err!(InvalidArgument, "merge: the list of blobs is empty"))?;
        let mut named = first.shape().named_dims()?;
        let mut rank = 0;
        let mut total = 0usize;
        for b in from {
            let s = b.shape();
            rank = rank.max(s.rank());
            total = total
                .checked_add(s.named_dim(d)?)
                .ok_or_else(|| err!(Shape, "merge: merged size of {d:?} overflows"))?;
        }
        named[d.index()] = total;
        let out = Blob::new(first.engine(), first.dtype(), Shape::from_named(&named, rank)?)?;
        Blob::merge_dim(from, d, &out)?;
        Ok(out)
    }

    /// Splits along a named dim into new blobs whose sizes there are
    /// `sizes` (adding up to the blob's). Each part keeps this blob's rank
    /// when its padded dims stay 1, else has rank 7.
    pub fn split_sizes_dim(&self, d: BlobDim, sizes: &[usize]) -> Result<Vec<Blob>> {
        let shape = self.shape();
        let named = shape.named_dims()?;
        let size = named[d.index()];
        let sum = sizes.iter().try_fold(0usize, |a, &s| a.checked_add(s));
        if sizes.is_empty() || sum != Some(size) {
            return Err(err!(Shape, "split: sizes {sizes:?} do not add up to {d:?}'s size {size}"));
        }
        let parts: Vec<Blob> = sizes
            .iter()
            .map(|&s| {
                let mut n = named;
                n[d.index()] = s;
                Blob::new(self.engine(), self.dtype(), Shape::from_named(&n, shape.rank())?)
            })
            .collect::<Result<_>>()?;
        let refs: Vec<&Blob> = parts.iter().collect();
        Blob::split_dim(self, d, &refs)?;
        Ok(parts)
    }

    /// Splits into `n` equal parts along a named dim: a Shape error unless
    /// `n` divides its size.
    pub fn split_equal_dim(&self, d: BlobDim, n: usize) -> Result<Vec<Blob>> {
        let size = self.named_dim(d)?;
        if n == 0 || size % n != 0 {
            return Err(err!(Shape, "split: {n} equal parts do not divide {d:?}'s size {size}"));
        }
        self.split_sizes_dim(d, &vec![size / n; n])
    }

    /// The axis index of a named dim, checked against a blob's rank.
    pub fn named_axis(&self, d: BlobDim) -> Result<isize> {
        let r = self.rank();
        if d.index() >= r {
            return Err(err!(OutOfRange, "{d:?} is axis {} but the blob has rank {r}", d.index()));
        }
        Ok(d.index() as isize)
    }
}
