//! Copies: between blobs, to and from host memory, and to and from ndarray.

use crate::blob::{Blob, SMALL_BYTES};
use crate::dtype::{DType, Element};
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::engine::cpu::PARALLEL_BYTES;
use crate::ops::strided;
use crate::ops::{dst_src, gpu, par_copy, same_shape};
use crate::overlap::Footprint;
use crate::shape::Shape;
use ndarray::{ArrayBase, ArrayD, Data, Dimension, IxDyn};

impl Blob {
    /// NeoML `CopyFrom(other)`: copies `src`'s data into this blob. Dims and
    /// dtypes must be equal. Copying a blob onto itself does nothing; when
    /// the two share memory otherwise (views of one blob, or the same
    /// memory wrapped through NumPy, DLPack or C), the result is as if
    /// `src` had been copied first, as in NumPy.
    pub fn copy_from(&self, src: &Blob) -> Result<()> {
        if self.dtype() != src.dtype() {
            return Err(err!(DType, "copy_from: dtypes differ ({} and {}); convert with astype (cast) first", self.dtype(), src.dtype()));
        }
        if !self.is_dense() || !src.is_dense() {
            // Any layout on either side: a reorder does the copy.
            return self.reorder_from(src);
        }
        let d = self.snapshot();
        let mut s = src.snapshot();
        same_shape("copy_from", &d, &s)?;
        // Dense regions: their bounds are exactly their bytes.
        if d.same_memory(&s) {
            return Ok(());
        }
        let copied;
        let src = if !d.apart(&s) {
            copied = src.copy()?;
            s = copied.snapshot();
            // Another thread may have reshaped `src` since the check.
            same_shape("copy_from", &d, &s)?;
            &copied
        } else {
            src
        };
        if let Some(g) = gpu::common_gpu(&[self, src]) {
            let n = d.count();
            let one = gpu::Strided { dims: vec![n], dst_off: d.offset, dst_strides: vec![1], src_off: s.offset, src_strides: vec![1] };
            if gpu::copies(&g, d.clone(), s.clone(), &[one])? {
                return Ok(());
            }
        }
        let (mut w, r) = dst_src(&d, &s, "copy_from")?;
        par_copy(w.bytes_mut(), r.bytes());
        Ok(())
    }

    /// Caffe `CopyFrom(source, copy_diff, reshape)`: copies the data (or,
    /// with `copy_diff`, the diff into this blob's diff). When the dims
    /// differ, `reshape` reshapes this blob like `src` first; without it the
    /// copy is a Shape error.
    pub fn copy_from_caffe(&self, src: &Blob, copy_diff: bool, reshape: bool) -> Result<()> {
        if self.dtype() != src.dtype() {
            return Err(err!(DType, "copy_from: dtypes differ ({} and {}); convert with astype (cast) first", self.dtype(), src.dtype()));
        }
        if self.dims() != src.dims() {
            if !reshape {
                return Err(err!(
                    Shape,
                    "copy_from: dims differ ({:?} and {:?}) and reshape is false",
                    self.dims(),
                    src.dims()
                ));
            }
            self.reshape(&src.dims())?;
        }
        if copy_diff {
            self.diff()?.copy_from(&src.diff()?)
        } else {
            self.copy_from(src)
        }
    }

    /// NeoML `GetCopy`: an independent blob with the same dims, dtype,
    /// engine and data.
    pub fn copy(&self) -> Result<Blob> {
        if self.is_small() {
            // A few bytes: copied into a new storage under the blob's own
            // storage lock, without the overlap analysis and borrows of
            // `copy_from` (None: not dense after all).
            if let Some(out) = self.small_dense_copy()? {
                return Ok(out);
            }
            if let Some(out) = self.small_strided_copy()? {
                return Ok(out);
            }
        }
        let out = self.clone_zeroed()?;
        out.copy_from(self)?;
        Ok(out)
    }

