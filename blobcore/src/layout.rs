//! Layouts: OpenVINO's `Layout`, `BlockingDesc` and `TensorDesc`.
//!
//! A [`TensorDesc`] says where each element of a blob's logical dims lives
//! in memory: the logical dims are cut into *blocked dims* (a dim may
//! appear twice in `order`, outer then inner block, as channels blocked by
//! 8 in "nChw8c"), laid out with `strides`, after `offset_padding` and
//! per-blocked-dim `offsets_to_data`. The default desc is dense row-major.
//!
//! Offsets follow OpenVINO's algorithm (REFERENCE.md): from the innermost
//! blocked dim outwards the inner block takes the remainder of the logical
//! index and the outer one the quotient. Regions (ROI) keep the strides and
//! move the start through `offsets_to_data` only — OpenVINO also adds it to
//! the padding, counting the start twice; that bug is not copied.

use crate::dtype::DType;
use crate::error::{err, Result};
use crate::shape::MAX_RANK;
use std::fmt;

/// OpenVINO's named layouts, with its numeric values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Layout {
    /// Any layout (dense row-major here).
    Any = 0,
    /// Batch, channels, height, width.
    Nchw = 1,
    /// Batch, height, width, channels.
    Nhwc = 2,
    /// Batch, channels, depth, height, width.
    Ncdhw = 3,
    /// Batch, depth, height, width, channels.
    Ndhwc = 4,
    /// Weights: output and input channels, height, width.
    Oihw = 64,
    /// Grouped weights.
    Goihw = 65,
    /// 3-D weights.
    Oidhw = 66,
    /// Grouped 3-D weights.
    Goidhw = 67,
    /// Rank 0.
    Scalar = 95,
    /// Rank 1.
    C = 96,
    /// Channels, height, width.
    Chw = 128,
    /// Height, width, channels.
    Hwc = 129,
    /// Height, width.
    Hw = 192,
    /// Batch, channels.
    Nc = 193,
    /// Channels, batch.
    Cn = 194,
    /// Anything else: described by its blocking.
    Blocked = 200,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 17] = [
        Layout::Any,
        Layout::Nchw,
        Layout::Nhwc,
        Layout::Ncdhw,
        Layout::Ndhwc,
        Layout::Oihw,
        Layout::Goihw,
        Layout::Oidhw,
        Layout::Goidhw,
        Layout::Scalar,
        Layout::C,
        Layout::Chw,
        Layout::Hwc,
        Layout::Hw,
        Layout::Nc,
        Layout::Cn,
        Layout::Blocked,
    ];

    /// OpenVINO's numeric value.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The layout with OpenVINO's numeric value `code`.
    pub fn from_code(code: i64) -> Result<Layout> {
        Layout::ALL
            .iter()
            .copied()
            .find(|l| l.code() as i64 == code)
            .ok_or_else(|| err!(InvalidArgument, "{code} is not a layout code"))
    }

    /// The name, as OpenVINO spells it.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Any => "ANY",
            Layout::Nchw => "NCHW",
            Layout::Nhwc => "NHWC",
            Layout::Ncdhw => "NCDHW",
            Layout::Ndhwc => "NDHWC",
            Layout::Oihw => "OIHW",
            Layout::Goihw => "GOIHW",
            Layout::Oidhw => "OIDHW",
            Layout::Goidhw => "GOIDHW",
            Layout::Scalar => "SCALAR",
            Layout::C => "C",
            Layout::Chw => "CHW",
            Layout::Hwc => "HWC",
            Layout::Hw => "HW",
            Layout::Nc => "NC",
            Layout::Cn => "CN",
            Layout::Blocked => "BLOCKED",
        }
    }

    /// The rank a layout implies (`None` for ANY and BLOCKED).
    pub fn rank(self) -> Option<usize> {
        Some(match self {
            Layout::Any | Layout::Blocked => return None,
            Layout::Scalar => 0,
            Layout::C => 1,
            Layout::Hw | Layout::Nc | Layout::Cn => 2,
            Layout::Chw | Layout::Hwc => 3,
            Layout::Nchw | Layout::Nhwc | Layout::Oihw => 4,
            Layout::Ncdhw | Layout::Ndhwc | Layout::Goihw | Layout::Oidhw => 5,
            Layout::Goidhw => 6,
        })
    }

    /// The order of logical dims in memory, outermost first (NHWC is
    /// {0, 2, 3, 1}; planar layouts are the identity).
    pub fn order(self, rank: usize) -> Vec<usize> {
        match self {
            Layout::Nhwc => vec![0, 2, 3, 1],
            Layout::Ndhwc => vec![0, 2, 3, 4, 1],
            Layout::Hwc => vec![1, 2, 0],
            Layout::Cn => vec![1, 0],
            _ => (0..rank).collect(),
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// OpenVINO's `getLayoutByDims`: 0 SCALAR, 1 C, 2 NC, 3 CHW, 4 NCHW,
/// 5 NCDHW, anything else BLOCKED. (OpenVINO's older docs show BLOCKED for
/// rank 3; its sources, which REFERENCE.md follows, return CHW.)
pub fn layout_by_dims(rank: usize) -> Layout {
    match rank {
        0 => Layout::Scalar,
        1 => Layout::C,
        2 => Layout::Nc,
        3 => Layout::Chw,
        4 => Layout::Nchw,
        5 => Layout::Ncdhw,
        _ => Layout::Blocked,
    }
}

/// Row-major (C-order) strides of `dims`, in multiples of `unit` (1 for
/// elements, the item size for bytes). Saturates instead of overflowing.
pub fn row_major_strides(dims: &[usize], unit: usize) -> Vec<isize> {
    let mut strides = vec![0isize; dims.len()];
    fill_row_major_strides(dims, unit, &mut strides);
    strides
}

/// The integers strides are written as: `isize` inside blobcore, `i64`
/// in DLPack's tensors (the same width on the 64-bit targets blobcore
/// builds for).
pub(crate) trait StrideInt: Copy {
    /// `v` in this type.
    fn of(v: isize) -> Self;
}

impl StrideInt for isize {
    fn of(v: isize) -> Self {
        v
    }
}

impl StrideInt for i64 {
    fn of(v: isize) -> Self {
        v as i64
    }
}

/// [`row_major_strides`] written into `out` (as long as `dims`), for
/// callers that keep strides inline.
#[inline]
pub(crate) fn fill_row_major_strides<T: StrideInt>(dims: &[usize], unit: usize, out: &mut [T]) {
    let mut acc = unit as isize;
    for (s, &d) in out.iter_mut().zip(dims).rev() {
        *s = T::of(acc);
        acc = acc.saturating_mul(d.max(1) as isize);
    }
}

/// True when `strides` (in multiples of `unit`) describe dense row-major
/// data of `dims`; axes of size 1 may have any stride, and an empty array
/// (a zero dim) is row-major whatever its strides, as in NumPy.
pub fn is_row_major(dims: &[usize], strides: &[isize], unit: usize) -> bool {
    if dims.len() != strides.len() {
        return false;
    }
    if dims.contains(&0) {
        return true;
    }
    // The strides row_major_strides would give, innermost first, without
    // allocating them (this runs on every view's creation).
    let mut want = unit as isize;
    for (&d, &s) in dims.iter().zip(strides).rev() {
        if d > 1 && s != want {
            return false;
        }
        want = want.saturating_mul(d.max(1) as isize);
    }
    true
}

/// How blocked dims are laid out in memory (OpenVINO `BlockingDesc`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlockingDesc {
    blk_dims: Inline<usize>,
    order: Inline<usize>,
    offset_padding: usize,
    offsets_to_data: Inline<usize>,
    /// Element strides; negative only in strided views (NumPy's reversed
    /// axes), whose `offset_padding` then reaches the lowest element.
    strides: Inline<isize>,
}

/// Per-blocked-dim values, inline up to eight entries (every planar rank
/// and the usual blocked ones), so that a view's desc allocates nothing.
type Inline<T> = smallvec::SmallVec<[T; INLINE]>;

/// How many per-dim entries [`Inline`] keeps without allocating.
pub(crate) const INLINE: usize = 8;

fn dense_strides(blk_dims: &[usize]) -> Result<Vec<usize>> {
    let mut strides = vec![0usize; blk_dims.len()];
    let mut acc: usize = 1;
    for (s, &d) in strides.iter_mut().zip(blk_dims).rev() {
        *s = acc;
        acc = acc
            .checked_mul(d.max(1))
            .filter(|&a| i64::try_from(a).is_ok())
            .ok_or_else(|| err!(Shape, "blocked dims {blk_dims:?} overflow"))?;
    }
    Ok(strides)
}

impl BlockingDesc {
    /// Dense blocked dims in `order` (OpenVINO `BlockingDesc(blkDims, order)`).
    pub fn new(blk_dims: &[usize], order: &[usize]) -> Result<BlockingDesc> {
        BlockingDesc::with_offsets(blk_dims, order, 0, &[])
    }

    /// OpenVINO `BlockingDesc(dims, layout)`: the dense blocking a named
    /// layout gives logical `dims` (NHWC on `[n, c, h, w]` is blocked dims
    /// `[n, h, w, c]` in order `[0, 2, 3, 1]`; ANY and BLOCKED are
    /// row-major). The layout's rank must match (`Shape` error).
    pub fn from_layout(dims: &[usize], layout: Layout) -> Result<BlockingDesc> {
        check_rank(dims)?;
        check_layout_rank(layout, dims.len())?;
        let order = layout.order(dims.len());
        let blk: Vec<usize> = order.iter().map(|&d| dims[d]).collect();
        BlockingDesc::new(&blk, &order)
    }

    /// As [`BlockingDesc::new`] with an offset before the data and per-blocked-dim
    /// offsets to the data (empty means zeros).
    pub fn with_offsets(blk_dims: &[usize], order: &[usize], offset_padding: usize, dim_offsets: &[usize]) -> Result<BlockingDesc> {
        let strides = dense_strides(blk_dims)?;
        BlockingDesc::with_strides(blk_dims, order, offset_padding, dim_offsets, &strides)
    }

    /// Fully explicit. Strides must be at least dense: the innermost at
    /// least 1 and each at least the next one times its blocked dim.
    pub fn with_strides(
        blk_dims: &[usize],
        order: &[usize],
        offset_padding: usize,
        dim_offsets: &[usize],
        strides: &[usize],
    ) -> Result<BlockingDesc> {
        let n = blk_dims.len();
        if n > 2 * MAX_RANK {
            return Err(err!(Shape, "{n} blocked dims are too many (at most {})", 2 * MAX_RANK));
        }
        if order.len() != n {
            return Err(err!(Shape, "order has {} entries for {n} blocked dims", order.len()));
        }
        if strides.len() != n {
            return Err(err!(Shape, "{} strides given for {n} blocked dims", strides.len()));
        }
        let offsets: Inline<usize> = if dim_offsets.is_empty() { smallvec::smallvec![0; n] } else { dim_offsets.into() };
        if offsets.len() != n {
            return Err(err!(Shape, "{} dim offsets given for {n} blocked dims", offsets.len()));
        }
        dense_strides(blk_dims)?;
        for i in (0..n).rev() {
            let min = if i + 1 == n { 1 } else { strides[i + 1].saturating_mul(blk_dims[i + 1].max(1)) };
            if strides[i] < min {
                return Err(err!(
                    Shape,
                    "strides {strides:?} are not at least dense for blocked dims {blk_dims:?} (stride {i} must be >= {min})"
                ));
            }
        }
        let strides = strides
            .iter()
            .map(|&s| isize::try_from(s).map_err(|_| err!(Shape, "stride {s} is too large")))
            .collect::<Result<Inline<isize>>>()?;
        let b = BlockingDesc { blk_dims: blk_dims.into(), order: order.into(), offset_padding, offsets_to_data: offsets, strides };
        b.span()?;
        Ok(b)
    }

    /// A planar strided view (NumPy indexing): no density rule, strides of
    /// either sign, only a span that fits an `i64`. The padding is what
    /// the negative strides reach below element 0, so that every element
    /// is at a non-negative offset from the view's base (its lowest
    /// element). The caller checks the span lies in the storage.
    pub(crate) fn view(blk_dims: &[usize], order: &[usize], strides: &[isize]) -> Result<BlockingDesc> {
        let n = blk_dims.len();
        let mut below: usize = 0;
        if !blk_dims.contains(&0) {
            for (&d, &s) in blk_dims.iter().zip(strides) {
                if s < 0 {
                    below = (d - 1)
                        .checked_mul(s.unsigned_abs())
                        .and_then(|v| v.checked_add(below))
                        .ok_or_else(|| err!(Shape, "the view's memory span overflows"))?;
                }
            }
        }
        let b = BlockingDesc {
            blk_dims: blk_dims.into(),
            order: order.into(),
            offset_padding: below,
            offsets_to_data: smallvec::smallvec![0; n],
            strides: strides.into(),
        };
        b.span()?;
        Ok(b)
    }

    /// A blocking from all its parts, as another process described it
    /// ([`crate::share`]): any strides, checked only for what memory safety
    /// needs — entries for every blocked dim, no element below the base,
    /// a span that fits an `i64` with every partial sum of an element's
    /// offset, and no two elements in one place
    /// ([`BlockingDesc::elements_distinct`]).
    pub(crate) fn from_parts(blk_dims: &[usize], order: &[usize], offset_padding: usize, offsets_to_data: &[usize], strides: &[isize]) -> Result<BlockingDesc> {
        let n = blk_dims.len();
        if n > 2 * MAX_RANK || order.len() != n || offsets_to_data.len() != n || strides.len() != n {
            return Err(err!(Shape, "a blocking of {n} blocked dims with {} order entries, {} offsets and {} strides", order.len(), offsets_to_data.len(), strides.len()));
        }
        let b = BlockingDesc {
            blk_dims: blk_dims.into(),
            order: order.into(),
            offset_padding,
            offsets_to_data: offsets_to_data.into(),
            strides: strides.into(),
        };
        b.span()?;
        // Every partial sum of an element's offset fits an i64, in any
        // order of the terms (as the kernels add them): terms that cancel
        // out past 2^63 would pass the span check and overflow on the way.
        let overflow = || err!(Shape, "strides {strides:?} and offsets {offsets_to_data:?} overflow an element offset on the way");
        let mut reach = offset_padding as i128;
        for ((&d, &s), &o) in blk_dims.iter().zip(strides).zip(offsets_to_data) {
            let far = (o as i128).checked_add(d as i128).ok_or_else(overflow)?;
            reach = far.checked_mul(s.unsigned_abs() as i128).and_then(|t| reach.checked_add(t)).ok_or_else(overflow)?;
        }
        if reach > i64::MAX as i128 {
            return Err(overflow());
        }
        if !b.elements_distinct() {
            return Err(err!(Shape, "strides {strides:?} over blocked dims {blk_dims:?} may put two elements in one place"));
        }
        Ok(b)
    }

    /// The blocked dims, outermost first.
    pub fn blk_dims(&self) -> &[usize] {
        &self.blk_dims
    }

    /// Which logical dim each blocked dim belongs to.
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// Elements before the data.
    pub fn offset_padding(&self) -> usize {
        self.offset_padding
    }

    /// Per-blocked-dim offsets to the data (a region's start).
    pub fn offsets_to_data(&self) -> &[usize] {
        &self.offsets_to_data
    }

    /// Strides of the blocked dims, in elements (negative only in views
    /// with reversed axes).
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// The lowest and highest element offsets the blocking reaches, exact
    /// in 128 bits (None when empty; an error when even 128 bits overflow:
    /// up to 64 blocked dims of products near 2^127 can, and a wrapped sum
    /// would pass a bounds check it should fail).
    fn bounds(&self) -> Result<Option<(i128, i128)>> {
        if self.blk_dims.contains(&0) {
            return Ok(None);
        }
        let overflow = || err!(Shape, "the blocking's memory span overflows");
        let (mut lo, mut hi) = (self.offset_padding as i128, self.offset_padding as i128);
        for i in 0..self.blk_dims.len() {
            let s = self.strides[i] as i128;
            let off = self.offsets_to_data[i] as i128;
            // Offsets and dims below 2^64 and strides below 2^63 in magnitude:
            // a product can pass 2^127, hence the checks.
            let first = off.checked_mul(s).ok_or_else(overflow)?;
            let last = (self.blk_dims[i] as i128 - 1 + off).checked_mul(s).ok_or_else(overflow)?;
            lo = lo.checked_add(first.min(last)).ok_or_else(overflow)?;
            hi = hi.checked_add(first.max(last)).ok_or_else(overflow)?;
        }
        Ok(Some((lo, hi)))
    }

    /// Elements of memory the described data reaches from the base (0 when
    /// empty); no element lies below the base.
    pub fn span(&self) -> Result<usize> {
        let Some((lo, hi)) = self.bounds()? else { return Ok(0) };
        if lo < 0 {
            return Err(err!(Shape, "the blocking reaches {} elements below its base", -lo));
        }
        usize::try_from(hi + 1)
            .ok()
            .filter(|&e| i64::try_from(e).is_ok())
            .ok_or_else(|| err!(Shape, "the blocking's memory span overflows"))
    }

    /// True when no two blocked indices share an element of memory, shown
    /// by the strides' dominance: taken by size (dims of one element left
    /// out), each stride exceeds the farthest reach of all smaller ones.
    /// Every blocking blobcore builds passes (dense ones by the density
    /// rule, views as subsets of them); one another process describes
    /// ([`BlockingDesc::from_parts`]) may not, and then writes through it
    /// would race and reads repeat elements. A blocking that interleaves
    /// without overlap (strides 2 and 3 over dims 3 and 2 reach 0, 2, 4,
    /// 3, 5, 7) fails too: the test is sufficient, not exact.
    pub(crate) fn elements_distinct(&self) -> bool {
        if self.blk_dims.contains(&0) {
            return true;
        }
        let mut moving: Vec<(u128, u128)> = self
            .blk_dims
            .iter()
            .zip(&self.strides)
            .filter(|(&d, _)| d > 1)
            .map(|(&d, &s)| (s.unsigned_abs() as u128, d as u128))
            .collect();
        moving.sort_unstable();
        let mut reach: u128 = 0;
        for (s, d) in moving {
            if s <= reach {
                return false;
            }
            reach = reach.saturating_add(s.saturating_mul(d - 1));
        }
        true
    }

    /// The offset of logical element 0 from the base.
    pub fn origin(&self) -> usize {
        // No element, no origin: an empty blocking's offsets and padding
        // are not checked against any memory (nor against isize).
        if self.blk_dims.contains(&0) {
            return 0;
        }
        let mut at = self.offset_padding as isize;
        for (&o, &s) in self.offsets_to_data.iter().zip(&self.strides) {
            at += o as isize * s;
        }
        at.max(0) as usize
    }

    /// True for the plain dense row-major blocking of `dims`.
    pub fn is_default_for(&self, dims: &[usize]) -> bool {
        self.order.iter().copied().eq(0..dims.len())
            && self.blk_dims[..] == *dims
            && self.offset_padding == 0
            && self.offsets_to_data.iter().all(|&o| o == 0)
            && dense_strides(dims).is_ok_and(|s| s.iter().zip(&self.strides).all(|(&a, &b)| a as isize == b) || dims.contains(&0) || dims.iter().product::<usize>() <= 1)
    }
}

/// dtype + logical dims + layout + blocking (OpenVINO `TensorDesc`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TensorDesc {
    dtype: DType,
    dims: Inline<usize>,
    layout: Layout,
    blocking: BlockingDesc,
}

