//! NumPy basic indexing: `b[1]`, `b[:, 2:8:3]`, `b[..., None]`, `b.T`.
//!
//! A key is a list of [`Index`] entries with NumPy's meaning. The result is
//! a view sharing the blob's memory: storage + element offset + per-axis
//! strides (a planar [`TensorDesc`]), kept alive like windows and regions,
//! composable (a view of a view is a view of the same storage). When the
//! strides come out row-major the view is dense and every operation takes
//! its fast path; otherwise dense-only operations ask for a copy
//! (`copy()`, `reorder_from`, NumPy through `export`).
//!
//! Negative steps give views with negative strides, as in NumPy: `b[::-1]`
//! is the same memory read backwards, and a write through it lands in `b`.
//! The view's desc keeps the signed strides, and its base is its lowest
//! element (see [`BlockingDesc`]'s padding), so every kernel sees an
//! ordinary span of memory.

use crate::placement::{Placement, Strided};
use crate::blob::{Blob, State, View, ViewKind};
use crate::error::{err, Result};
use crate::layout::{BlockingDesc, TensorDesc};
use crate::shape::{Shape, MAX_RANK};
use crate::axes::{axes_filled, Axes};
use smallvec::SmallVec;
use std::sync::Arc;

/// One entry of a NumPy basic-indexing key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Index {
    /// An integer (negative counts from the end): selects one position and
    /// removes the axis.
    At(i64),
    /// `start:stop:step`, with NumPy's defaults and clipping; `step` must
    /// not be 0.
    Range {
        /// First position (default: 0, or the end for negative steps).
        start: Option<i64>,
        /// One past the last position (default: the end, or before 0).
        stop: Option<i64>,
        /// Distance between positions (default 1).
        step: Option<i64>,
    },
    /// `None` / `numpy.newaxis`: a new axis of length 1.
    NewAxis,
    /// `...`: as many full ranges as the other entries leave axes.
    Ellipsis,
}

impl Index {
    /// The full range `:`.
    pub const ALL: Index = Index::Range { start: None, stop: None, step: None };
}

/// Where an indexed view's elements are: dims, element strides (may be
/// negative) and the element offset of index 0, relative to the parent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    pub(crate) dims: Axes<usize>,
    pub(crate) strides: Axes<isize>,
    pub(crate) offset: isize,
}

/// NumPy's `slice.indices(n)` and the resulting length.
fn resolve_range(start: Option<i64>, stop: Option<i64>, step: Option<i64>, n: usize) -> Result<(i64, i64, usize)> {
    resolved_range(start, stop, step, n).ok_or_else(|| {
        if step == Some(0) {
            err!(InvalidArgument, "slice step cannot be zero")
        } else {
            err!(Shape, "dim {n} is too large to index")
        }
    })
}

/// [`resolve_range`] with `None` for its errors (a zero step, a dim past
/// `i64`). Inline, with no error to return through memory, so the fast
/// view paths read the key's entries in registers (a copy of an entry
/// into the arguments of an out-of-line call read it back in wider loads
/// than the parser had just written it with: a store-forwarding stall).
#[inline(always)]
fn resolved_range(start: Option<i64>, stop: Option<i64>, step: Option<i64>, n: usize) -> Option<(i64, i64, usize)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return None;
    }
    let n = i64::try_from(n).ok()?;
    let clip = |v: Option<i64>, default: i64| -> i64 {
        match v {
            None => default,
            Some(v) if v < 0 => {
                let v = v.saturating_add(n);
                if v < 0 {
                    if step < 0 { -1 } else { 0 }
                } else {
                    v
                }
            }
            Some(v) if v >= n => {
                if step < 0 { n - 1 } else { n }
            }
            Some(v) => v,
        }
    };
    let (start, stop) = if step > 0 { (clip(start, 0), clip(stop, n)) } else { (clip(start, n - 1), clip(stop, -1)) };
    let len = if step > 0 {
        if stop > start { (stop - start - 1) / step + 1 } else { 0 }
    } else if start > stop {
        // unsigned_abs: a step of i64::MIN has no i64 negation.
        ((start - stop - 1) as u64 / step.unsigned_abs()) as i64 + 1
    } else {
        0
    };
    Some((start, step, len as usize))
}

/// `offset + i * stride`, or a Shape error where it passes `isize`: an
/// index of a blob's span cannot (the span fits), but the strides of a
/// blob with no elements are checked against no memory.
fn offset_plus(offset: isize, i: isize, stride: isize) -> Result<isize> {
    i.checked_mul(stride)
        .and_then(|t| offset.checked_add(t))
        .ok_or_else(|| err!(Shape, "the indexed view's offset or stride overflows (index {i}, stride {stride})"))
}

/// The position integer `i` selects on `axis` of size `n` (negative
/// counts from the end), as NumPy resolves it; out of bounds is `OutOfRange`.
#[inline]
pub(crate) fn position(i: i64, axis: usize, n: usize) -> Result<usize> {
    let j = if i < 0 { i.checked_add(n as i64) } else { Some(i) };
    match j {
        Some(j) if j >= 0 && (j as u64) < n as u64 => Ok(j as usize),
        _ => Err(err!(OutOfRange, "index {i} is out of bounds for axis {axis} with size {n}")),
    }
}

