//! Shapes: rank 0..=32 dims in row-major order, NeoML's seven named dims,
//! and Caffe's axis helpers (count ranges, canonical axes, offsets, legacy
//! num/channels/height/width).

use crate::dtype::DType;
use crate::error::{err, Result};
use std::fmt;
use smallvec::SmallVec;

/// Highest rank a blob may have (Caffe's `kMaxBlobAxes`).
pub const MAX_RANK: usize = 32;

/// NeoML's seven named dimensions, in memory order (Channels varies fastest).
///
/// A blob of rank `r <= 7` is seen through named dims as its shape padded
/// with trailing 1s: `tensor([a, b, c])` has BatchLength = a,
/// BatchWidth = b, ListSize = c and every other named dim 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum BlobDim {
    /// Sequence ("time") axis. Axis 0.
    BatchLength = 0,
    /// Batch axis. Axis 1.
    BatchWidth = 1,
    /// Connected items that do not form a sequence. Axis 2.
    ListSize = 2,
    /// Image height. Axis 3; the first object dim.
    Height = 3,
    /// Image width. Axis 4.
    Width = 4,
    /// Depth of a 3-D image. Axis 5.
    Depth = 5,
    /// Channels. Axis 6, the innermost.
    Channels = 6,
}

impl BlobDim {
    /// Number of named dims.
    pub const COUNT: usize = 7;
    /// Every named dim, in order.
    pub const ALL: [BlobDim; 7] = [
        BlobDim::BatchLength,
        BlobDim::BatchWidth,
        BlobDim::ListSize,
        BlobDim::Height,
        BlobDim::Width,
        BlobDim::Depth,
        BlobDim::Channels,
    ];

    /// The named dim with this index (0..=6), or OutOfRange.
    pub fn from_index(i: i64) -> Result<BlobDim> {
        usize::try_from(i)
            .ok()
            .and_then(|i| BlobDim::ALL.get(i).copied())
            .ok_or_else(|| err!(OutOfRange, "named dim {i} is not in 0..=6"))
    }

    /// The axis index of this dim (0..=6).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The dimensions of a blob. Invariants (checked by every constructor):
/// rank <= 32, and the product of the non-zero dims fits in `i64` —
/// NumPy's rule, the same whatever the order of the dims (`[0, M, M]` and
/// `[M, M, 0]` are both refused when `M * M` does not fit).
#[derive(PartialEq, Eq, Hash)]
pub struct Shape {
    /// Inline up to eight dims (NeoML's seven named dims fit), so cloning
    /// a shape does not allocate.
    dims: SmallVec<[usize; 8]>,
    count: usize,
    /// The product of the non-zero dims (the count, unless a dim is 0).
    extent: usize,
}

impl Clone for Shape {
    /// Inline dims (rank <= 8) are copied as one fixed block: `SmallVec`'s
    /// own clone collects them through an iterator (about 75 instructions
    /// for three dims, on every export and view).
    #[inline]
    fn clone(&self) -> Shape {
        let mut out = std::mem::MaybeUninit::<Shape>::uninit();
        // SAFETY: `out` is valid for a write of a shape, which `clone_to`
        // makes whole.
        unsafe {
            self.clone_to(out.as_mut_ptr());
            out.assume_init()
        }
    }
}

impl Shape {
    /// Clones the shape straight into `dst` (an export being built in its
    /// box): inline dims as one block from this shape to `dst`, with no
    /// stop on the stack.
    ///
    /// # Safety
    /// `dst` is valid for a write of a `Shape`; what it held is
    /// overwritten, not dropped.
    #[inline]
    pub(crate) unsafe fn clone_to(&self, dst: *mut Shape) {
        if self.dims.spilled() {
            // SAFETY: the caller's promise.
            unsafe { dst.write(Shape { dims: self.dims.clone(), count: self.count, extent: self.extent }) };
        } else {
            // SAFETY: the caller's promise; an inline `SmallVec` of `usize`
            // holds no pointer (its elements live in the struct itself), so
            // the bitwise copy of an inline shape is a valid, independent
            // shape.
            unsafe { std::ptr::copy_nonoverlapping(self as *const Shape, dst, 1) };
        }
    }
}

/// The scalar shape: rank 0, one element (what `Shape::new(&[])` gives).
impl Default for Shape {
    fn default() -> Shape {
        Shape { dims: SmallVec::new(), count: 1, extent: 1 }
    }
}

impl fmt::Debug for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.dims)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.dims)
    }
}