impl TensorDesc {
    /// A desc with a named layout (ANY and BLOCKED mean row-major).
    pub fn new(dtype: DType, dims: &[usize], layout: Layout) -> Result<TensorDesc> {
        let blocking = BlockingDesc::from_layout(dims, layout)?;
        Ok(TensorDesc { dtype, dims: dims.into(), layout, blocking })
    }

    /// The default dense row-major desc of `dims`.
    pub fn dense(dtype: DType, dims: &[usize]) -> Result<TensorDesc> {
        TensorDesc::new(dtype, dims, layout_by_dims(dims.len()))
    }

    /// A desc with an explicit blocking; the layout is inferred as OpenVINO
    /// does (order {0,2,3,1} on rank 4 is NHWC; anything blocked is BLOCKED).
    pub fn with_blocking(dtype: DType, dims: &[usize], blocking: BlockingDesc) -> Result<TensorDesc> {
        check_rank(dims)?;
        let rank = dims.len();
        let b = &blocking;
        if b.order.len() < rank {
            return Err(err!(Shape, "order {:?} covers fewer dims than the rank {rank}", b.order));
        }
        for (d, &size) in dims.iter().enumerate() {
            let mut product: usize = 1;
            let mut seen = 0;
            for (i, &o) in b.order.iter().enumerate() {
                if o == d {
                    seen += 1;
                    product = product.saturating_mul(b.blk_dims[i]);
                }
            }
            if seen == 0 {
                return Err(err!(Shape, "order {:?} leaves out dim {d}", b.order));
            }
            if product < size {
                return Err(err!(
                    Shape,
                    "blocked dims {:?} hold {product} along dim {d}, fewer than its {} elements",
                    b.blk_dims,
                    size
                ));
            }
        }
        if let Some(&bad) = b.order.iter().find(|&&o| o >= rank) {
            return Err(err!(OutOfRange, "order entry {bad} is out of range for rank {rank}"));
        }
        let layout = infer_layout(dims, b);
        Ok(TensorDesc { dtype, dims: dims.into(), layout, blocking })
    }