/// Applies `key` to a view of `dims` with element `strides`.
#[inline(always)]
pub(crate) fn plan(dims: &[usize], strides: &[isize], key: &[Index]) -> Result<Plan> {
    let ellipses = key.iter().filter(|k| **k == Index::Ellipsis).count();
    if ellipses > 1 {
        return Err(err!(OutOfRange, "an index can only have a single ellipsis ('...')"));
    }
    let consuming = key.iter().filter(|k| matches!(k, Index::At(_) | Index::Range { .. })).count();
    if consuming > dims.len() {
        return Err(err!(
            OutOfRange,
            "too many indices for blob: blob is {}-dimensional, but {consuming} were indexed",
            dims.len()
        ));
    }
    let mut out = Plan { dims: Axes::new(), strides: Axes::new(), offset: 0 };
    let mut axis = 0;
    // The key with `...` expanded, then the implicit trailing `:` entries.
    let expanded = key.iter().flat_map(|&k| {
        let n = if k == Index::Ellipsis { dims.len() - consuming } else { 1 };
        std::iter::repeat_n(if k == Index::Ellipsis { Index::ALL } else { k }, n)
    });
    for k in expanded.chain(std::iter::repeat(Index::ALL)) {
        if axis == dims.len() && !matches!(k, Index::NewAxis) {
            if k == Index::ALL {
                break; // the implicit trailing `:` entries
            }
            return Err(err!(Internal, "index plan ran past the axes"));
        }
        match k {
            Index::At(i) => {
                let j = position(i, axis, dims[axis])?;
                out.offset = offset_plus(out.offset, j as isize, strides[axis])?;
                axis += 1;
            }
            Index::Range { start, stop, step } => {
                let (first, step, len) = resolve_range(start, stop, step, dims[axis])?;
                if len > 0 {
                    out.offset = offset_plus(out.offset, first as isize, strides[axis])?;
                }
                out.dims.push(len);
                // Over one element the step is never taken (NumPy's
                // `x[::2**62]`): its stride stays, and cannot overflow.
                out.strides.push(if len > 1 { offset_plus(0, step as isize, strides[axis])? } else { strides[axis] });
                axis += 1;
            }
            Index::NewAxis => {
                out.dims.push(1);
                out.strides.push(0);
            }
            Index::Ellipsis => return Err(err!(Internal, "ellipsis left in the expanded key")),
        }
        if out.dims.len() > MAX_RANK {
            return Err(err!(Shape, "indexing would give rank {}, above the limit of {MAX_RANK}", out.dims.len()));
        }
    }
    Ok(out)
}

/// What a key does to each axis of the blob (see [`resolve_key`]).
#[derive(Debug, Clone, Copy)]
enum Resolved {
    /// One position, the axis removed.
    At(usize),
    /// `len` positions from `first` by `step`, becoming result axis `out`.
    Range { first: usize, step: i64, len: usize, out: usize },
}

/// The key's effect on each axis of `dims`, in order (as [`plan`], which
/// has already validated it).
fn resolve_key(dims: &[usize], key: &[Index]) -> Result<Vec<Resolved>> {
    let consuming = key.iter().filter(|k| matches!(k, Index::At(_) | Index::Range { .. })).count();
    let mut out = Vec::with_capacity(dims.len());
    let mut result_axis = 0;
    let mut axis = 0;
    for &k in key {
        let ks: Vec<Index> = if k == Index::Ellipsis { vec![Index::ALL; dims.len() - consuming] } else { vec![k] };
        for k in ks {
            match k {
                Index::At(i) => {
                    let n = dims[axis] as i64;
                    out.push(Resolved::At((if i < 0 { i + n } else { i }) as usize));
                    axis += 1;
                }
                Index::Range { start, stop, step } => {
                    let (first, step, len) = resolve_range(start, stop, step, dims[axis])?;
                    out.push(Resolved::Range { first: first.max(0) as usize, step, len, out: result_axis });
                    result_axis += 1;
                    axis += 1;
                }
                Index::NewAxis => result_axis += 1,
                Index::Ellipsis => {}
            }
        }
    }
    while axis < dims.len() {
        out.push(Resolved::Range { first: 0, step: 1, len: dims[axis], out: result_axis });
        result_axis += 1;
        axis += 1;
    }
    Ok(out)
}

impl Blob {
    /// The element strides and offset of this blob's logical dims (row-major
    /// for dense blobs); blocked layouts have none.
    #[inline(always)]
    fn element_strides(&self, st: &State) -> Result<(Axes<isize>, usize)> {
        st.planar_strides().ok_or_else(|| {
            let layout = st.desc().map_or(crate::layout::Layout::Blocked, |d| d.layout());
            err!(Unsupported, "a blocked layout ({layout}) cannot be indexed or permuted; reorder it into a dense blob first")
        })
    }

    /// A view of the elements at `plan` (strides of either sign).
    #[inline(always)]
    fn view_of(&self, st: &State, base: usize, p: Plan, kind: ViewKind) -> Result<Blob> {
        let shape = Shape::new(&p.dims)?;
        if shape.count() == 0 {
            // No elements: nothing is addressed, so the plan's offset (which
            // an empty parent's strides may put anywhere) is not used.
            return self.view_at(st, shape, st.offset, Placement::Dense, 0, 0, kind);
        }
        // The storage offset of element 0.
        let first = (st.offset + base)
            .checked_add_signed(p.offset)
            .ok_or_else(|| err!(Internal, "indexed offset below the storage"))?;
        let count = shape.count();
        let dense = crate::layout::is_row_major(&p.dims, &p.strides, 1);
        let (placement, span, origin) = if dense {
            (Placement::Dense, count, 0)
        } else {
            // The desc is built only if something asks for it.
            let s = Strided::new(self.dtype(), &p.dims, p.strides)?;
            let (span, origin) = (s.span(), s.origin());
            (Placement::Strided(s), span, origin)
        };
        self.view_at(st, shape, first, placement, span, origin, kind)
    }