impl Shape {
    /// A shape with these dims, or a Shape error when the rank exceeds 32
    /// or the product of the non-zero dims does not fit in `i64` (so an
    /// empty shape obeys the same bound as a full one, as in NumPy).
    #[inline(always)]
    pub fn new(dims: &[usize]) -> Result<Shape> {
        if dims.len() > MAX_RANK {
            return Err(err!(Shape, "rank {} exceeds the maximum of {MAX_RANK}", dims.len()));
        }
        let mut extent: usize = 1;
        for &d in dims.iter().filter(|&&d| d != 0) {
            extent = extent
                .checked_mul(d)
                .filter(|&c| i64::try_from(c).is_ok())
                .ok_or_else(|| err!(Shape, "the dims {dims:?} are too large: the product of the non-zero dims overflows i64"))?;
        }
        let count = if dims.contains(&0) { 0 } else { extent };
        Ok(Shape { dims: SmallVec::from_slice(dims), count, extent })
    }

    /// A shape from signed dims (as C and Python pass them): negative dims
    /// are a Shape error.
    pub fn from_i64(dims: &[i64]) -> Result<Shape> {
        if dims.len() > MAX_RANK {
            return Err(err!(Shape, "rank {} exceeds the maximum of {MAX_RANK}", dims.len()));
        }
        // One pass: each dim is checked, multiplied in and stored (the
        // same checks as [`Shape::new`], which the property test
        // `from_i64_is_new_of_the_dims` holds it to), straight into the
        // inline buffer (`crate::axes::axes_filled`).
        let mut checked = Ok((1, false));
        let v = crate::axes::axes_filled(dims.len(), |out| checked = checked_dims(dims, out));
        let (extent, zero) = checked?;
        Ok(Shape { dims: v, count: if zero { 0 } else { extent }, extent })
    }

    /// The rank-0 shape of a scalar (one element).
    pub fn scalar() -> Shape {
        Shape { dims: SmallVec::new(), count: 1, extent: 1 }
    }

    /// The shape of the dims from axis `from` on (what indexing the
    /// leading axes leaves): no checks to repeat, as its non-zero dims
    /// multiply to at most this shape's extent. `from` past the rank gives
    /// the scalar shape.
    pub(crate) fn suffix(&self, from: usize) -> Shape {
        let dims = self.dims.get(from..).unwrap_or(&[]);
        let (mut extent, mut zero) = (1usize, false);
        for &d in dims {
            if d == 0 {
                zero = true;
            } else {
                extent *= d;
            }
        }
        Shape { dims: SmallVec::from_slice(dims), count: if zero { 0 } else { extent }, extent }
    }

    /// The dims in the order `axes` gives (a permutation of the axes,
    /// checked by the caller; an index past the rank would read as 1): no
    /// checks to repeat, as the count and extent do not change.
    pub(crate) fn permuted(&self, axes: &[usize]) -> Shape {
        let dims = crate::axes::axes_filled(axes.len(), |out| {
            for (slot, &a) in out.iter_mut().zip(axes) {
                *slot = self.dims.get(a).copied().unwrap_or(1);
            }
        });
        Shape { dims, count: self.count, extent: self.extent }
    }

    /// The shape of the first `rank` entries of `dims` (the caller's
    /// stack buffer, which becomes the inline storage whole), none of
    /// them 0, whose product `count` the caller has worked out and knows
    /// to fit (a view's dims, each at most the parent's along a distinct
    /// axis): [`Shape::new`] without the checks.
    #[inline]
    pub(crate) fn inline_of_checked(dims: [usize; 8], rank: usize, count: usize) -> Shape {
        debug_assert!(dims[..rank].iter().all(|&d| d > 0) && Shape::new(&dims[..rank]).map(|s| s.count()).ok() == Some(count));
        Shape { dims: SmallVec::from_buf_and_len(dims, rank), count, extent: count }
    }