    /// A planar strided desc, boxed, for a view: logical dim `order[i]`
    /// is the blocked dim `i`, of its full size, at element stride
    /// `strides[i]` (either sign), with its base `below` elements under
    /// element 0. The caller has checked it: `order` is a permutation of
    /// the dims, `strides` as long, and [`strided_span`] of them gave
    /// `below` (so nothing here can overflow); in place of
    /// [`TensorDesc::with_blocking`]'s general checks, which a property
    /// test compares it with (`a_strided_placement_is_the_general_desc`).
    /// Sized up front and written by index: pushing would store and
    /// reload each length on every axis.
    pub(crate) fn planar_of_checked(dtype: DType, dims: &[usize], order: &[usize], strides: &[isize], below: usize) -> Box<TensorDesc> {
        let rank = dims.len();
        let mut b = BlockingDesc {
            blk_dims: smallvec::smallvec![0; rank],
            order: Inline::from_slice(order),
            offset_padding: below,
            offsets_to_data: smallvec::smallvec![0; rank],
            strides: Inline::from_slice(strides),
        };
        for (blk, &a) in b.blk_dims.iter_mut().zip(order) {
            *blk = dims[a];
        }
        let layout = infer_layout(dims, &b);
        Box::new(TensorDesc { dtype, dims: dims.into(), layout, blocking: b })
    }