    /// The view of `shape` whose element 0 is at storage element `first`,
    /// laid out as `placement`, reaching `span` elements from its lowest
    /// one, which is `origin` elements below element 0.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn view_at(&self, st: &State, shape: Shape, first: usize, placement: Placement, span: usize, origin: usize, kind: ViewKind) -> Result<Blob> {
        let count = shape.count();
        // The view's base is its lowest element: element 0 less what the
        // negative strides reach below it.
        let offset = first.checked_sub(origin).ok_or_else(|| err!(Internal, "indexed view below the storage"))?;
        if count > 0 && (offset + span) * self.dtype().size() > st.storage.len() {
            return Err(err!(Internal, "indexed view exceeds the storage"));
        }
        let state = State {
            capacity: count,
            shape,
            storage: Arc::clone(&st.storage),
            offset: if count == 0 { st.offset } else { offset },
            view: Some(View { parent: Some(self.clone()), kind }),
            placement,
        };
        Ok(self.derived(state))
    }

    /// A view of a blocked layout (nChw8c ...): every key whose result a
    /// blocking can describe — integers on any dim, full ranges, `None`,
    /// and ranges of any step on dims that are not split into blocks; a
    /// partial range over a blocked dim is `Unsupported` (its elements
    /// start mid-block, which no blocking describes). `perm` relabels the
    /// dims first (a transposed view).
    pub(crate) fn blocked_view(&self, st: &State, d: &TensorDesc, key: &[Index], perm: Option<&[usize]>, kind: ViewKind) -> Result<Blob> {
        let b = d.blocking();
        let rank = d.dims().len();
        // Per blocked dim: (size, stride, logical dim); element 0's offset.
        let mut origin = d.origin() as isize;
        let (mut blk, mut owner): (Vec<(usize, isize)>, Vec<Option<usize>>) =
            (b.blk_dims().iter().zip(b.strides()).map(|(&n, &s)| (n, s)).collect(), b.order().iter().map(|&o| Some(o)).collect());
        let mut dims: Vec<usize> = d.dims().to_vec();
        if let Some(p) = perm {
            // New dim i is old dim p[i].
            let mut inv = vec![0; rank];
            for (i, &a) in p.iter().enumerate() {
                inv[a] = i;
            }
            owner.iter_mut().for_each(|o| *o = o.map(|a| inv[a]));
            dims = p.iter().map(|&a| d.dims()[a]).collect();
        }
        let unit: Axes<isize> = smallvec::smallvec![1; rank];
        let p = plan(&dims, &unit, key)?;
        // Walk the key again to learn what happened to each old dim:
        // replay `plan` on a probe whose strides tag the axes.
        let mut new_owner: Vec<Option<usize>> = vec![None; owner.len()];
        let mut extra: Vec<(usize, isize, usize)> = Vec::new();
        let resolved = resolve_key(&dims, key)?;
        for (a, r) in resolved.iter().enumerate() {
            let pos: Vec<usize> = (0..owner.len()).filter(|&i| owner[i] == Some(a)).collect();
            let blocked = pos.len() > 1 || pos.iter().any(|&i| blk[i].0 < dims[a]);
            match *r {
                Resolved::At(i) => {
                    let mut v = i;
                    for &q in pos.iter().rev() {
                        let n = blk[q].0.max(1);
                        origin += (v % n) as isize * blk[q].1;
                        v /= n;
                    }
                }
                Resolved::Range { first, step, len, out } => {
                    let full = first == 0 && step == 1 && len == dims[a];
                    if blocked && !full {
                        return Err(err!(
                            Unsupported,
                            "a range over dim {a} of a blocked layout ({}) would start or step inside its blocks, which no layout describes; reorder into a dense blob first",
                            d.layout()
                        ));
                    }
                    if blocked || len == 0 {
                        for &q in &pos {
                            new_owner[q] = Some(out);
                        }
                        if len == 0 {
                            // An empty result: the dims are what matters.
                            if let Some(&q) = pos.first() {
                                blk[q].0 = 0;
                            }
                        }
                    } else {
                        let q = pos[0];
                        origin += first as isize * blk[q].1;
                        blk[q] = (len, blk[q].1 * step as isize);
                        new_owner[q] = Some(out);
                    }
                }
            }
        }
        for (out, &n) in p.dims.iter().enumerate() {
            if !new_owner.contains(&Some(out)) {
                extra.push((n, 1, out)); // a new axis (None)
            }
        }
        let mut parts: Vec<(usize, isize, usize)> =
            (0..blk.len()).filter_map(|i| new_owner[i].map(|o| (blk[i].0, blk[i].1, o))).collect();
        parts.extend(extra);
        let (bd, order, strides): (Axes<usize>, Axes<usize>, Axes<isize>) = (
            parts.iter().map(|x| x.0).collect(),
            parts.iter().map(|x| x.2).collect(),
            parts.iter().map(|x| x.1).collect(),
        );
        let count: usize = p.dims.iter().product();
        let first = (st.offset as isize + origin) as usize;
        if order.len() == p.dims.len() {
            // Every dim appears once: an ordinary strided view.
            let el: Axes<isize> = axes_filled(p.dims.len(), |el| {
                for (&o, &s) in order.iter().zip(&strides) {
                    if let Some(slot) = el.get_mut(o) {
                        *slot = s;
                    }
                }
            });
            let plan = Plan { dims: p.dims.clone(), strides: el, offset: first as isize - st.offset as isize };
            return self.view_of(st, 0, plan, kind);
        }
        let blocking = BlockingDesc::view(&bd, &order, &strides)?;
        let desc = TensorDesc::with_blocking(self.dtype(), &p.dims, blocking)?;
        let shape = Shape::new(&p.dims)?;
        let offset = if count == 0 { st.offset } else { first.checked_sub(desc.origin()).ok_or_else(|| err!(Internal, "blocked view below the storage"))? };
        if count > 0 && (offset + desc.span()?) * self.dtype().size() > st.storage.len() {
            return Err(err!(Internal, "blocked view exceeds the storage"));
        }
        let state = State { capacity: count, shape, storage: Arc::clone(&st.storage), offset, view: Some(View { parent: Some(self.clone()), kind }), placement: Placement::Desc(Box::new(desc)) };
        Ok(self.derived(state))
    }

    /// The plan of `key` and this blob's base offset.
    #[inline(always)]
    fn index_plan(&self, st: &State, key: &[Index]) -> Result<(Plan, usize)> {
        let (strides, base) = self.element_strides(st)?;
        Ok((plan(st.shape.dims(), &strides, key)?, base))
    }

    /// NumPy basic indexing (`b[key]`): a view sharing memory, negative
    /// steps included (see the module docs). Out-of-range integers and too
    /// many entries are `OutOfRange`; a zero step is `InvalidArgument`.
    pub fn index(&self, key: &[Index]) -> Result<Blob> {
        let st = self.state();
        if let Some(b) = self.leading_view(&st, key) {
            return b;
        }
        if let Some(b) = self.basic_dense_view(&st, key) {
            return b;
        }
        if let Some(d) = st.blocked() {
            let d = d.clone();
            return self.blocked_view(&st, &d, key, None, ViewKind::Indexed);
        }
        let (p, base) = self.index_plan(&st, key)?;
        self.view_of(&st, base, p, ViewKind::Indexed)
    }

    /// `b[i]`, `b[i, j]`, ... of a dense blob (keys of integers only, the
    /// most common: a row, a sample, a channel): the trailing dims at the
    /// offset of those leading indices, without building the general plan.
    /// `None` for anything else (other keys, a strided or blocked blob, an
    /// index out of range), which the general path handles, errors
    /// included. Property test: `leading_index_like_ndarray`.
    #[inline]
    fn leading_view(&self, st: &State, key: &[Index]) -> Option<Result<Blob>> {
        let dims = st.shape.dims();
        if !st.is_dense() || key.is_empty() || key.len() > dims.len() {
            return None;
        }
        // Integers only, checked before the shape is built: built first,
        // it was thrown away for every other key (`x[::2, 1]`).
        if !key.iter().all(|k| matches!(k, Index::At(_))) {
            return None;
        }
        let shape = st.shape.suffix(key.len());
        let count = shape.count();
        // Row-major: the offset of (i, j, ...) in units of the trailing
        // count, innermost key axis first; every partial sum stays below
        // the blob's count, so nothing overflows.
        let (mut offset, mut unit) = (0usize, count);
        for (k, &d) in key.iter().zip(dims).rev() {
            let Index::At(i) = *k else { return None };
            let n = i64::try_from(d).ok()?;
            let i = usize::try_from(if i < 0 { i + n } else { i }).ok().filter(|&r| r < d)?;
            offset += i * unit;
            unit *= d;
        }
        Some(Ok(self.derived_with(|| State {
            capacity: count,
            offset: st.offset + offset,
            shape,
            storage: Arc::clone(&st.storage),
            view: Some(View { parent: Some(self.clone()), kind: ViewKind::Indexed }),
            placement: Placement::Dense,
        })))
    }

    /// `b[::2, 1]`, `b[:, 1:3]`, ... of a dense blob of rank <= 8 (keys
    /// of integers and ranges only, with a step of either sign): the
    /// view's dims, strides and reach worked out on the stack in one pass
    /// over the key, without the general plan (which spends about twice
    /// as long on such keys). `None` for anything else (`...`, `None`, an
    /// empty result, an index out of range, a zero step), which the
    /// general path handles, errors included. Unit property test:
    /// `a_basic_dense_view_is_the_general_plans_view`.
    #[inline]
    fn basic_dense_view(&self, st: &State, key: &[Index]) -> Option<Result<Blob>> {
        const N: usize = crate::layout::INLINE;
        let dims = st.shape.dims();
        let rank = dims.len();
        if !st.is_dense() || rank > N || key.len() > rank || st.shape.count() == 0 {
            return None;
        }
        let stride = row_major_inline(dims);
        let (mut out_dims, mut out_strides, mut n) = ([0usize; N], [0isize; N], 0);
        // Element 0's offset from the blob's: each selected position lies
        // inside the blob, so the sum is below its count.
        let mut offset = 0usize;
        for (a, k) in key.iter().enumerate() {
            match *k {
                Index::At(i) => offset += position(i, a, dims[a]).ok()? * stride[a] as usize,
                Index::Range { start, stop, step } => {
                    let (first, step, len) = resolved_range(start, stop, step, dims[a])?;
                    if len == 0 {
                        return None;
                    }
                    offset += first as usize * stride[a] as usize;
                    out_dims[n] = len;
                    // One element: the step is never taken (and times the
                    // stride may pass isize, as for `x[::2**62]`).
                    out_strides[n] = if len > 1 { stride[a].checked_mul(step as isize)? } else { stride[a] };
                    n += 1;
                }
                Index::NewAxis | Index::Ellipsis => return None,
            }
        }
        for a in key.len()..rank {
            out_dims[n] = dims[a];
            out_strides[n] = stride[a];
            n += 1;
        }
        let (vd, vs) = (&out_dims[..n], &out_strides[..n]);
        let first = st.offset + offset;
        // Every dim is at least 1 (an empty range declined above) and at
        // most the parent's along a distinct axis, so the count is at
        // most the parent's.
        let count: usize = vd.iter().product();
        let dense = crate::layout::is_row_major(vd, vs, 1);
        // What the view reaches below element 0 and in all: its elements
        // lie inside the blob, so no sum passes the parent's count.
        let (mut origin, mut reach) = (0usize, 0usize);
        for (&d, &s) in vd.iter().zip(vs) {
            let r = (d - 1) * s.unsigned_abs();
            reach += r;
            if s < 0 {
                origin += r;
            }
        }
        let span = reach + 1;
        debug_assert_eq!(crate::layout::strided_span(vd.iter().copied().zip(vs.iter().copied())).ok(), Some((origin, span)));
        // The view's base is its lowest element, inside the parent's
        // storage (checked again here, as `view_at` does).
        let base = first.checked_sub(origin)?;
        if (base + span) * self.dtype().size() > st.storage.len() {
            return Some(Err(err!(Internal, "indexed view exceeds the storage")));
        }
        // The shape and placement are built inside `make`, after the
        // record's allocation, straight into it.
        let dtype = self.dtype();
        Some(Ok(self.derived_with(|| State {
            capacity: count,
            shape: Shape::inline_of_checked(out_dims, n, count),
            storage: Arc::clone(&st.storage),
            offset: base,
            view: Some(View { parent: Some(self.clone()), kind: ViewKind::Indexed }),
            placement: if dense {
                Placement::Dense
            } else {
                Placement::Strided(Strided::of_checked(dtype, &out_dims[..n], SmallVec::from_buf_and_len(out_strides, n), origin, span))
            },
        })))
    }

    /// NumPy's `b.T`: the axes reversed, as a view.
    pub fn reversed_view(&self) -> Result<Blob> {
        // One read of the state: the rank and the view agree.
        let st = self.state();
        let rank = st.shape.rank();
        // The common case without an axes list or its permutation check.
        if let Some(b) = self.dense_permuted_by(&st, |i| rank - 1 - i) {
            return Ok(b);
        }
        // A permutation by construction: no check, and the dense path
        // has just declined.
        let axes: Axes<usize> = axes_filled(rank, |out| {
            for (i, slot) in out.iter_mut().enumerate() {
                *slot = rank - 1 - i;
            }
        });
        self.permuted_general(&st, &axes)
    }

    /// NumPy `transpose(axes)` as a view (`b.T` is the reversed axes):
    /// axis `i` of the result is axis `axes[i]` of this blob.
    pub fn permuted_view(&self, axes: &[usize]) -> Result<Blob> {
        self.permuted_in(&self.state(), axes)
    }

    /// [`Blob::permuted_in`] of a dense, non-empty blob of rank <= 8 (the
    /// common `b.T`, `transpose`) with `axes` already checked to be a
    /// permutation: the view's dims and strides worked out once on the
    /// stack, with none of the general path's intermediate vectors (which
    /// spend about a third of its time). Its origin is 0 and its span the
    /// parent's count, as a permutation reaches the same elements. `None`
    /// for anything else, which the general path handles. Unit property
    /// test: `a_dense_permuted_view_is_the_general_paths_view`.
    #[inline]
    fn dense_permuted(&self, st: &State, axes: &[usize]) -> Option<Blob> {
        self.dense_permuted_by(st, |i| axes[i])
    }

    /// [`Blob::dense_permuted`] with axis `i` of the view being axis
    /// `axis(i)` of this blob, for `i` below the rank (a permutation).
    #[inline]
    fn dense_permuted_by(&self, st: &State, axis: impl Fn(usize) -> usize) -> Option<Blob> {
        const N: usize = crate::layout::INLINE;
        let dims = st.shape.dims();
        let rank = dims.len();
        let count = st.shape.count();
        if !st.is_dense() || rank > N || count == 0 {
            return None;
        }
        let stride = row_major_inline(dims);
        let (mut out_dims, mut out_strides) = ([0usize; N], [0isize; N]);
        for i in 0..rank {
            let a = axis(i);
            out_dims[i] = dims[a];
            // Stride 1 on axes of length 1, as `Strided::of_checked` sets.
            out_strides[i] = if dims[a] <= 1 { 1 } else { stride[a] };
        }
        let dense = crate::layout::is_row_major(&out_dims[..rank], &out_strides[..rank], 1);
        // The placement and shape are built inside `make`, after the
        // record's allocation, straight into it.
        Some(self.derived_with(|| State {
            capacity: count,
            shape: Shape::inline_of_checked(out_dims, rank, count),
            storage: Arc::clone(&st.storage),
            offset: st.offset,
            view: Some(View { parent: Some(self.clone()), kind: ViewKind::Indexed }),
            placement: if dense {
                Placement::Dense
            } else {
                Placement::Strided(Strided::of_checked(self.dtype(), &out_dims[..rank], SmallVec::from_buf_and_len(out_strides, rank), 0, count))
            },
        }))
    }

    fn permuted_in(&self, st: &State, axes: &[usize]) -> Result<Blob> {
        let rank = st.shape.rank();
        if !crate::layout::is_permutation(axes, rank) {
            return Err(err!(InvalidArgument, "axes {axes:?} are not a permutation of 0..{rank}"));
        }
        match self.dense_permuted(st, axes) {
            Some(b) => Ok(b),
            None => self.permuted_general(st, axes),
        }
    }

    /// [`Blob::permuted_in`] of any blob, `axes` checked: blocked ones
    /// through their desc, dense and strided ones from their strides.
    fn permuted_general(&self, st: &State, axes: &[usize]) -> Result<Blob> {
        if let Some(d) = st.blocked() {
            let d = d.clone();
            return self.blocked_view(st, &d, &[], Some(axes), ViewKind::Indexed);
        }
        if let Some((strides, origin, span)) = st.placement.plain_strides(st.shape.dims()) {
            // A dense or strided blob: the view reaches the same elements
            // from the same base, so its span and origin are the parent's
            // and its shape needs no checks (`Shape::permuted`).
            let shape = st.shape.permuted(axes);
            let strides: Axes<isize> = axes_filled(axes.len(), |out| {
                for (slot, &a) in out.iter_mut().zip(axes) {
                    *slot = strides.get(a).copied().unwrap_or(1);
                }
            });
            let count = shape.count();
            let placement = if count == 0 || crate::layout::is_row_major(shape.dims(), &strides, 1) {
                Placement::Dense
            } else {
                Placement::Strided(Strided::of_checked(self.dtype(), shape.dims(), strides, origin, span))
            };
            // A dense view starts at element 0, which is `origin` above the base.
            let offset = if placement.is_dense() && count > 0 { st.offset + origin } else { st.offset };
            let state = State {
                capacity: count,
                shape,
                storage: Arc::clone(&st.storage),
                offset,
                view: Some(View { parent: Some(self.clone()), kind: ViewKind::Indexed }),
                placement,
            };
            return Ok(self.derived(state));
        }
        let (strides, base) = self.element_strides(st)?;
        let dims = st.shape.dims();
        let p = Plan {
            dims: axes.iter().map(|&a| dims[a]).collect(),
            strides: axes.iter().map(|&a| strides[a]).collect(),
            offset: 0,
        };
        self.view_of(st, base, p, ViewKind::Indexed)
    }
}

