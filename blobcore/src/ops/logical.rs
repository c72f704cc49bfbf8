//! Any layout through the dense kernels.
//!
//! The element-wise kernels, reductions, savers and host copies work on
//! dense row-major memory. A blob with any other layout — a strided or
//! reversed view, a region, NHWC, a blocked or padded layout — goes through
//! a dense blob holding its logical values (what `numpy.asarray(view)`
//! shows; for blocked layouts, the logical NCHW values): read through the
//! transposition engine, and for writes copied back the same way (padding
//! is never touched). Results equal those of the dense kernel on
//! `numpy.asarray(view)`.

use crate::blob::{Blob, HostRef};
use crate::engine::cpu::PARALLEL_BYTES;
use crate::error::Result;
use crate::ops::strided::{self, normalise, Axis};
use std::sync::Arc;

impl Blob {
    /// The blob's logical values as a dense row-major blob: this blob
    /// itself (another handle) when it is dense, else a new dense copy made
    /// by the transposition engine (for blocked layouts, the logical
    /// values; padding is left out).
    pub fn to_dense(&self) -> Result<Blob> {
        if self.is_dense() {
            Ok(self.clone())
        } else {
            self.copy()
        }
    }

    /// Shared access to the blob's logical values in row-major order: its
    /// own memory when it is dense, else that of a dense copy (kept alive
    /// by the access).
    pub(crate) fn dense_read(&self) -> Result<HostRef> {
        self.to_dense()?.snapshot().into_read()
    }

    /// Runs the dense kernel `f` on this blob: directly when it is dense;
    /// else on a dense blob holding its values (`fresh` false) or a new
    /// zeroed one (`fresh` true, for kernels that write every element),
    /// copied back into this blob when `f` succeeds. On error nothing
    /// changes.
    pub(crate) fn through_dense<R>(&self, fresh: bool, f: impl FnOnce(&Blob) -> Result<R>) -> Result<R> {
        if self.is_dense() {
            return f(self);
        }
        if !self.is_writable() {
            return Err(crate::error::err!(ReadOnly, "the blob is read-only (it wraps memory lent read-only); copy() gives a writable blob"));
        }
        let tmp = if fresh { self.clone_zeroed()? } else { self.copy()? };
        let r = f(&tmp)?;
        self.copy_from(&tmp)?;
        Ok(r)
    }
}

/// Bytes per piece [`Blob::for_each_chunk`] hands over: large enough that
/// a write call per piece costs nothing, small enough to stay in cache.
const CHUNK_BYTES: usize = 4 << 20;

impl Blob {
    /// Hands the blob's logical values, in row-major order, to `sink` in
    /// pieces of about 4 MiB or less (the savers' path: no copy of the
    /// whole blob). A dense blob hands over its own memory; a strided,
    /// reversed, transposed or planar-layout blob is gathered piece by
    /// piece through the transposition engine under a shared borrow; a
    /// blocked layout is reordered into a dense copy first. An error from
    /// `sink` stops the walk and is returned.
    pub fn for_each_chunk(&self, mut sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let es = self.dtype().size();
        let st = self.state();
        let planar = match &st.desc {
            None => None,
            Some(d) => match d.planar_strides() {
                Some((strides, origin)) => Some((d.span()?, strides, origin)),
                None => {
                    drop(st);
                    return self.to_dense()?.for_each_chunk(sink);
                }
            },
        };
        let Some((span, strides, origin)) = planar else {
            drop(st);
            let r = self.dense_read()?;
            for piece in r.bytes().chunks(CHUNK_BYTES.max(es)) {
                sink(piece)?;
            }
            return Ok(());
        };
        let dims = st.shape.dims().to_vec();
        let (storage, offset) = (Arc::clone(&st.storage), st.offset);
        drop(st);
        if dims.contains(&0) {
            return Ok(());
        }
        let (_borrow, base) = storage.acquire(offset * es, (offset + span) * es, false, false)?;
        // Element 0 of the view; every element is within the borrowed span.
        let first = base.as_ptr() as usize + (offset + origin) * es;
        let mut buf = vec![0u64; CHUNK_BYTES.div_ceil(8)];
        gather(es, &dims, &strides, first, &mut buf, &mut sink)
    }
}

/// Gathers the elements of `dims` at element `strides` from element 0 at
/// address `first` in row-major order, a piece of at most `buf` at a time
/// (split along the leading axis; an axis whose rows are larger than `buf`
/// is walked row by row).
fn gather(es: usize, dims: &[usize], strides: &[isize], first: usize, buf: &mut [u64], sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
    let cap = std::mem::size_of_val(buf);
    let row_bytes = dims.iter().skip(1).product::<usize>() * es;
    if dims.is_empty() || row_bytes > cap {
        let Some((&n, rest)) = dims.split_first() else {
            // Rank 0: one element.
            // SAFETY: `first` is the view's element, inside the borrow.
            let one = unsafe { std::slice::from_raw_parts(first as *const u8, es) };
            return sink(one);
        };
        for i in 0..n {
            gather(es, rest, &strides[1..], first.wrapping_add_signed(i as isize * strides[0] * es as isize), buf, sink)?;
        }
        return Ok(());
    }
    let rows_per = (cap / row_bytes.max(1)).max(1);
    let mut i = 0;
    while i < dims[0] {
        let rows = rows_per.min(dims[0] - i);
        let mut piece = dims.to_vec();
        piece[0] = rows;
        let dst_strides = crate::layout::row_major_strides(&piece, 1);
        let axes: Vec<Axis> = (0..piece.len()).map(|k| Axis { n: piece[k], ds: dst_strides[k], ss: strides[k] }).collect();
        let bytes = rows * row_bytes;
        let src = first.wrapping_add_signed(i as isize * strides[0] * es as isize);
        // SAFETY: every index of the piece is an element of the view (rows
        // i..i+rows of axis 0), inside the shared borrow the caller holds;
        // the destination is `bytes` <= cap bytes of our own u64 buffer
        // (aligned for every element size), reached once per index.
        unsafe { strided::copy(es, &normalise(axes), buf.as_mut_ptr() as *mut u8, src as *const u8, bytes >= PARALLEL_BYTES) };
        // SAFETY: the buffer holds `bytes` initialised bytes.
        sink(unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, bytes) })?;
        i += rows;
    }
    Ok(())
}