    /// A desc from all its parts ([`BlockingDesc::from_parts`]): the
    /// blocking must cover the dims (as [`TensorDesc::with_blocking`]) and
    /// the layout fit the rank.
    pub(crate) fn from_parts(dtype: DType, dims: &[usize], layout: Layout, blocking: BlockingDesc) -> Result<TensorDesc> {
        check_layout_rank(layout, dims.len())?;
        let mut d = TensorDesc::with_blocking(dtype, dims, blocking)?;
        d.layout = layout;
        Ok(d)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The logical dims.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// The layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The blocking.
    pub fn blocking(&self) -> &BlockingDesc {
        &self.blocking
    }

    /// Number of logical elements.
    pub fn count(&self) -> usize {
        self.dims.iter().product()
    }

    /// Elements of memory a blob with this desc needs.
    pub fn span(&self) -> Result<usize> {
        if self.count() == 0 {
            return Ok(0);
        }
        self.blocking.span()
    }

    /// True for the default dense row-major desc (what plain blobs have).
    pub fn is_dense(&self) -> bool {
        self.blocking.is_default_for(&self.dims)
    }

    /// True when every logical dim appears once in the order (no blocks):
    /// the data is a strided view NumPy can describe.
    pub fn is_planar(&self) -> bool {
        self.blocking.order.len() == self.dims.len()
    }

    /// OpenVINO `offset(v)`: the memory offset, in elements, of the element
    /// at logical index `index`.
    pub fn offset_index(&self, index: &[usize]) -> Result<usize> {
        if index.len() != self.dims.len() {
            return Err(err!(OutOfRange, "{} indices given for rank {}", index.len(), self.dims.len()));
        }
        if let Some(a) = (0..index.len()).find(|&a| index[a] >= self.dims[a]) {
            return Err(err!(OutOfRange, "index {} is out of range for dim {a} of size {}", index[a], self.dims[a]));
        }
        let b = &self.blocking;
        let mut v = index.to_vec();
        let mut result = b.offset_padding as isize;
        for i in (0..b.blk_dims.len()).rev() {
            let d = b.order[i];
            let blk = b.blk_dims[i].max(1);
            let shift = v[d] % blk;
            v[d] /= blk;
            result += (shift + b.offsets_to_data[i]) as isize * b.strides[i];
        }
        // A valid desc puts every element at or above its base.
        usize::try_from(result).map_err(|_| err!(Internal, "element offset {result} below the base"))
    }

    /// OpenVINO `offset(l)`: the offset of the `l`-th element in row-major
    /// order of the logical dims.
    pub fn offset_linear(&self, l: usize) -> Result<usize> {
        let count = self.count();
        if l >= count {
            return Err(err!(OutOfRange, "element {l} is out of range for {count} elements"));
        }
        let mut idx = vec![0usize; self.dims.len()];
        let mut rest = l;
        for (i, &d) in idx.iter_mut().zip(&self.dims).rev() {
            *i = rest % d;
            rest /= d;
        }
        self.offset_index(&idx)
    }

    /// A dense desc with other dims (same count); refused for padded or
    /// strided descs, whose memory the new dims could not describe.
    pub fn reshape(&self, dims: &[usize], layout: Layout) -> Result<TensorDesc> {
        let b = &self.blocking;
        let padded = b.offset_padding != 0
            || b.offsets_to_data.iter().any(|&o| o != 0)
            || dense_strides(&b.blk_dims).map(|s| !s.iter().zip(&b.strides).all(|(&a, &b)| a as isize == b)).unwrap_or(true)
            || b.blk_dims.iter().product::<usize>() != self.count();
        if padded {
            return Err(err!(Shape, "cannot reshape a padded, strided or blocked desc ({}); reorder to a dense one first", self.layout));
        }
        check_rank(dims)?;
        let count: usize = dims.iter().product();
        if count != self.count() {
            return Err(err!(Shape, "reshape keeps the element count: {:?} has {}, {dims:?} has {count}", self.dims, self.count()));
        }
        let layout = if layout == Layout::Any { layout_by_dims(dims.len()) } else { layout };
        TensorDesc::new(self.dtype, dims, layout)
    }

    /// OpenVINO `setLayout`: the same dims in another named layout (the
    /// blocking is rebuilt); the layout must fit the rank.
    pub fn set_layout(&mut self, layout: Layout) -> Result<()> {
        *self = TensorDesc::new(self.dtype, &self.dims, layout)?;
        Ok(())
    }

    /// The desc of the region `[begin, end)` of this one: the same strides,
    /// the start moved through `offsets_to_data` (once). Planar descs only.
    pub fn region(&self, begin: &[usize], end: &[usize]) -> Result<TensorDesc> {
        let rank = self.dims.len();
        if begin.len() != rank || end.len() != rank {
            return Err(err!(OutOfRange, "region bounds of {} and {} entries for rank {rank}", begin.len(), end.len()));
        }
        for a in 0..rank {
            if begin[a] > end[a] || end[a] > self.dims[a] {
                return Err(err!(OutOfRange, "region [{}, {}) is out of range for dim {a} of size {}", begin[a], end[a], self.dims[a]));
            }
        }
        if !self.is_planar() {
            return Err(err!(Unsupported, "regions of blocked layouts ({}) are not supported; reorder to a planar layout first", self.layout));
        }
        let dims: Inline<usize> = (0..rank).map(|a| end[a] - begin[a]).collect();
        let b = &self.blocking;
        let blk: Inline<usize> = b.order.iter().map(|&d| dims[d]).collect();
        let offs: Inline<usize> = b.order.iter().zip(&b.offsets_to_data).map(|(&d, &o)| o + begin[d]).collect();
        let blocking = BlockingDesc { blk_dims: blk, order: b.order.clone(), offset_padding: b.offset_padding, offsets_to_data: offs, strides: b.strides.clone() };
        let layout = if self.layout == Layout::Blocked { Layout::Blocked } else { infer_layout(&dims, &blocking) };
        Ok(TensorDesc { dtype: self.dtype, dims, layout: if self.layout == Layout::Any { Layout::Any } else { layout }, blocking })
    }

    /// For planar descs: the element strides of the logical dims (negative
    /// for reversed axes) and the offset of element 0 from the base (what
    /// NumPy needs to view the data).
    pub fn planar_strides(&self) -> Option<(Vec<isize>, usize)> {
        if !self.is_planar() {
            return None;
        }
        let b = &self.blocking;
        let mut strides = vec![0isize; self.dims.len()];
        for (i, &d) in b.order.iter().enumerate() {
            strides[d] = b.strides[i];
        }
        Some((strides, self.origin()))
    }

    /// The offset of logical element 0 from the base.
    pub fn origin(&self) -> usize {
        self.blocking.origin()
    }
}

impl fmt::Display for TensorDesc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TensorDesc({}, {:?}, {}", self.dtype, self.dims, self.layout)?;
        if self.layout == Layout::Blocked {
            write!(f, ", blk_dims={:?}, order={:?}", self.blocking.blk_dims, self.blocking.order)?;
        }
        write!(f, ")")
    }
}

