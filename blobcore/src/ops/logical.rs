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
use crate::ops::strided;
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
    ///
    /// The memory this blob reaches is held for the calling thread from
    /// the copy in to the copy back ([`crate::storage::Storage::hold`]):
    /// another thread's access to it in between is `Busy`, as against a
    /// dense blob's own operation, instead of landing and being
    /// overwritten by the copy back (two threads filling different objects
    /// of one strided view lost one of the fills).
    pub(crate) fn through_dense<R>(&self, fresh: bool, f: impl FnOnce(&Blob) -> Result<R>) -> Result<R> {
        if self.is_dense() {
            return f(self);
        }
        self.check_writable()?;
        let (storage, start, end) = {
            let st = self.state();
            let es = self.dtype().size();
            (Arc::clone(&st.storage), st.offset * es, (st.offset + st.span()?) * es)
        };
        let _hold = storage.hold(start, end)?;
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
    /// piece through the transposition engine under a shared borrow — on a
    /// helper thread, one piece ahead of `sink`, so that gathering and
    /// writing overlap; a blocked layout is reordered into a dense copy
    /// first. An error from `sink` stops the walk and is returned. While
    /// `sink` runs, a strided blob's memory is borrowed shared: a write to
    /// it from inside `sink` is `Busy`.
    pub fn for_each_chunk(&self, mut sink: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let es = self.dtype().size();
        let st = self.state();
        let planar = match st.desc() {
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
        let mut pieces = Vec::new();
        plan_pieces(es, &dims, &strides, first, &mut pieces);
        if pieces.len() <= 2 {
            let mut buf = vec![0u64; CHUNK_BYTES.div_ceil(8)];
            for p in &pieces {
                // SAFETY: the piece's elements lie in the shared borrow held
                // above; `buf` has room for CHUNK_BYTES.
                let bytes = unsafe { p.gather(es, &mut buf, true) };
                sink(as_bytes(&buf, bytes))?;
            }
            return Ok(());
        }
        // Two buffers: the helper gathers one while `sink` consumes the other.
        std::thread::scope(|scope| {
            let (full_tx, full_rx) = std::sync::mpsc::sync_channel::<(Vec<u64>, usize)>(1);
            let (empty_tx, empty_rx) = std::sync::mpsc::sync_channel::<Vec<u64>>(2);
            for _ in 0..2 {
                // Cannot fail: the receiver is alive and there is room for both.
                let _ = empty_tx.send(vec![0u64; CHUNK_BYTES.div_ceil(8)]);
            }
            let pieces = &pieces;
            scope.spawn(move || {
                for p in pieces {
                    let Ok(mut buf) = empty_rx.recv() else { return };
                    // SAFETY: as above; the borrow outlives this scope.
                    let bytes = unsafe { p.gather(es, &mut buf, false) };
                    if full_tx.send((buf, bytes)).is_err() {
                        return; // the consumer stopped
                    }
                }
            });
            for _ in 0..pieces.len() {
                let (buf, bytes) = full_rx.recv().map_err(|_| crate::error::err!(Internal, "the gathering thread stopped"))?;
                sink(as_bytes(&buf, bytes))?;
                let _ = empty_tx.send(buf);
            }
            Ok(())
        })
    }
}

fn as_bytes(buf: &[u64], bytes: usize) -> &[u8] {
    // SAFETY: `bytes` <= the buffer's size, all of it initialised.
    unsafe { std::slice::from_raw_parts(buf.as_ptr() as *const u8, bytes.min(std::mem::size_of_val(buf))) }
}

/// One piece of a gather: the elements of `dims` at element `strides` from
/// the element at address `first`, in row-major order.
struct Piece {
    first: usize,
    dims: Vec<usize>,
    strides: Vec<isize>,
}

impl Piece {
    /// Copies the piece into `buf` through the transposition engine and
    /// returns its size in bytes.
    ///
    /// # Safety
    /// Every element of the piece must be readable for the whole call and
    /// its size must fit `buf`.
    unsafe fn gather(&self, es: usize, buf: &mut [u64], parallel: bool) -> usize {
        let bytes = self.dims.iter().product::<usize>() * es;
        if self.dims.is_empty() {
            // SAFETY: one readable element at `first`; `buf` holds >= 8 bytes.
            unsafe { std::ptr::copy_nonoverlapping(self.first as *const u8, buf.as_mut_ptr() as *mut u8, es) };
            return es;
        }
        let axes = strided::gather_loops(&self.dims, &self.strides);
        // SAFETY: the caller's promise for the source; the destination is
        // `bytes` <= the buffer's size of our own u64 buffer (aligned for
        // every element size), each element reached once.
        unsafe { strided::copy(es, &axes, buf.as_mut_ptr() as *mut u8, self.first as *const u8, parallel && bytes >= PARALLEL_BYTES) };
        bytes
    }
}

/// Cuts the elements of `dims` (element `strides`, element 0 at `first`)
/// into pieces of at most [`CHUNK_BYTES`] in row-major order: runs of whole
/// rows of the leading axis, or, when one row is larger, each row cut the
/// same way.
fn plan_pieces(es: usize, dims: &[usize], strides: &[isize], first: usize, out: &mut Vec<Piece>) {
    let row_bytes = dims.iter().skip(1).product::<usize>() * es;
    let Some((&n, rest)) = dims.split_first() else {
        out.push(Piece { first, dims: Vec::new(), strides: Vec::new() });
        return;
    };
    let step = |i: usize| first.wrapping_add_signed(i as isize * strides[0] * es as isize);
    if row_bytes > CHUNK_BYTES {
        for i in 0..n {
            plan_pieces(es, rest, &strides[1..], step(i), out);
        }
        return;
    }
    let rows_per = (CHUNK_BYTES / row_bytes.max(1)).max(1);
    let mut i = 0;
    while i < n {
        let rows = rows_per.min(n - i);
        let mut d = dims.to_vec();
        d[0] = rows;
        out.push(Piece { first: step(i), dims: d, strides: strides.to_vec() });
        i += rows;
    }
}