    /// The dims, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.dims
    }

    /// Number of axes.
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Number of elements (1 for a scalar, 0 if any dim is 0).
    pub fn count(&self) -> usize {
        self.count
    }

    /// Size in bytes for elements of `dtype`, or a Shape error when it —
    /// counted over the non-zero dims, as NumPy does — does not fit in
    /// `isize`.
    #[inline]
    pub fn byte_size(&self, dtype: DType) -> Result<usize> {
        self.extent
            .checked_mul(dtype.size())
            .filter(|&b| isize::try_from(b).is_ok())
            .ok_or_else(|| err!(Shape, "{self} of {dtype} needs more bytes than isize::MAX"))?;
        Ok(self.count * dtype.size())
    }

    /// The axis `axis` counted from the end when negative (Caffe's
    /// `CanonicalAxisIndex`); OutOfRange unless `-rank <= axis < rank`.
    pub fn canonical_axis(&self, axis: isize) -> Result<usize> {
        let rank = self.rank() as isize;
        if axis < -rank || axis >= rank {
            return Err(err!(
                OutOfRange,
                "axis {axis} is out of range for rank {rank} (valid: {}..{rank})",
                -rank
            ));
        }
        Ok(if axis < 0 { (axis + rank) as usize } else { axis as usize })
    }

    /// [`Shape::canonical_axis`] for each of `axes` (NumPy's `transpose`
    /// axes: negative values count from the end).
    pub fn canonical_axes(&self, axes: &[isize]) -> Result<Vec<usize>> {
        axes.iter().map(|&a| self.canonical_axis(a)).collect()
    }

    /// The size of axis `axis` (negative counts from the end).
    pub fn dim(&self, axis: isize) -> Result<usize> {
        Ok(self.dims[self.canonical_axis(axis)?])
    }

    /// Product of dims in `[start, end)` (Caffe's `count(start, end)`),
    /// 1 for an empty range; OutOfRange unless `0 <= start <= end <= rank`.
    pub fn count_range(&self, start: usize, end: usize) -> Result<usize> {
        if start > end || end > self.rank() {
            return Err(err!(
                OutOfRange,
                "axis range [{start}, {end}) is invalid for rank {}",
                self.rank()
            ));
        }
        Ok(self.dims[start..end].iter().product())
    }

    /// [`Shape::offset`] of leading indices that must name an element
    /// (Caffe's `data_at(index)`): `OutOfRange` for a shape with no
    /// elements, where `offset` still gives the (empty) block's start.
    pub fn element_offset(&self, indices: &[usize]) -> Result<usize> {
        let at = self.offset(indices)?;
        self.check_element(at)?;
        Ok(at)
    }

    /// `OutOfRange` unless row-major position `at` is an element.
    pub(crate) fn check_element(&self, at: usize) -> Result<()> {
        if at >= self.count() {
            return Err(err!(OutOfRange, "the blob of dims {:?} has no elements, so no index names one", self.dims()));
        }
        Ok(())
    }

    /// Row-major element offset of `indices` (Caffe's `offset`): missing
    /// trailing indices count as 0; each index must be in `[0, dim)`.
    pub fn offset(&self, indices: &[usize]) -> Result<usize> {
        if indices.len() > self.rank() {
            return Err(err!(
                OutOfRange,
                "{} indices given for a blob of rank {}",
                indices.len(),
                self.rank()
            ));
        }
        let mut off = 0usize;
        for (axis, &d) in self.dims.iter().enumerate() {
            off *= d;
            if let Some(&i) = indices.get(axis) {
                if i >= d {
                    return Err(err!(OutOfRange, "index {i} at axis {axis} is not below dim {d}"));
                }
                off += i;
            }
        }
        Ok(off)
    }

    /// Caffe's `offset(n, c, h, w)`: `((n * channels + c) * height + h) *
    /// width + w` over the legacy shape (rank <= 4, missing trailing axes
    /// read as 1). Each index must be below its legacy dim (Caffe checks
    /// `<=`; an index equal to the dim is `OutOfRange` here).
    pub fn legacy_offset(&self, n: usize, c: usize, h: usize, w: usize) -> Result<usize> {
        let mut off = 0usize;
        for (k, i) in [n, c, h, w].into_iter().enumerate() {
            let d = self.legacy_shape(k as isize)?;
            if i >= d {
                return Err(err!(OutOfRange, "legacy index {i} at axis {k} is not below its legacy dim {d}"));
            }
            off = off * d + i;
        }
        Ok(off)
    }

    /// Caffe's legacy accessor: rank must be <= 4 and `index` in
    /// `[-4, 4)`; axes beyond the rank read as 1.
    pub fn legacy_shape(&self, index: isize) -> Result<usize> {
        if self.rank() > 4 {
            return Err(err!(
                Shape,
                "legacy num/channels/height/width need rank <= 4, this blob has rank {}",
                self.rank()
            ));
        }
        if !(-4..4).contains(&index) {
            return Err(err!(OutOfRange, "legacy index {index} is not in -4..4"));
        }
        let rank = self.rank() as isize;
        if index >= rank || index < -rank {
            return Ok(1);
        }
        self.dim(index)
    }

    fn require_named(&self, what: &str) -> Result<()> {
        if self.rank() > BlobDim::COUNT {
            return Err(err!(
                Shape,
                "{what} uses the 7 named dims, but this blob has rank {}",
                self.rank()
            ));
        }
        Ok(())
    }

    /// The seven named dims: the shape padded with trailing 1s. A Shape
    /// error for rank > 7.
    pub fn named_dims(&self) -> Result<[usize; 7]> {
        self.require_named("named_dims")?;
        let mut out = [1usize; 7];
        out[..self.rank()].copy_from_slice(&self.dims);
        Ok(out)
    }

    /// The shape a named-dim operation gives when its operand had rank
    /// `rank`: the first `rank` of the 7 named dims when the others are
    /// all 1 (so a vector stays a vector), else all 7.
    pub fn from_named(named: &[usize; 7], rank: usize) -> Result<Shape> {
        let r = rank.min(BlobDim::COUNT);
        if named[r..].iter().all(|&d| d == 1) {
            Shape::new(&named[..r])
        } else {
            Shape::new(named)
        }
    }

    /// NeoML `HasEqualDimensions`: equal when the 7 padded named dims are
    /// equal (so `[2, 3]` equals `[2, 3, 1]`); shapes of rank > 7 compare
    /// their dims exactly.
    pub fn has_equal_dims(&self, other: &Shape) -> bool {
        match (self.named_dims(), other.named_dims()) {
            (Ok(a), Ok(b)) => a == b,
            _ => self.dims == other.dims,
        }
    }

    /// The size of one named dim (1 beyond the rank). A Shape error for rank > 7.
    pub fn named_dim(&self, d: BlobDim) -> Result<usize> {
        Ok(self.named_dims()?[d.index()])
    }

    /// BatchLength * BatchWidth * ListSize. A Shape error for rank > 7.
    pub fn object_count(&self) -> Result<usize> {
        let n = self.named_dims()?;
        Ok(n[0] * n[1] * n[2])
    }

    /// Height * Width * Depth * Channels. A Shape error for rank > 7.
    pub fn object_size(&self) -> Result<usize> {
        let n = self.named_dims()?;
        Ok(n[3] * n[4] * n[5] * n[6])
    }

    /// Height * Width * Depth. A Shape error for rank > 7.
    pub fn geometrical_size(&self) -> Result<usize> {
        let n = self.named_dims()?;
        Ok(n[3] * n[4] * n[5])
    }

    /// This shape with axis `axis` set to `size` (checked like [`Shape::new`]).
    pub fn with_dim(&self, axis: usize, size: usize) -> Result<Shape> {
        let mut dims = self.dims.clone();
        match dims.get_mut(axis) {
            Some(d) => *d = size,
            None => return Err(err!(OutOfRange, "axis {axis} is out of range for rank {}", self.rank())),
        }
        Shape::new(&dims)
    }

    /// The shape with axes `a` and `b` swapped (both must be in range).
    pub fn swapped(&self, a: usize, b: usize) -> Result<Shape> {
        if a >= self.rank() || b >= self.rank() {
            return Err(err!(OutOfRange, "axes ({a}, {b}) out of range for rank {}", self.rank()));
        }
        let mut dims = self.dims.clone();
        dims.swap(a, b);
        Ok(Shape { dims, count: self.count, extent: self.extent })
    }
}