fn check_rank(dims: &[usize]) -> Result<()> {
    crate::shape::Shape::new(dims).map(|_| ())
}

fn check_layout_rank(layout: Layout, rank: usize) -> Result<()> {
    match layout.rank() {
        Some(r) if r != rank => Err(err!(Shape, "layout {layout} needs rank {r}, not {rank}")),
        _ => Ok(()),
    }
}

/// OpenVINO's layout inference from a blocking.
/// True when `axes` holds each of `0..rank` once (rank <= [`MAX_RANK`]),
/// checked without allocating.
pub(crate) fn is_permutation(axes: &[usize], rank: usize) -> bool {
    let mut seen: u64 = 0;
    axes.len() == rank
        && rank <= MAX_RANK
        && axes.iter().all(|&a| {
            let bit = 1u64 << a.min(63);
            let fresh = a < rank && seen & bit == 0;
            seen |= bit;
            fresh
        })
}

/// The memory a strided view of `(dim, element stride)` axes reaches:
/// the elements its negative strides reach below element 0 (where its
/// base, the lowest element, lies) and its span, the whole reach plus
/// one (0 for an empty view, whose base is element 0, whatever its
/// strides). Overflow, or a span past `i64`, is a `Shape` error. The order of the axes does not
/// matter.
pub(crate) fn strided_span(axes: impl Iterator<Item = (usize, isize)> + Clone) -> Result<(usize, usize)> {
    if axes.clone().any(|(d, _)| d == 0) {
        return Ok((0, 0)); // no element, whatever the strides
    }
    let overflow = || err!(Shape, "the view's memory span overflows");
    let (mut below, mut reach) = (0usize, 0usize);
    for (d, s) in axes {
        let r = (d - 1).checked_mul(s.unsigned_abs()).ok_or_else(overflow)?;
        reach = reach.checked_add(r).ok_or_else(overflow)?;
        if s < 0 {
            below += r; // <= reach
        }
    }
    let span = reach.checked_add(1).filter(|&e| i64::try_from(e).is_ok()).ok_or_else(overflow)?;
    Ok((below, span))
}

