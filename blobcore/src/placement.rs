//! Where a blob's elements lie relative to its base: dense row-major, a
//! full [`TensorDesc`] (blocked, padded, a region), or a strided view
//! whose desc is built only when something asks for it.
//!
//! Strided views (`b.T`, `b[::2, 1]`) are the per-call hot path of
//! indexing: they keep their element strides inline and build the planar
//! desc they stand for on first use ([`Placement::desc`]), so that making
//! a view, indexing it again or exporting it never builds one. Whatever
//! reads the desc sees the desc the general constructors give (property
//! test `a_strided_placement_is_the_general_desc`).

use crate::dtype::DType;
use crate::error::Result;
use crate::axes::{axes_filled, Axes};
use crate::layout::TensorDesc;
use crate::first_use::FirstUse;

/// A blob state's layout (see the module docs).
#[derive(Clone)]
pub(crate) enum Placement {
    /// Dense row-major from the state's offset: what every fast path takes.
    Dense,
    /// A non-default layout, described in full.
    Desc(Box<TensorDesc>),
    /// A planar strided view (either sign, gaps allowed).
    Strided(Strided),
}

/// A strided view's element strides and what they reach, checked when made.
#[derive(Clone)]
pub(crate) struct Strided {
    dtype: DType,
    /// Element strides of the logical dims, in their order.
    strides: Axes<isize>,
    /// Elements the negative strides reach below element 0: element 0's
    /// offset from the base, which is the lowest element.
    origin: usize,
    /// Elements of memory from the base the view reaches.
    span: usize,
    /// The planar desc, built on first use (never waited for: threads
    /// that race each build it, and a fork leaves no build unfinished).
    desc: FirstUse<Box<TensorDesc>>,
}

impl Strided {
    /// The strided view of `dims` at element `strides` (as long as the
    /// dims); `Shape` error when its memory span overflows.
    /// Axes of length 0 or 1 get stride 1, as the eager desc gives them
    /// (no element sits one step along them).
    pub(crate) fn new(dtype: DType, dims: &[usize], mut strides: Axes<isize>) -> Result<Strided> {
        debug_assert_eq!(dims.len(), strides.len());
        unit_strides_on_short_axes(dims, &mut strides);
        let (origin, span) = crate::layout::strided_span(dims.iter().copied().zip(strides.iter().copied()))?;
        Ok(Strided { dtype, strides, origin, span, desc: FirstUse::new() })
    }

    /// A strided view whose `origin` and `span` are known, for a view
    /// that reaches the same elements as one already checked (a
    /// permutation of its axes): no span to recompute. Axes of length 0
    /// or 1 get stride 1, as in [`Strided::new`].
    pub(crate) fn of_checked(dtype: DType, dims: &[usize], mut strides: Axes<isize>, origin: usize, span: usize) -> Strided {
        unit_strides_on_short_axes(dims, &mut strides);
        debug_assert_eq!(crate::layout::strided_span(dims.iter().copied().zip(strides.iter().copied())).ok(), Some((origin, span)));
        Strided { dtype, strides, origin, span, desc: FirstUse::new() }
    }

    /// Element 0's offset from the base.
    pub(crate) fn origin(&self) -> usize {
        self.origin
    }

    /// Elements of memory from the base.
    pub(crate) fn span(&self) -> usize {
        self.span
    }

    /// The planar desc of this view of `dims` (the state's shape).
    fn desc(&self, dims: &[usize]) -> &TensorDesc {
        // `new` checked the span of these axes (their order does not
        // change it, and length-1 axes reach nothing at any stride).
        self.desc.get_or_make(|| strided_desc_checked(self.dtype, dims, &self.strides, self.origin))
    }
}

/// Stride 1 on the axes of length 0 or 1, as the eager desc has them (no
/// element sits one step along them, so the stride means nothing).
fn unit_strides_on_short_axes(dims: &[usize], strides: &mut [isize]) {
    for (s, &d) in strides.iter_mut().zip(dims) {
        if d <= 1 {
            *s = 1;
        }
    }
}

impl Placement {
    /// The desc of a non-default layout of `dims` (None for dense data).
    #[inline]
    pub(crate) fn desc(&self, dims: &[usize]) -> Option<&TensorDesc> {
        match self {
            Placement::Dense => None,
            Placement::Desc(d) => Some(d),
            Placement::Strided(s) => Some(s.desc(dims)),
        }
    }