/// The row-major element strides of the dims of a non-empty blob of rank
/// at most [`crate::layout::INLINE`], on the stack (the stack paths of
/// `basic_dense_view` and `dense_permuted`). They multiply to the
/// count, which fits in i64 (a Shape invariant), so nothing overflows.
#[inline(always)]
fn row_major_inline(dims: &[usize]) -> [isize; crate::layout::INLINE] {
    let mut stride = [0isize; crate::layout::INLINE];
    let mut unit = 1isize;
    for a in (0..dims.len()).rev() {
        stride[a] = unit;
        unit *= dims[a] as isize;
    }
    stride
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, Engine};

    fn ramp(dims: &[usize]) -> Blob {
        let n: usize = dims.iter().product();
        Blob::from_slice(&Engine::cpu(), dims, &(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap()
    }

    fn values(b: &Blob) -> Vec<f32> {
        let c = Blob::new(b.engine(), DType::F32, b.shape()).unwrap();
        c.copy_from(b).unwrap();
        c.to_vec().unwrap()
    }

    /// Steps past the dim (up to i64's ends) select one element, as in
    /// NumPy (`x[::2**62]`, `x[::-2**63]`): no overflow of the step times
    /// the stride, nor of the step's negation.
    #[test]
    fn steps_at_the_ends_of_i64_select_one_element() {
        let x = ramp(&[3, 4]);
        let r = |start, step| Index::Range { start, stop: None, step: Some(step) };
        for (key, want_shape, want) in [
            (vec![r(None, 1 << 62)], vec![1, 4], vec![0., 1., 2., 3.]),
            (vec![r(None, i64::MAX)], vec![1, 4], vec![0., 1., 2., 3.]),
            (vec![r(None, i64::MIN)], vec![1, 4], vec![8., 9., 10., 11.]),
            (vec![Index::ALL, r(Some(1), i64::MIN)], vec![3, 1], vec![1., 5., 9.]),
            (vec![r(Some(-1), -(1 << 62)), r(None, i64::MAX)], vec![1, 1], vec![8.]),
        ] {
            let v = x.index(&key).unwrap();
            assert_eq!((v.shape().dims(), values(&v)), (&want_shape[..], want), "{key:?}");
        }
    }

    /// An empty blob's blocking is checked against no memory, so its
    /// strides may be far past what a view can add: indexing it gives an
    /// empty view or a Shape error, never an overflow.
    #[test]
    fn views_of_empty_blobs_with_huge_strides() {
        use crate::layout::{BlockingDesc, TensorDesc};
        let b = BlockingDesc::with_strides(&[4, 0], &[0, 1], 0, &[], &[1 << 62, 1]).unwrap();
        let x = Blob::with_desc(&Engine::cpu(), &TensorDesc::with_blocking(DType::F32, &[4, 0], b).unwrap()).unwrap();
        for key in [vec![Index::At(3)], vec![Index::Range { start: Some(2), stop: None, step: Some(1) }], vec![Index::Range { start: None, stop: None, step: Some(3) }]] {
            assert_eq!(x.index(&key).unwrap().count(), 0);
        }
        assert_eq!(x.transposed(0, 1).unwrap().count(), 0);
    }

    const fn r(start: Option<i64>, stop: Option<i64>, step: Option<i64>) -> Index {
        Index::Range { start, stop, step }
    }

    #[test]
    fn slices_follow_python() {
        // [0..10][2:8:3] = [2, 5]; [::-3] = [9, 6, 3, 0]; [-100:100] = all
        assert_eq!(resolve_range(Some(2), Some(8), Some(3), 10).unwrap(), (2, 3, 2));
        assert_eq!(resolve_range(None, None, Some(-3), 10).unwrap(), (9, -3, 4));
        assert_eq!(resolve_range(Some(-100), Some(100), None, 10).unwrap(), (0, 1, 10));
        assert_eq!(resolve_range(Some(5), Some(2), None, 10).unwrap().2, 0);
        assert_eq!(resolve_range(None, None, Some(0), 10).unwrap_err().code(), 3);
    }

    #[test]
    fn views_share_memory_and_compose() {
        let b = ramp(&[4, 5, 6]);
        let v = b.index(&[Index::At(1), r(Some(1), None, Some(2)), Index::NewAxis, Index::At(-1)]).unwrap();
        assert_eq!(v.dims(), [2, 1]);
        assert_eq!(values(&v), [41.0, 53.0]);
        let w = v.index(&[Index::At(1)]).unwrap();
        assert_eq!(values(&w), [53.0]);
        w.reorder_from(&Blob::from_slice(&Engine::cpu(), &[1], &[-1f32]).unwrap()).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap()[53], -1.0);
        // Dense results are plain dense views.
        let row = b.index(&[Index::At(2), Index::Ellipsis]).unwrap();
        assert!(row.is_dense());
        row.fill(7.0).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap()[60], 7.0);
    }

    #[test]
    fn negative_steps_are_views() {
        let b = ramp(&[3, 4]);
        let c = b.index(&[r(None, None, Some(-1)), r(Some(3), Some(0), Some(-2))]).unwrap();
        assert_eq!(values(&c), [11.0, 9.0, 7.0, 5.0, 3.0, 1.0]);
        assert!(c.shares_memory(&b));
        // A write through the reversed view lands in the parent.
        let row = c.index(&[Index::At(0)]).unwrap();
        row.reorder_from(&Blob::from_slice(&Engine::cpu(), &[2], &[-1f32, -2.0]).unwrap()).unwrap();
        let all = b.to_vec::<f32>().unwrap();
        assert_eq!((all[11], all[9]), (-1.0, -2.0));
        // Views of reversed views compose: reversing twice is the original.
        let v = b.index(&[r(None, None, Some(-1))]).unwrap().index(&[r(None, None, Some(-1))]).unwrap();
        assert_eq!(values(&v), all);
        let e = c.export().unwrap();
        assert_eq!(&e.byte_strides()[..], [-16, -8]);
    }

    #[test]
    fn bad_keys_are_errors() {
        let b = ramp(&[2, 3]);
        assert_eq!(b.index(&[Index::At(2)]).unwrap_err().code(), 6);
        assert_eq!(b.index(&[Index::At(-3)]).unwrap_err().code(), 6);
        assert_eq!(b.index(&[Index::At(0), Index::At(0), Index::At(0)]).unwrap_err().code(), 6);
        assert_eq!(b.index(&[Index::Ellipsis, Index::Ellipsis]).unwrap_err().code(), 6);
        assert_eq!(b.index(&[r(None, None, Some(0))]).unwrap_err().code(), 3);
        assert_eq!(b.permuted_view(&[0, 0]).unwrap_err().code(), 3);
    }

    #[test]
    fn empty_views_of_empty_views() {
        let b = ramp(&[4, 0]);
        let v = b.index(&[Index::Ellipsis]).unwrap();
        assert_eq!(v.index(&[r(None, None, Some(-2))]).unwrap().dims(), [2, 0]);
        assert_eq!(v.index(&[r(None, None, Some(2))]).unwrap().dims(), [2, 0]);
    }

    #[test]
    fn transposed_views() {
        let b = ramp(&[2, 3, 4]);
        let t = b.permuted_view(&[2, 0, 1]).unwrap();
        assert_eq!(t.dims(), [4, 2, 3]);
        assert_eq!(values(&t)[..6], [0.0, 4.0, 8.0, 12.0, 16.0, 20.0]);
        let e = t.export().unwrap();
        assert_eq!(&e.byte_strides()[..], [4, 48, 16]);
    }

    /// The stack paths' views are the general paths' views: dims, offset,
    /// capacity, layout, strides, reach, count, desc and values.
    fn same_view(fast: &Blob, general: &Blob) -> Result<(), proptest::test_runner::TestCaseError> {
        proptest::prop_assert_eq!(fast.dims(), general.dims());
        let (f, g) = (fast.state(), general.state());
        proptest::prop_assert_eq!(f.offset, g.offset);
        proptest::prop_assert_eq!(f.capacity, g.capacity);
        proptest::prop_assert_eq!(f.is_dense(), g.is_dense());
        let (fp, gp) = (f.placement.plain_strides(f.shape.dims()).unwrap(), g.placement.plain_strides(g.shape.dims()).unwrap());
        proptest::prop_assert_eq!(fp, gp);
        proptest::prop_assert_eq!(f.shape.count(), g.shape.count());
        drop((f, g));
        proptest::prop_assert_eq!(fast.desc(), general.desc());
        proptest::prop_assert_eq!(values(fast), values(general));
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 4000, rng_seed: proptest::test_runner::RngSeed::Fixed(32), ..Default::default() })]

        /// Keys of integers and ranges (any start, stop and step, out of
        /// range ones included) on dense blobs of rank 0 to 8, the blob
        /// itself at an offset (a row of a larger one): the stack path
        /// gives the view the general plan gives (dims, offset, layout,
        /// strides, reach and values), or leaves the key to it.
        #[test]
        fn a_basic_dense_view_is_the_general_plans_view(
            dims in proptest::collection::vec(0usize..5, 0..9),
            key in proptest::collection::vec((0u8..4, -6i64..7, -6i64..7, -3i64..4), 0..9),
            row in proptest::bool::ANY,
        ) {
            let whole: Vec<usize> = std::iter::once(2).chain(dims.iter().copied()).collect();
            let b = if row { ramp(&whole).index(&[Index::At(1)]).unwrap() } else { ramp(&dims) };
            let key: Vec<Index> = key.iter().map(|&(kind, a, z, step)| match kind {
                0 => Index::At(a),
                1 => r(Some(a), Some(z), Some(step)),
                2 => r(None, None, Some(step)),
                _ => r(Some(a), None, None),
            }).collect();
            let st = b.state();
            let fast = b.basic_dense_view(&st, &key);
            let general = b.index_plan(&st, &key).and_then(|(p, base)| b.view_of(&st, base, p, ViewKind::Indexed));
            drop(st);
            let Some(fast) = fast else { return Ok(()) };
            same_view(&fast.unwrap(), &general.unwrap())?;
        }
    }

    /// The stack path is taken for the keys it is for (a test of the test
    /// above, which passes vacuously when the path always declines).
    #[test]
    fn the_basic_dense_view_takes_ranges_and_integers() {
        let b = ramp(&[4, 5, 6, 7]);
        for key in [vec![r(None, None, Some(2)), Index::At(1)], vec![r(Some(1), Some(3), None)], vec![Index::At(-1), r(None, None, Some(-1))]] {
            let st = b.state();
            assert!(b.basic_dense_view(&st, &key).is_some(), "{key:?}");
        }
        for key in [vec![Index::NewAxis], vec![Index::Ellipsis, Index::At(0)], vec![Index::At(4)], vec![r(Some(2), Some(2), None)], vec![r(None, None, Some(0))]] {
            let st = b.state();
            assert!(b.basic_dense_view(&st, &key).is_none(), "{key:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, rng_seed: proptest::test_runner::RngSeed::Fixed(841), ..Default::default() })]
        /// Random permutations of dense blobs of rank 0 to 8 (dims of 0 to
        /// 4, so length-1 and empty axes too), the blob itself at an
        /// offset (a row of a larger one): the stack path gives the view
        /// the general path gives (dims, offset, capacity, layout,
        /// strides, reach and values), or leaves it to the general path
        /// (empty blobs only, among these).
        #[test]
        fn a_dense_permuted_view_is_the_general_paths_view(
            dims in proptest::collection::vec(0usize..5, 0..9),
            keys in proptest::collection::vec(proptest::num::u32::ANY, 9),
            row in proptest::bool::ANY,
        ) {
            let whole: Vec<usize> = std::iter::once(2).chain(dims.iter().copied()).collect();
            let b = if row { ramp(&whole).index(&[Index::At(1)]).unwrap() } else { ramp(&dims) };
            // A random permutation: the axes sorted by random keys.
            let mut axes: Vec<usize> = (0..dims.len()).collect();
            axes.sort_by_key(|&a| keys[a]);
            let st = b.state();
            let fast = b.dense_permuted(&st, &axes);
            let general = b.permuted_general(&st, &axes).unwrap();
            drop(st);
            let Some(fast) = fast else {
                proptest::prop_assert_eq!(b.count(), 0);
                return Ok(());
            };
            same_view(&fast, &general)?;
            // `b.T` (`reversed_view`, whose dense path has no axes list)
            // is the general path's view of the reversed axes.
            let reversed: Vec<usize> = (0..dims.len()).rev().collect();
            let general_t = b.permuted_general(&b.state(), &reversed).unwrap();
            same_view(&b.reversed_view().unwrap(), &general_t)?;
            // What NumPy's transpose gives, element by element: element
            // (i_0, ...) of the view is element (j_axes[0] = i_0, ...) of
            // the blob.
            let src = values(&b);
            let out = values(&fast);
            let pd: Vec<usize> = axes.iter().map(|&a| dims[a]).collect();
            let mut idx = vec![0usize; dims.len()];
            for v in out {
                let mut j = vec![0usize; dims.len()];
                for (k, &a) in axes.iter().enumerate() {
                    j[a] = idx[k];
                }
                let flat = j.iter().zip(&dims).fold(0, |acc, (&i, &d)| acc * d + i);
                proptest::prop_assert_eq!(v, src[flat]);
                for k in (0..pd.len()).rev() {
                    idx[k] += 1;
                    if idx[k] < pd[k] { break; }
                    idx[k] = 0;
                }
            }
        }
    }

    /// The stack path is taken for the blobs it is for (a test of the
    /// test above, which would pass vacuously if it always declined).
    #[test]
    fn the_dense_permuted_view_takes_dense_blobs() {
        let b = ramp(&[4, 5, 6, 7]);
        let st = b.state();
        assert!(b.dense_permuted(&st, &[3, 2, 1, 0]).is_some());
        assert!(b.dense_permuted(&st, &[0, 1, 2, 3]).is_some());
        drop(st);
        let t = b.reversed_view().unwrap();
        let st = t.state();
        assert!(t.dense_permuted(&st, &[3, 2, 1, 0]).is_none(), "a strided blob");
        drop(st);
        let e = ramp(&[2, 0, 3]);
        let st = e.state();
        assert!(e.dense_permuted(&st, &[2, 1, 0]).is_none(), "an empty blob");
    }
}