fn infer_layout(dims: &[usize], b: &BlockingDesc) -> Layout {
    let rank = dims.len();
    if b.order.len() != rank {
        return Layout::Blocked;
    }
    let identity = b.order.iter().copied().eq(0..rank);
    if identity {
        return layout_by_dims(rank);
    }
    match (rank, b.order.as_slice()) {
        (4, [0, 2, 3, 1]) => Layout::Nhwc,
        (5, [0, 2, 3, 4, 1]) => Layout::Ndhwc,
        (3, [1, 2, 0]) => Layout::Hwc,
        (2, [1, 0]) => Layout::Cn,
        _ => Layout::Blocked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocking_from_a_named_layout() {
        // The seed's example 1: BlockingDesc({1, 20, 20, 25}, {0, 2, 3, 1})
        // is BlockingDesc of dims {1, 25, 20, 20} in NHWC.
        let b = BlockingDesc::from_layout(&[1, 25, 20, 20], Layout::Nhwc).unwrap();
        assert_eq!(b, BlockingDesc::new(&[1, 20, 20, 25], &[0, 2, 3, 1]).unwrap());
        assert_eq!(b.strides(), [10000, 500, 25, 1]);
        assert_eq!(BlockingDesc::from_layout(&[2, 3], Layout::Blocked).unwrap(), BlockingDesc::new(&[2, 3], &[0, 1]).unwrap());
        assert_eq!(BlockingDesc::from_layout(&[2, 3], Layout::Nchw).unwrap_err().code(), 4);
    }

    #[test]
    fn seed_blocked_offsets() {
        // ../shared/seeds/openvino-memory-primitives.md, example 4.
        let blk = BlockingDesc::new(&[1, 4, 20, 20, 8], &[0, 1, 2, 3, 1]).unwrap();
        let t = TensorDesc::with_blocking(DType::F32, &[1, 25, 20, 20], blk).unwrap();
        assert_eq!(t.layout(), Layout::Blocked);
        assert_eq!(t.offset_linear(0).unwrap(), 0);
        assert_eq!(t.offset_linear(1).unwrap(), 8);
        assert_eq!(t.offset_index(&[0, 0, 0, 2]).unwrap(), 16);
        assert_eq!(t.offset_index(&[0, 1, 0, 2]).unwrap(), 17);
        assert_eq!(t.span().unwrap(), 4 * 20 * 20 * 8);
        // Channel 9 is in the second block of 8, lane 1.
        assert_eq!(t.offset_index(&[0, 9, 0, 0]).unwrap(), 3200 + 1);
        assert_eq!(t.offset_index(&[0, 25, 0, 0]).unwrap_err().code(), 6);
    }

    #[test]
    fn seed_nhwc_both_ways_and_layout_inference() {
        let a = TensorDesc::with_blocking(DType::F32, &[1, 25, 20, 20], BlockingDesc::new(&[1, 20, 20, 25], &[0, 2, 3, 1]).unwrap()).unwrap();
        let b = TensorDesc::new(DType::F32, &[1, 25, 20, 20], Layout::Nhwc).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.layout(), Layout::Nhwc);
        // (n, c, h, w) -> ((n*H + h)*W + w)*C + c
        assert_eq!(a.offset_index(&[0, 3, 2, 1]).unwrap(), (2 * 20 + 1) * 25 + 3);
        for (order, layout) in [
            (vec![0, 1, 2, 3], Layout::Nchw),
            (vec![0, 2, 3, 4, 1], Layout::Ndhwc),
            (vec![1, 2, 0], Layout::Hwc),
            (vec![1, 0], Layout::Cn),
            (vec![0, 1, 2], Layout::Chw),
            (vec![0, 3, 1, 2], Layout::Blocked),
        ] {
            let dims: Vec<usize> = (0..order.len()).map(|i| i + 2).collect();
            let blk: Vec<usize> = order.iter().map(|&d| dims[d]).collect();
            let t = TensorDesc::with_blocking(DType::F32, &dims, BlockingDesc::new(&blk, &order).unwrap()).unwrap();
            assert_eq!(t.layout(), layout, "order {order:?}");
        }
    }

    #[test]
    fn row_major_helpers_match_numpy() {
        // numpy.zeros((2, 3, 4), float32).strides == (48, 16, 4)
        assert_eq!(row_major_strides(&[2, 3, 4], 4), [48, 16, 4]);
        assert!(is_row_major(&[2, 3, 4], &[48, 16, 4], 4));
        assert!(!is_row_major(&[2, 3, 4], &[4, 8, 24], 4)); // Fortran order
        assert!(is_row_major(&[2, 1, 4], &[16, 999, 4], 4)); // size-1 axes are free
        assert!(!is_row_major(&[2, 3], &[3], 1));
    }

    #[test]
    fn layout_by_dims_follows_the_sources() {
        let got: Vec<Layout> = (0..8).map(layout_by_dims).collect();
        use Layout::*;
        assert_eq!(got, [Scalar, C, Nc, Chw, Nchw, Ncdhw, Blocked, Blocked]);
        assert_eq!(Layout::from_code(200).unwrap(), Blocked);
        assert_eq!(Layout::from_code(5).unwrap_err().code(), 3);
    }

    #[test]
    fn validation() {
        // strides must be at least dense
        assert!(BlockingDesc::with_strides(&[2, 3], &[0, 1], 0, &[], &[3, 1]).is_ok());
        assert!(BlockingDesc::with_strides(&[2, 3], &[0, 1], 0, &[], &[4, 1]).is_ok());
        assert_eq!(BlockingDesc::with_strides(&[2, 3], &[0, 1], 0, &[], &[2, 1]).unwrap_err().code(), 4);
        assert_eq!(BlockingDesc::with_strides(&[2, 3], &[0, 1], 0, &[], &[3, 0]).unwrap_err().code(), 4);
        assert_eq!(BlockingDesc::new(&[2, 3], &[0]).unwrap_err().code(), 4);
        // blocks must cover the dims, and every dim must appear
        let small = BlockingDesc::new(&[1, 3, 8], &[0, 1, 1]).unwrap();
        assert_eq!(TensorDesc::with_blocking(DType::F32, &[1, 25], small).unwrap_err().code(), 4);
        let missing = BlockingDesc::new(&[4], &[0]).unwrap();
        assert_eq!(TensorDesc::with_blocking(DType::F32, &[4, 1], missing).unwrap_err().code(), 4);
        let out = BlockingDesc::new(&[4, 1], &[0, 2]).unwrap();
        assert!(TensorDesc::with_blocking(DType::F32, &[4, 1], out).is_err());
        // layouts must fit the rank
        assert_eq!(TensorDesc::new(DType::F32, &[2, 3], Layout::Nchw).unwrap_err().code(), 4);
        let mut t = TensorDesc::new(DType::F32, &[1, 2, 3, 4], Layout::Nchw).unwrap();
        assert_eq!(t.set_layout(Layout::Chw).unwrap_err().code(), 4);
        assert_eq!(t.layout(), Layout::Nchw, "a failed set_layout changes nothing");
        t.set_layout(Layout::Nhwc).unwrap();
        assert_eq!(t.blocking().blk_dims(), [1, 3, 4, 2]);
    }

    #[test]
    fn reshape_is_refused_for_padded_descs() {
        let t = TensorDesc::new(DType::F32, &[2, 3, 4, 5], Layout::Nchw).unwrap();
        let r = t.reshape(&[6, 20], Layout::Any).unwrap();
        assert_eq!(r.layout(), Layout::Nc);
        assert_eq!(t.reshape(&[7], Layout::Any).unwrap_err().code(), 4);
        let padded = TensorDesc::with_blocking(DType::F32, &[2, 3], BlockingDesc::with_offsets(&[2, 3], &[0, 1], 5, &[]).unwrap()).unwrap();
        assert_eq!(padded.reshape(&[6], Layout::Any).unwrap_err().code(), 4);
        let blocked = TensorDesc::with_blocking(DType::F32, &[1, 5], BlockingDesc::new(&[1, 1, 8], &[0, 1, 1]).unwrap()).unwrap();
        assert_eq!(blocked.reshape(&[5], Layout::Any).unwrap_err().code(), 4);
    }

    #[test]
    fn regions_count_their_start_once() {
        let t = TensorDesc::new(DType::F32, &[2, 3, 4, 5], Layout::Nhwc).unwrap();
        let r = t.region(&[1, 1, 2, 3], &[2, 3, 4, 5]).unwrap();
        assert_eq!(r.dims(), [1, 2, 2, 2]);
        for idx in [[0, 0, 0, 0], [0, 1, 1, 1], [0, 0, 1, 0]] {
            let parent: Vec<usize> = idx.iter().zip([1, 1, 2, 3]).map(|(i, b)| i + b).collect();
            assert_eq!(r.offset_index(&idx).unwrap(), t.offset_index(&parent).unwrap());
        }
        assert_eq!(t.region(&[0, 0, 0, 0], &[3, 3, 4, 5]).unwrap_err().code(), 6);
        let blocked = TensorDesc::with_blocking(DType::F32, &[1, 5], BlockingDesc::new(&[1, 1, 8], &[0, 1, 1]).unwrap()).unwrap();
        assert_eq!(blocked.region(&[0, 0], &[1, 2]).unwrap_err().code(), 13);
    }

    /// Every offset a blocking reaches, by brute force.
    fn offsets(b: &BlockingDesc) -> Vec<i128> {
        let mut all = vec![b.offset_padding() as i128];
        for ((&d, &s), &o) in b.blk_dims().iter().zip(b.strides()).zip(b.offsets_to_data()) {
            all = all.iter().flat_map(|&a| (0..d).map(move |i| a + (i + o) as i128 * s as i128)).collect();
        }
        all
    }

    #[test]
    fn elements_distinct_on_examples() {
        let parts = |blk: &[usize], strides: &[isize]| {
            let n = blk.len();
            BlockingDesc::from_parts(blk, &(0..n).collect::<Vec<_>>(), 8, &vec![0; n], strides)
        };
        // A zero stride, equal strides, equal and opposite strides, a reach past the next stride.
        for (blk, strides) in [(&[4, 2][..], &[0, 1][..]), (&[2, 2], &[1, 1]), (&[2, 2], &[2, -2]), (&[3, 2], &[1, 2])] {
            assert_eq!(parts(blk, strides).unwrap_err().code(), 4, "{blk:?} {strides:?}");
        }
        // Interleaved without overlap: refused too (the test is sufficient, not exact).
        assert!(parts(&[3, 2], &[2, 3]).is_err());
        // Dims of one element and empty blockings move nothing; reversed axes are fine.
        assert!(parts(&[1, 5], &[0, 1]).is_ok());
        assert!(parts(&[0, 5], &[0, 0]).is_ok());
        assert!(parts(&[3, 2], &[-2, 1]).is_ok());
        assert!(BlockingDesc::new(&[2, 3, 4, 8], &[0, 1, 2, 1]).unwrap().elements_distinct());
    }

    #[test]
    fn offsets_past_128_bits_or_cancelling_past_63_are_errors() {
        // 16 terms of 2^124: the sum wraps 128 bits (to a span of one
        // element in a release build, a panic in a debug one, before).
        let p = 1usize << 62;
        let b = BlockingDesc::from_parts(&[1; 16], &[0; 16], 0, &[p; 16], &[p as isize; 16]);
        assert_eq!(b.unwrap_err().code(), 4);
        let b = BlockingDesc::with_strides(&[1; 16], &[0; 16], 0, &[usize::MAX; 16], &[p; 16]);
        assert_eq!(b.unwrap_err().code(), 4);
        // Terms of +-2^100 that cancel: a span of one element, but the
        // kernels' partial sums would overflow.
        let q = 1usize << 50;
        let b = BlockingDesc::from_parts(&[1, 1], &[0, 0], 0, &[q, q], &[q as isize, -(q as isize)]);
        assert_eq!(b.unwrap_err().code(), 4);
        // The same element from terms that fit.
        assert_eq!(BlockingDesc::from_parts(&[1, 1], &[0, 0], 0, &[3, 3], &[5, -5]).unwrap().span().unwrap(), 1);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 2000, rng_seed: proptest::test_runner::RngSeed::Fixed(47), ..Default::default() })]
        /// The test is sound: a blocking it passes reaches every element
        /// once (checked by listing them); and every dense blocking passes.
        #[test]
        fn elements_distinct_is_sound(dims in proptest::collection::vec((1usize..5, -7isize..8), 0..5)) {
            let blk: Vec<usize> = dims.iter().map(|d| d.0).collect();
            let strides: Vec<isize> = dims.iter().map(|d| d.1).collect();
            let n = blk.len();
            let order: Vec<usize> = (0..n).collect();
            let b = BlockingDesc {
                blk_dims: blk.as_slice().into(),
                order: order.as_slice().into(),
                offset_padding: 200,
                offsets_to_data: smallvec::smallvec![0; n],
                strides: strides.as_slice().into(),
            };
            let mut all = offsets(&b);
            let count = all.len();
            all.sort_unstable();
            all.dedup();
            if b.elements_distinct() {
                proptest::prop_assert_eq!(all.len(), count);
            }
            // Another process's description is taken exactly when the test passes.
            proptest::prop_assert_eq!(BlockingDesc::from_parts(&blk, &order, 200, &vec![0; n], &strides).is_ok(), b.elements_distinct());
            proptest::prop_assert!(BlockingDesc::new(&blk, &order).unwrap().elements_distinct());
        }
    }
}