    /// True for dense row-major data.
    #[inline]
    pub(crate) fn is_dense(&self) -> bool {
        matches!(self, Placement::Dense)
    }

    /// The desc of a blocked layout (a dim split into blocks), which no
    /// per-dim strides describe.
    #[inline]
    pub(crate) fn blocked(&self) -> Option<&TensorDesc> {
        match self {
            Placement::Desc(d) if !d.is_planar() => Some(d),
            _ => None,
        }
    }

    /// Elements of memory from the base that data of `dims` in this
    /// layout reaches ([`TensorDesc::span`]).
    #[inline]
    pub(crate) fn span(&self, dims: &[usize]) -> Result<usize> {
        match self {
            Placement::Dense => Ok(dims.iter().product()),
            Placement::Desc(d) => d.span(),
            Placement::Strided(s) => Ok(s.span),
        }
    }

    /// The element strides, element 0's offset from the base and the
    /// span of a dense or strided view (None for other layouts, whose
    /// span may include padding).
    #[inline]
    pub(crate) fn plain_strides(&self, dims: &[usize]) -> Option<(Axes<isize>, usize, usize)> {
        match self {
            Placement::Dense => {
                let s: Axes<isize> = axes_filled(dims.len(), |s| crate::layout::fill_row_major_strides(dims, 1, s));
                Some((s, 0, dims.iter().product()))
            }
            Placement::Strided(s) => Some((s.strides.clone(), s.origin, s.span)),
            Placement::Desc(_) => None,
        }
    }

    /// The element strides of the logical `dims` and element 0's offset
    /// from the base (row-major and 0 for dense data); None for blocked
    /// layouts.
    #[inline]
    pub(crate) fn planar_strides(&self, dims: &[usize]) -> Option<(Axes<isize>, usize)> {
        match self {
            Placement::Desc(d) => d.planar_strides().map(|(s, o)| (s.into_iter().collect(), o)),
            _ => self.plain_strides(dims).map(|(s, o, _)| (s, o)),
        }
    }
}

/// The planar desc of a strided view of `dims` at element `strides` of
/// either sign (any order, gaps allowed): axes sorted by stride
/// magnitude, outermost first; length-1 axes innermost (their stride is
/// irrelevant and set to 1). The caller has checked the view's span
/// ([`crate::layout::strided_span`], which gave `below`), as
/// [`Strided::new`] does.
fn strided_desc_checked(dtype: DType, dims: &[usize], strides: &[isize], below: usize) -> Box<TensorDesc> {
    if let Some((order, st)) = strided_order_inline(dims, strides) {
        let rank = dims.len();
        return TensorDesc::planar_of_checked(dtype, dims, &order[..rank], &st[..rank], below);
    }
    let (order, st) = strided_order(dims, strides);
    TensorDesc::planar_of_checked(dtype, dims, &order, &st, below)
}

/// [`strided_desc_checked`]'s order of the axes and their strides, any rank.
fn strided_order(dims: &[usize], strides: &[isize]) -> (Axes<usize>, Axes<isize>) {
    let rank = dims.len();
    let mut order: Axes<usize> = (0..rank).filter(|&a| dims[a] > 1).collect();
    order.sort_by(|&a, &b| strides[b].unsigned_abs().cmp(&strides[a].unsigned_abs()).then(a.cmp(&b)));
    order.extend((0..rank).filter(|&a| dims[a] <= 1));
    let st = order.iter().map(|&a| if dims[a] > 1 { strides[a] } else { 1 }).collect();
    (order, st)
}

type InlineAxes<T> = [T; crate::layout::INLINE];