    /// A copy of a small strided view (`b.T`, `b[::2, 1]`) made in one
    /// step: its elements are gathered under its storage lock straight
    /// into a new dense storage, without the reorder planner's descs and
    /// borrows (`None` for other layouts, large or empty views:
    /// [`Blob::copy`] takes the general path).
    fn small_strided_copy(&self) -> Result<Option<Blob>> {
        let st = self.state();
        let Some((strides, origin, span)) = st.placement.plain_strides(st.shape.dims()) else {
            return Ok(None);
        };
        let es = self.dtype().size();
        let (count, dims) = (st.shape.count(), st.shape.dims());
        let len = count * es;
        if len > SMALL_BYTES || count == 0 {
            return Ok(None);
        }
        // The view's span was checked against its storage when it was made.
        let start = st.offset * es;
        let (from, end) = (start + origin * es, start + span * es);
        let axes = strided::gather_loops(dims, &strides);
        // SAFETY: `len` is the shape's size in bytes; every index of the
        // axes is a logical index of the view, whose elements lie in
        // `[start, end)` from the storage's base (element 0 at `from`), and
        // row-major strides over the new bytes reach each of them once.
        let out = unsafe {
            self.copy_locked(st, start, end, len, |base, dst| strided::copy(es, &axes, dst, base.add(from), false))
        };
        out.map(Some)
    }

    /// NeoML `GetClone`: a new blob with the same dims, dtype and engine,
    /// reading as zeros (nothing is allocated until touched).
    pub fn clone_zeroed(&self) -> Result<Blob> {
        self.clone_as(self.dtype())
    }

    /// NeoML `GetClone(type)`: like [`Blob::clone_zeroed`] with another dtype.
    pub fn clone_as(&self, dtype: DType) -> Result<Blob> {
        Blob::new(self.engine(), dtype, self.shape())
    }

    /// Copies `src` into the blob; its length must equal the element count.
    pub fn copy_from_slice<T: Element>(&self, src: &[T]) -> Result<()> {
        self.check_dtype::<T>()?;
        if !self.is_dense() {
            return self.through_dense(true, |d| d.copy_from_slice(src));
        }
        let mut w = self.snapshot().into_write()?;
        let dst = w.typed_mut::<T>();
        if dst.len() != src.len() {
            return Err(err!(
                InvalidArgument,
                "copy_from_slice: {} elements given for a blob of {}",
                src.len(),
                dst.len()
            ));
        }
        dst.copy_from_slice(src);
        Ok(())
    }

    /// Copies the data into `dst`; its length must equal the element count.
    pub fn copy_to_slice<T: Element>(&self, dst: &mut [T]) -> Result<()> {
        self.check_dtype::<T>()?;
        let r = self.dense_read()?;
        let src = r.typed::<T>();
        if dst.len() != src.len() {
            return Err(err!(
                InvalidArgument,
                "copy_to_slice: room for {} elements given for a blob of {}",
                dst.len(),
                src.len()
            ));
        }
        dst.copy_from_slice(src);
        Ok(())
    }

    /// NeoML `CopyTo(dst, size)`: copies the first `dst.len()` elements
    /// (row-major) into `dst`. `T` must be the blob's dtype (`DType`
    /// error); more room than the blob has elements is `InvalidArgument`.
    pub fn copy_to_prefix<T: Element>(&self, dst: &mut [T]) -> Result<()> {
        let n = self.prefix_elements(T::DTYPE, std::mem::size_of_val(dst), "copy_to")?;
        let r = self.dense_read()?;
        dst.copy_from_slice(&r.typed::<T>()[..n]);
        Ok(())
    }

    /// Copies `src` into the first `src.len()` elements (row-major),
    /// leaving the rest as it was; with `src.len()` equal to the element
    /// count this is NeoML's `CopyFrom(const T*)`. `T` must be the blob's
    /// dtype; more elements than the blob has are `InvalidArgument`.
    pub fn copy_from_prefix<T: Element>(&self, src: &[T]) -> Result<()> {
        let n = self.prefix_elements(T::DTYPE, std::mem::size_of_val(src), "copy_from")?;
        if !self.is_dense() {
            return self.through_dense(false, |d| d.copy_from_prefix(src));
        }
        let mut w = self.snapshot().into_write()?;
        w.typed_mut::<T>()[..n].copy_from_slice(src);
        Ok(())
    }