/// Checks signed `dims` and stores them in `out` (as long as `dims`):
/// a negative dim is a Shape error wherever it is (reported before an
/// overflow), and so is a product of the non-zero dims beyond `i64`.
/// Returns that product (the extent) and whether some dim is zero.
#[inline(always)]
fn checked_dims(dims: &[i64], out: &mut [usize]) -> Result<(usize, bool)> {
    let (mut extent, mut zero, mut overflow) = (1usize, false, false);
    for (axis, (slot, &d)) in out.iter_mut().zip(dims).enumerate() {
        let d = usize::try_from(d).map_err(|_| err!(Shape, "dim {d} at axis {axis} is negative"))?;
        if d == 0 {
            zero = true;
        } else {
            match extent.checked_mul(d).filter(|&c| i64::try_from(c).is_ok()) {
                Some(c) => extent = c,
                None => overflow = true,
            }
        }
        *slot = d;
    }
    if overflow {
        return Err(err!(Shape, "the dims {dims:?} are too large: the product of the non-zero dims overflows i64"));
    }
    Ok((extent, zero))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_shape_is_the_scalar_shape() {
        assert_eq!(Shape::default(), Shape::new(&[]).unwrap());
        assert_eq!(Shape::default().count(), 1);
    }

    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 4000, rng_seed: proptest::test_runner::RngSeed::Fixed(33), ..Default::default() })]

        /// What indexing the leading axes leaves is the checked shape of
        /// the trailing dims: dims, count and extent, zeros and huge dims
        /// included (dims up to 2^40, so some shapes are refused first).
        #[test]
        fn suffix_is_the_checked_shape_of_the_trailing_dims(
            dims in proptest::collection::vec(proptest::prop_oneof![0usize..4, 0usize..(1 << 40)], 0..10),
            from in 0usize..11,
        ) {
            if let Ok(s) = Shape::new(&dims) {
                let tail = dims.get(from..).unwrap_or(&[]);
                proptest::prop_assert!(s.suffix(from) == Shape::new(tail).unwrap());
            }
        }

        /// A clone has the original's dims, count and extent, inline
        /// (rank <= 8, copied as one block) or spilled (rank > 8), and
        /// outlives it (dropped first: no shared memory).
        #[test]
        fn a_clone_is_the_shape_it_was_cloned_from(
            dims in proptest::collection::vec(proptest::prop_oneof![0usize..4, 0usize..(1 << 12)], 0..14),
        ) {
            if let Ok(s) = Shape::new(&dims) {
                let c = s.clone();
                drop(s);
                proptest::prop_assert_eq!(c.dims(), &dims[..]);
                let oracle = Shape::new(&dims).unwrap();
                proptest::prop_assert!(c == oracle && c.count() == oracle.count() && c.extent == oracle.extent);
            }
        }

        #[test]
        fn from_i64_is_new_of_the_dims(
            dims in proptest::collection::vec(proptest::prop_oneof![-2i64..4, 0i64..(1 << 40), proptest::num::i64::ANY], 0..12),
        ) {
            // The one-pass conversion agrees with checking the signs, then
            // Shape::new: same shape, or the same error (code and text).
            let oracle = match dims.iter().enumerate().find(|(_, &d)| d < 0) {
                Some((axis, d)) => Err(err!(Shape, "dim {d} at axis {axis} is negative")),
                None => Shape::new(&dims.iter().map(|&d| d as usize).collect::<Vec<_>>()),
            };
            match (Shape::from_i64(&dims), oracle) {
                (Ok(a), Ok(b)) => proptest::prop_assert!(a == b && a.count() == b.count()),
                (Err(a), Err(b)) => proptest::prop_assert_eq!((a.code(), a.to_string()), (b.code(), b.to_string())),
                (a, b) => proptest::prop_assert!(false, "{:?} vs {:?}", a, b),
            }
        }

        /// `element_offset` is the row-major position of the first element
        /// whose leading indices are `index`, found by walking every
        /// element in order (an oracle without the offset formula); with
        /// no such element (an index out of range, too many indices, or an
        /// axis of size 0) it is `OutOfRange`.
        #[test]
        fn element_offset_is_the_first_element_with_those_leading_indices(
            dims in proptest::collection::vec(0usize..4, 0..5),
            index in proptest::collection::vec(0usize..5, 0..6),
        ) {
            let s = Shape::new(&dims).unwrap();
            let mut at = vec![0usize; dims.len()];
            let mut found = None;
            for pos in 0..s.count() {
                if index.len() <= at.len() && at[..index.len()] == index[..] {
                    found = Some(pos);
                    break;
                }
                for axis in (0..at.len()).rev() {
                    at[axis] += 1;
                    if at[axis] < dims[axis] {
                        break;
                    }
                    at[axis] = 0;
                }
            }
            match (s.element_offset(&index), found) {
                (Ok(a), Some(b)) => proptest::prop_assert_eq!(a, b),
                (Err(e), None) => proptest::prop_assert_eq!(e.code(), err!(OutOfRange, "").code()),
                (a, b) => proptest::prop_assert!(false, "{:?} vs {:?}", a, b),
            }
        }
    }

    #[test]
    fn rank_and_overflow_limits() {
        assert!(Shape::new(&[1; 32]).is_ok());
        assert_eq!(Shape::new(&[1; 33]).unwrap_err().code(), 4);
        assert_eq!(Shape::new(&[usize::MAX, 2]).unwrap_err().code(), 4);
        assert_eq!(Shape::new(&[1 << 32, 1 << 31]).unwrap_err().code(), 4);
        assert_eq!(Shape::from_i64(&[2, -1]).unwrap_err().code(), 4);
        let big = Shape::new(&[1 << 62]).unwrap();
        assert_eq!(big.byte_size(DType::F32).unwrap_err().code(), 4);
        assert_eq!(Shape::new(&[]).unwrap().count(), 1);
        assert_eq!(Shape::new(&[0, 5]).unwrap().count(), 0);
    }

    #[test]
    fn caffe_axis_helpers() {
        let s = Shape::new(&[64, 3, 28, 28]).unwrap();
        assert_eq!(s.canonical_axis(-4).unwrap(), 0);
        assert_eq!(s.canonical_axis(3).unwrap(), 3);
        assert_eq!(s.canonical_axis(4).unwrap_err().code(), 6);
        assert_eq!(s.canonical_axis(-5).unwrap_err().code(), 6);
        assert_eq!(s.count_range(1, 3).unwrap(), 84);
        assert_eq!(s.count_range(2, 2).unwrap(), 1);
        assert!(s.count_range(3, 2).is_err());
        assert!(s.count_range(0, 5).is_err());
        assert_eq!(s.offset(&[1, 2, 3, 4]).unwrap(), ((3 + 2) * 28 + 3) * 28 + 4);
        assert_eq!(s.offset(&[1]).unwrap(), 3 * 28 * 28);
        assert_eq!(s.offset(&[1, 3]).unwrap_err().code(), 6);
        assert_eq!(s.offset(&[0, 0, 0, 0, 0]).unwrap_err().code(), 6);
        assert_eq!(s.legacy_shape(1).unwrap(), 3);
        assert_eq!(s.legacy_shape(-1).unwrap(), 28);
        let v = Shape::new(&[10, 5]).unwrap();
        assert_eq!(v.legacy_shape(2).unwrap(), 1);
        assert_eq!(v.legacy_shape(-3).unwrap(), 1);
        assert_eq!(v.legacy_shape(4).unwrap_err().code(), 6);
        assert_eq!(Shape::new(&[1; 5]).unwrap().legacy_shape(0).unwrap_err().code(), 4);
    }

    #[test]
    fn named_dims_fill_leading() {
        let t = Shape::new(&[2, 3, 4]).unwrap();
        assert_eq!(t.named_dims().unwrap(), [2, 3, 4, 1, 1, 1, 1]);
        assert_eq!(t.object_count().unwrap(), 24);
        assert_eq!(t.object_size().unwrap(), 1);
        let img = Shape::new(&[1, 2, 1, 5, 6, 1, 3]).unwrap();
        assert_eq!(img.object_count().unwrap(), 2);
        assert_eq!(img.object_size().unwrap(), 90);
        assert_eq!(img.geometrical_size().unwrap(), 30);
        assert_eq!(img.named_dim(BlobDim::Channels).unwrap(), 3);
        assert_eq!(Shape::new(&[1; 8]).unwrap().object_count().unwrap_err().code(), 4);
        assert_eq!(BlobDim::from_index(7).unwrap_err().code(), 6);
        assert_eq!(BlobDim::from_index(6).unwrap(), BlobDim::Channels);
    }
}