/// [`strided_order`] on the stack for ranks up to eight (every view's
/// creation runs it; the sort and collects cost half a strided view):
/// an insertion sort that inserts the axes in turn and shifts only past
/// strictly smaller magnitudes, so equal strides keep their axis order as
/// the stable sort does. The first `dims.len()` entries are meaningful.
/// Property test: `inline_order_is_the_general_order`.
#[inline]
fn strided_order_inline(dims: &[usize], strides: &[isize]) -> Option<(InlineAxes<usize>, InlineAxes<isize>)> {
    let rank = dims.len();
    if rank > crate::layout::INLINE || strides.len() != rank {
        return None;
    }
    let (mut order, mut st) = ([0usize; crate::layout::INLINE], [1isize; crate::layout::INLINE]);
    let mut n = 0;
    for a in (0..rank).filter(|&a| dims[a] > 1) {
        let key = strides[a].unsigned_abs();
        let mut j = n;
        while j > 0 && strides[order[j - 1]].unsigned_abs() < key {
            order[j] = order[j - 1];
            j -= 1;
        }
        order[j] = a;
        n += 1;
    }
    for i in 0..n {
        st[i] = strides[order[i]];
    }
    for a in (0..rank).filter(|&a| dims[a] <= 1) {
        order[n] = a; // its stride stays 1
        n += 1;
    }
    Some((order, st))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::BlockingDesc;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, rng_seed: proptest::test_runner::RngSeed::Fixed(29), ..ProptestConfig::default() })]

        /// The stack order of small ranks is the stable sort's, with ties
        /// (equal magnitudes of either sign), length-0 and length-1 axes.
        #[test]
        fn inline_order_is_the_general_order(
            axes in proptest::collection::vec((0usize..4, -3isize..4), 0..9),
        ) {
            let dims: Vec<usize> = axes.iter().map(|a| a.0).collect();
            let strides: Vec<isize> = axes.iter().map(|a| a.1).collect();
            let (order, st) = strided_order(&dims, &strides);
            let (io, is) = strided_order_inline(&dims, &strides).expect("rank <= 8");
            proptest::prop_assert_eq!(&io[..dims.len()], &order[..]);
            proptest::prop_assert_eq!(&is[..dims.len()], &st[..]);
        }

        /// A strided placement, its desc built lazily in one pass, reads
        /// as the desc the general constructors give
        /// ([`BlockingDesc::view`] + [`TensorDesc::with_blocking`]) for
        /// any dims (zeros and ones included) and strides of either sign:
        /// same desc, span, origin and planar strides; both refuse the
        /// same overflowing spans.
        #[test]
        fn a_strided_placement_is_the_general_desc(
            axes in proptest::collection::vec((0usize..5, -4096isize..4096), 0..10),
            huge in proptest::option::of(prop_oneof![Just(isize::MAX / 3), Just(isize::MIN), Just(-(isize::MAX / 3))]),
        ) {
            let dims: Vec<usize> = axes.iter().map(|a| a.0).collect();
            let strides: Axes<isize> = axes.iter().enumerate().map(|(i, a)| match huge {
                Some(h) if i == 0 => h,
                _ => a.1,
            }).collect();
            let rank = dims.len();
            let mut order: Axes<usize> = (0..rank).filter(|&a| dims[a] > 1).collect();
            order.sort_by(|&a, &b| strides[b].unsigned_abs().cmp(&strides[a].unsigned_abs()).then(a.cmp(&b)));
            order.extend((0..rank).filter(|&a| dims[a] <= 1));
            let blk: Axes<usize> = order.iter().map(|&a| dims[a]).collect();
            let st: Axes<isize> = order.iter().map(|&a| if dims[a] > 1 { strides[a] } else { 1 }).collect();
            let general = BlockingDesc::view(&blk, &order, &st)
                .and_then(|b| TensorDesc::with_blocking(DType::F16, &dims, b))
                .and_then(|d| d.span().map(|s| (d, s)));
            match (Strided::new(DType::F16, &dims, strides.clone()), general) {
                (Ok(s), Ok((want, want_span))) => {
                    prop_assert_eq!(s.span(), want_span);
                    prop_assert_eq!(s.origin(), want.origin());
                    let p = Placement::Strided(s);
                    prop_assert_eq!(p.span(&dims).ok(), Some(want_span));
                    prop_assert_eq!(p.planar_strides(&dims).map(|(s, o)| (s.to_vec(), o)), want.planar_strides());
                    prop_assert_eq!(p.desc(&dims), Some(&want));
                    prop_assert!(p.blocked().is_none() && !p.is_dense());
                }
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "lazy {:?} but general {:?}", a.map(|s| s.span()), b.map(|d| d.1)),
            }
        }
    }
}