    /// [`Blob::copy_to_prefix`] for callers that name the dtype at run
    /// time: `dst` holds whole elements of `dtype`, which must be the blob's.
    pub fn copy_to_prefix_bytes(&self, dtype: DType, dst: &mut [u8]) -> Result<()> {
        // SAFETY: a &mut slice is valid for its length of writable bytes.
        unsafe { self.copy_to_prefix_ptr(dtype, dst.as_mut_ptr(), dst.len()) }
    }

    /// [`Blob::copy_from_prefix`] with the dtype named at run time.
    pub fn copy_from_prefix_bytes(&self, dtype: DType, src: &[u8]) -> Result<()> {
        // SAFETY: a slice is valid for its length of readable bytes.
        unsafe { self.copy_from_prefix_ptr(dtype, src.as_ptr(), src.len()) }
    }

    /// [`Blob::copy_to_prefix_bytes`] for foreign memory (the C and Python
    /// faces): `len` bytes at `dst`, which may even be this blob's own
    /// memory (the copy is a `memmove`).
    ///
    /// # Safety
    /// `dst` must be valid for `len` writable bytes for the whole call
    /// (it may be dangling when `len` is 0).
    pub unsafe fn copy_to_prefix_ptr(&self, dtype: DType, dst: *mut u8, len: usize) -> Result<()> {
        let n = self.prefix_elements(dtype, len, "copy_to")?;
        if n == 0 {
            return Ok(());
        }
        let r = self.dense_read()?;
        let src = r.bytes()[..n * dtype.size()].as_ptr();
        // SAFETY: `src` is `n` elements of the read-pinned blob, `dst` has
        // room for them (the caller's promise, `len` >= n * size); the two
        // may overlap, which `ptr::copy` (memmove) allows.
        unsafe { std::ptr::copy(src, dst, n * dtype.size()) };
        Ok(())
    }

    /// [`Blob::copy_from_prefix_bytes`] for foreign memory, which may be
    /// this blob's own (the copy is a `memmove`).
    ///
    /// # Safety
    /// `src` must be valid for `len` readable bytes for the whole call
    /// (it may be dangling when `len` is 0).
    pub unsafe fn copy_from_prefix_ptr(&self, dtype: DType, src: *const u8, len: usize) -> Result<()> {
        let n = self.prefix_elements(dtype, len, "copy_from")?;
        if n == 0 {
            return Ok(());
        }
        if !self.is_dense() {
            // SAFETY: forwarded from this function's contract.
            return self.through_dense(false, |d| unsafe { d.copy_from_prefix_ptr(dtype, src, len) });
        }
        let mut w = self.snapshot().into_write()?;
        let dst = w.bytes_mut()[..n * dtype.size()].as_mut_ptr();
        // SAFETY: `dst` is the first `n` elements of the write-pinned blob,
        // `src` holds `len` >= n * size readable bytes (the caller's
        // promise); overlap is allowed by `ptr::copy` (memmove).
        unsafe { std::ptr::copy(src, dst, n * dtype.size()) };
        Ok(())
    }

    /// The number of `dtype` elements in `bytes`, checked against the
    /// blob's dtype and element count.
    fn prefix_elements(&self, dtype: DType, bytes: usize, op: &str) -> Result<usize> {
        if dtype != self.dtype() {
            return Err(err!(DType, "{op}: the blob holds {} but {dtype} was given", self.dtype()));
        }
        let es = dtype.size();
        if !bytes.is_multiple_of(es) {
            return Err(err!(InvalidArgument, "{op}: {bytes} bytes are not whole {dtype} elements"));
        }
        let n = bytes / es;
        if n > self.count() {
            return Err(err!(
                InvalidArgument,
                "{op}: {n} elements given but the blob has only {}",
                self.count()
            ));
        }
        Ok(n)
    }

    /// Whether data of `dims` may be copied into this blob element for
    /// element: the same dims, or a flat sequence of exactly this blob's
    /// element count (NeoML's `CopyFrom(const T*)`). Anything else is a
    /// `Shape` error, even with the same element count (a [3, 2] array
    /// is not a [2, 3] blob); NumPy-style broadcasting is `b[...] = value`.
    pub fn check_source_dims(&self, dims: &[usize]) -> Result<()> {
        let own = self.dims();
        let count = self.count();
        let flat = dims.len() == 1 && dims[0] == count;
        if dims == own.as_slice() || flat {
            return Ok(());
        }
        Err(err!(
            Shape,
            "copy_from: the source has dims {dims:?} but the blob has {own:?}; give the same dims or a flat sequence of {count} elements"
        ))
    }

