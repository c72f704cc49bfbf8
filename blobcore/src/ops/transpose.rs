//! Transposes and permutations: `numpy.swapaxes` / `numpy.transpose`
//! followed by a contiguous copy. All of them are a permuted view of the
//! source copied by the transposition engine (`ops::strided`),
//! the same engine as every layout reorder.

use crate::blob::Blob;
use crate::error::{err, Result};
use crate::index::Index;
use crate::shape::{BlobDim, Shape};

impl Blob {
    /// NeoML `GetTransposed(d1, d2)`: a new blob with axes `d1` and `d2`
    /// swapped as `numpy.swapaxes` does (the axes between keep their
    /// order), laid out contiguously. Negative axes count from the end.
    pub fn transposed(&self, d1: isize, d2: isize) -> Result<Blob> {
        let shape = self.shape();
        let a = shape.canonical_axis(d1)?;
        let b = shape.canonical_axis(d2)?;
        let mut axes: Vec<usize> = (0..shape.rank()).collect();
        axes.swap(a, b);
        self.permuted_by(&axes)
    }

    /// NeoML `TransposeFrom(src, d1, d2)`: fills this blob with `src` with
    /// axes `d1` and `d2` swapped. This blob's dims must be `src`'s with
    /// those two swapped, and the dtypes equal. The two may share memory
    /// (as if `src` had been copied first).
    pub fn transpose_from(&self, src: &Blob, d1: isize, d2: isize) -> Result<()> {
        if self.dtype() != src.dtype() {
            return Err(err!(DType, "transpose_from: dtypes differ ({} and {}); convert with astype (cast) first", self.dtype(), src.dtype()));
        }
        let s = src.shape();
        let a = s.canonical_axis(d1)?;
        let b = s.canonical_axis(d2)?;
        let want = s.swapped(a, b)?;
        let dims = self.shape();
        if dims != want {
            return Err(err!(
                Shape,
                "transpose_from: swapping axes {a} and {b} of {s} gives {want}, but the destination is {dims}"
            ));
        }
        let mut axes: Vec<usize> = (0..s.rank()).collect();
        axes.swap(a, b);
        self.permute_from_by(src, &axes)
    }

    /// NeoML `GetTransposed(d1, d2)` with named dims: the blob seen
    /// through its 7 padded named dims with `d1` and `d2` swapped, so a
    /// matrix transposes with `Channels` as NeoML does. The result keeps
    /// this blob's rank when the swap leaves the padded dims 1, else has
    /// rank 7 ([`Shape::from_named`]).
    pub fn transposed_dims(&self, d1: BlobDim, d2: BlobDim) -> Result<Blob> {
        let rank = self.rank();
        let out = self.named_view()?.transposed(d1.index() as isize, d2.index() as isize)?;
        let named = out.shape().named_dims()?;
        out.reshape(Shape::from_named(&named, rank)?.dims())?;
        Ok(out)
    }

    /// NeoML `TransposeFrom(src, d1, d2)` with named dims: this blob's 7
    /// padded dims must be `src`'s with `d1` and `d2` swapped.
    pub fn transpose_from_dims(&self, src: &Blob, d1: BlobDim, d2: BlobDim) -> Result<()> {
        self.named_view()?.transpose_from(&src.named_view()?, d1.index() as isize, d2.index() as isize)
    }

    /// The blob seen through its 7 named dims: a view (sharing memory)
    /// with the shape padded with trailing 1s; the blob itself at rank 7.
    /// A Shape error for rank > 7; blocked layouts below rank 7 are
    /// Unsupported.
    pub fn named_view(&self) -> Result<Blob> {
        let rank = self.rank();
        if rank > BlobDim::COUNT {
            return Err(err!(Shape, "named dims need rank <= 7, but this blob has rank {rank}"));
        }
        if rank == BlobDim::COUNT {
            return Ok(self.clone());
        }
        let mut key = vec![Index::Ellipsis];
        key.extend(std::iter::repeat_n(Index::NewAxis, BlobDim::COUNT - rank));
        self.index(&key)
    }

    /// `numpy.transpose(b, axes)` made contiguous: a new dense blob whose
    /// axis `i` is axis `axes[i]` of this one (negative axes count from the
    /// end). `axes` must be a permutation of the axes (`InvalidArgument`
    /// otherwise; `OutOfRange` for an axis past the rank). Any planar
    /// layout (dense, NHWC, strided views) is accepted; blocked layouts are
    /// `Unsupported` (reorder them first).
    pub fn permuted(&self, axes: &[isize]) -> Result<Blob> {
        self.permuted_by(&self.shape().canonical_axes(axes)?)
    }

    fn permuted_by(&self, axes: &[usize]) -> Result<Blob> {
        let view = self.permuted_view(axes)?;
        let out = Blob::new(self.engine(), self.dtype(), view.shape())?;
        out.reorder_from(&view)?;
        Ok(out)
    }

    /// Fills this blob (any layout) with `src` permuted by `axes` (see
    /// [`Blob::permuted`]): this blob's dims must be `src`'s taken in the
    /// order `axes` gives and the dtypes equal. The two may share memory:
    /// the result is as if `src` had been copied first (NumPy's rule).
    pub fn permute_from(&self, src: &Blob, axes: &[isize]) -> Result<()> {
        self.permute_from_by(src, &src.shape().canonical_axes(axes)?)
    }

    fn permute_from_by(&self, src: &Blob, axes: &[usize]) -> Result<()> {
        if self.dtype() != src.dtype() {
            return Err(err!(DType, "permute_from: dtypes differ ({} and {}); convert with astype (cast) first", self.dtype(), src.dtype()));
        }
        let view = src.permuted_view(axes)?;
        if view.dims() != self.dims() {
            return Err(err!(
                Shape,
                "permute_from: permuting {:?} by {axes:?} gives {:?}, but the destination is {:?}",
                src.dims(),
                view.dims(),
                self.dims()
            ));
        }
        self.reorder_from(&view)
    }
}