    /// [`Blob::copy_from_bytes`] from foreign memory (the C and Python
    /// faces), which may be this blob's own memory reached another way
    /// (`blob_raw`, `numpy.asarray`): the result is as if the source had
    /// been copied first.
    ///
    /// # Safety
    /// `src` must be valid for `len` readable bytes for the whole call (it
    /// may be dangling when `len` is 0).
    pub unsafe fn copy_from_host_ptr(&self, src: *const u8, len: usize) -> Result<()> {
        if len == 0 {
            return self.copy_from_bytes(&[]);
        }
        let theirs = Footprint::foreign(src as usize, 1, &[len], &[1]);
        // SAFETY: the caller promises `len` readable bytes at `src`.
        let bytes = unsafe { std::slice::from_raw_parts(src, len) };
        if theirs.may_overlap(&self.footprint()) {
            // A private copy first: the source overlaps the destination.
            let copy: Vec<u8> = bytes.to_vec();
            return self.copy_from_bytes(&copy);
        }
        self.copy_from_bytes(bytes)
    }

    /// Copies raw bytes (native endianness) into the blob; the length must
    /// equal the blob's byte size exactly.
    pub fn copy_from_bytes(&self, src: &[u8]) -> Result<()> {
        // Checked before the memory is touched (and allocated).
        if src.len() != self.byte_size() {
            return Err(err!(InvalidArgument, "{} bytes given for a blob of {} bytes", src.len(), self.byte_size()));
        }
        if !self.is_dense() {
            return self.through_dense(true, |d| d.copy_from_bytes(src));
        }
        // A few bytes are copied under the storage lock, larger ones under
        // a registered borrow (see `with_write`).
        self.with_write(|w| {
            let dst = w.bytes_mut();
            if dst.len() != src.len() {
                return Err(err!(
                    InvalidArgument,
                    "{} bytes given for a blob of {} bytes",
                    src.len(),
                    dst.len()
                ));
            }
            par_copy(dst, src);
            Ok(())
        })?
    }

    /// Copies elements from strided host memory (a DLPack tensor, a NumPy
    /// array) into the blob, in row-major order of the blob's dims.
    /// `strides` are in elements, one per axis (negative allowed). With an
    /// element-aligned source this is the transposition engine's copy
    /// (tiled, vectorised, all cores); else row by row.
    ///
    /// The source may be this blob's own memory reached another way: the
    /// result is as if it had been copied first.
    ///
    /// # Safety
    /// For every index `i` within the blob's dims, the element at
    /// `src + sum(i[k] * strides[k]) * element_size` must be readable for
    /// the whole call.
    pub unsafe fn copy_from_strided(&self, src: *const u8, strides: &[isize]) -> Result<()> {
        let dims = self.dims();
        if strides.len() != dims.len() {
            return Err(err!(Shape, "{} strides given for a blob of rank {}", strides.len(), dims.len()));
        }
        let es = self.dtype().size();
        if !self.is_dense() {
            // SAFETY: forwarded from this function's contract.
            return self.through_dense(true, |d| unsafe { d.copy_from_strided(src, strides) });
        }
        if Footprint::foreign(src as usize, es, &dims, strides).may_overlap(&self.footprint()) {
            // Read the source into fresh memory first, then copy that.
            let tmp = Blob::new(self.engine(), self.dtype(), self.shape())?;
            // SAFETY: forwarded contract; `tmp` is new memory nobody else reaches.
            unsafe { tmp.copy_from_strided(src, strides)? };
            return self.copy_from(&tmp);
        }
        let mut w = self.snapshot().into_write()?;
        let dst = w.bytes_mut();
        if dst.is_empty() {
            return Ok(());
        }
        let rank = dims.len();
        if rank == 0 {
            // SAFETY: the caller promises one readable element at src.
            unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), es) };
            return Ok(());
        }
        if (src as usize).is_multiple_of(es) {
            // The transposition engine: the blob's row-major loops against
            // the source's strides (either sign, element-aligned source).
            let axes = strided::gather_loops(&dims, strides);
            let parallel = dst.len() >= PARALLEL_BYTES;
            // SAFETY: every index within the dims is readable at src by the
            // caller's contract and writable in `dst` (the blob's row-major
            // bytes, borrowed exclusively above); row-major strides give
            // distinct elements; both sides are element-aligned; the source
            // is the caller's memory, not this blob's borrowed bytes.
            unsafe { strided::copy(es, &axes, dst.as_mut_ptr(), src, parallel) };
            return Ok(());
        }
        // A misaligned source: row by row.
        let inner = dims[rank - 1];
        let inner_stride = strides[rank - 1];
        let mut idx = vec![0usize; rank - 1];
        for row in dst.chunks_exact_mut(inner * es) {
            let off: isize = idx.iter().zip(strides).map(|(&i, &s)| i as isize * s).sum();
            // SAFETY: (idx, 0) is an index within the dims, readable by contract.
            let start = unsafe { src.offset(off * es as isize) };
            if inner_stride == 1 {
                // SAFETY: the run of `inner` elements from start is readable by contract.
                unsafe { std::ptr::copy_nonoverlapping(start, row.as_mut_ptr(), inner * es) };
            } else {
                for (j, d) in row.chunks_exact_mut(es).enumerate() {
                    // SAFETY: (idx, j) is within the dims, readable by contract.
                    unsafe { std::ptr::copy_nonoverlapping(start.offset(j as isize * inner_stride * es as isize), d.as_mut_ptr(), es) };
                }
            }
            for a in (0..rank - 1).rev() {
                idx[a] += 1;
                if idx[a] < dims[a] {
                    break;
                }
                idx[a] = 0;
            }
        }
        Ok(())
    }

    /// Copies the data out as raw bytes; the length must equal the blob's
    /// byte size exactly.
    pub fn copy_to_bytes(&self, dst: &mut [u8]) -> Result<()> {
        let r = self.dense_read()?;
        let src = r.bytes();
        if dst.len() != src.len() {
            return Err(err!(
                InvalidArgument,
                "room for {} bytes given for a blob of {} bytes",
                dst.len(),
                src.len()
            ));
        }
        par_copy(dst, src);
        Ok(())
    }

    /// The data as a `Vec` (row-major).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        self.check_dtype::<T>()?;
        Ok(self.dense_read()?.typed::<T>().to_vec())
    }

    /// The data copied into an owned ndarray of the blob's shape.
    pub fn to_array<T: Element>(&self) -> Result<ArrayD<T>> {
        let dims = self.dims();
        let v = self.to_vec::<T>()?;
        ArrayD::from_shape_vec(IxDyn(&dims), v).map_err(|e| err!(Internal, "to_array: {e}"))
    }

    /// A CPU blob holding a copy of `array` (any memory order; the blob is row-major).
    pub fn from_array<T: Element, S: Data<Elem = T>, D: Dimension>(array: ArrayBase<S, D>) -> Result<Blob> {
        let shape = Shape::new(array.shape())?;
        let b = Blob::new(&Engine::cpu(), T::DTYPE, shape)?;
        {
            let mut w = b.write::<T>()?;
            w.array_mut().assign(&array.view().into_dyn());
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Blob, DType, Engine};

    #[test]
    fn copy_sources_have_the_blobs_dims_or_are_flat() {
        let b = Blob::tensor(&Engine::cpu(), DType::F32, &[2, 3]).unwrap();
        assert!(b.check_source_dims(&[2, 3]).is_ok());
        assert!(b.check_source_dims(&[6]).is_ok());
        for bad in [&[3, 2][..], &[1, 6], &[6, 1], &[5], &[]] {
            assert_eq!(b.check_source_dims(bad).unwrap_err().code(), 4, "{bad:?}");
        }
        let s = Blob::tensor(&Engine::cpu(), DType::F32, &[]).unwrap();
        assert!(s.check_source_dims(&[]).is_ok() && s.check_source_dims(&[1]).is_ok());
    }
}
