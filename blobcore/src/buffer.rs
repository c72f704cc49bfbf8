//! Buffers: NeoML's `GetBuffer` / `ReleaseBuffer` with a LIFO-checked
//! stack per blob (for C and Python callers, who get raw memory), and typed
//! guards for Rust callers, whose borrows are checked at run time.

use crate::blob::{mutex, non_negative, Blob, HeldBuffer, HostMut, HostRef};
use crate::dtype::Element;
use crate::error::{err, Result};
use crate::shape::Shape;
use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn};
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

impl Blob {
    /// Elements `[pos, pos + size)` of the raw span checked, and the
    /// region they are (a 1-D run of storage).
    fn range_region(&self, pos: i64, size: i64) -> Result<crate::blob::Region> {
        let pos = non_negative(pos, "buffer position")?;
        let size = non_negative(size, "buffer size")?;
        let st = self.state();
        let (offset, len) = crate::raw::span_of(&st)?;
        if pos.checked_add(size).is_none_or(|end| end > len) {
            let what = if st.is_dense() { "elements" } else { "elements of raw memory" };
            return Err(err!(OutOfRange, "buffer [{pos}, {pos}+{size}) exceeds the blob's {len} {what}"));
        }
        Ok(crate::blob::Region {
            dense: true,
            storage: std::sync::Arc::clone(&st.storage),
            offset: offset + pos,
            shape: Shape::new(&[size])?,
            dtype: self.dtype(),
        })
    }

    /// NeoML `GetBuffer`: a raw pointer to elements `[pos, pos + size)` of
    /// the blob's memory in memory order, pushed on this blob's buffer
    /// stack. For a dense blob these are its elements; for a blob with a
    /// layout (NHWC, blocked, padded) they index its raw span, padding
    /// included ([`Blob::raw_count`]); strided views of another blob
    /// refuse (`Unsupported`). `exchange` = the buffer must hold current
    /// data (always true on the CPU, where the buffer is the memory
    /// itself). While any buffer is held, reallocating the memory is Busy.
    ///
    /// The pointer stays valid until released (the stack keeps the memory
    /// alive). Rust callers should prefer [`Blob::buffer_read`] and [`Blob::buffer_write`].
    pub fn get_buffer(&self, pos: i64, size: i64, exchange: bool) -> Result<NonNull<u8>> {
        let region = self.range_region(pos, size)?;
        // range_region checked both are non-negative.
        let (pos, size) = (pos as usize, region.count());
        // exchange = the holder reads current data (the head may stay
        // Synced); otherwise it will overwrite it (the head moves here).
        let (pin, base) = std::sync::Arc::clone(&region.storage).pin_host(!exchange)?;
        let byte_off = region.offset * self.dtype().size();
        if byte_off + size * self.dtype().size() > region.storage.len() {
            return Err(err!(Internal, "buffer exceeds the blob's memory"));
        }
        // SAFETY: byte_off + size bytes lie inside the allocation (checked above).
        let ptr = unsafe { NonNull::new_unchecked(base.as_ptr().add(byte_off)) };
        mutex(&self.inner.buffers).push(HeldBuffer {
            addr: ptr.as_ptr() as usize,
            pos,
            size,
            pin,
        });
        Ok(ptr)
    }

    /// NeoML `ReleaseBuffer`: `ptr` must be the most recently obtained
    /// buffer still held, or `Error::Lifo` is returned and nothing changes.
    /// `exchange` = what was written must land (the head moves to the host).
    pub fn release_buffer(&self, ptr: *const u8, exchange: bool) -> Result<()> {
        let mut stack = mutex(&self.inner.buffers);
        let addr = ptr as usize;
        match stack.last() {
            None => return Err(err!(Lifo, "no buffer is held on this blob (pointer {ptr:p})")),
            Some(top) if top.addr != addr => {
                let msg = if stack.iter().any(|b| b.addr == addr) {
                    format!(
                        "buffer {ptr:p} is not the most recent; release {:p} (elements [{}, {})) first",
                        top.addr as *const u8,
                        top.pos,
                        top.pos + top.size
                    )
                } else {
                    format!("{ptr:p} is not a buffer held on this blob")
                };
                return Err(err!(Lifo, "{msg}"));
            }
            Some(_) => {}
        }
        let held = stack.pop();
        drop(stack);
        if exchange {
            if let Some(h) = held {
                h.pin.storage().host_write()?;
            }
        }
        Ok(())
    }

    /// Number of buffers currently held through [`Blob::get_buffer`].
    pub fn held_buffers(&self) -> usize {
        mutex(&self.inner.buffers).len()
    }

    /// A read guard over elements `[pos, pos + size)` (NeoML's
    /// `CDnnBlobBuffer` with read access). Read guards may overlap each
    /// other but no write guard, through any handle, window or slice
    /// (`Error::Busy` otherwise). Guards release when dropped, in any order.
    pub fn buffer_read<T: Element>(&self, pos: i64, size: i64) -> Result<ReadGuard<T>> {
        self.check_dtype::<T>()?;
        let region = self.range_region(pos, size)?;
        Ok(ReadGuard { shape: region.shape.dims().to_vec(), host: region.into_read()?, _t: PhantomData })
    }

    /// A write-only guard over elements `[pos, pos + size)`: the old
    /// contents need not be fetched (on the CPU they are there anyway) and
    /// what is written lands. Overlaps no other guard.
    pub fn buffer_write<T: Element>(&self, pos: i64, size: i64) -> Result<WriteGuard<T>> {
        self.check_dtype::<T>()?;
        let region = self.range_region(pos, size)?;
        Ok(WriteGuard { shape: region.shape.dims().to_vec(), host: region.into_write()?, _t: PhantomData })
    }

    /// A read-write guard over elements `[pos, pos + size)`. Overlaps no other guard.
    pub fn buffer_read_write<T: Element>(&self, pos: i64, size: i64) -> Result<WriteGuard<T>> {
        self.buffer_write(pos, size)
    }

    /// Read access to all the data, shaped like the blob.
    pub fn read<T: Element>(&self) -> Result<ReadGuard<T>> {
        self.check_dtype::<T>()?;
        let region = self.snapshot();
        Ok(ReadGuard { shape: region.shape.dims().to_vec(), host: region.into_read()?, _t: PhantomData })
    }

    /// Write access to all the data, shaped like the blob.
    pub fn write<T: Element>(&self) -> Result<WriteGuard<T>> {
        self.check_dtype::<T>()?;
        let region = self.snapshot();
        Ok(WriteGuard { shape: region.shape.dims().to_vec(), host: region.into_write()?, _t: PhantomData })
    }

    /// Read-write access to all the data (same as [`Blob::write`] on the CPU).
    pub fn read_write<T: Element>(&self) -> Result<WriteGuard<T>> {
        self.write::<T>()
    }

    /// An ndarray view of the data: `blob.view::<f32>()?.array()`.
    pub fn view<T: Element>(&self) -> Result<ReadGuard<T>> {
        self.read::<T>()
    }

    /// A mutable ndarray view: `blob.view_mut::<f32>()?.array_mut()`.
    pub fn view_mut<T: Element>(&self) -> Result<WriteGuard<T>> {
        self.read_write::<T>()
    }
}

fn array_of<'a, T>(shape: &[usize], data: &'a [T]) -> ArrayViewD<'a, T> {
    // SAFETY: guards are built with a shape whose element count equals the
    // slice length (Shape's invariant), the pointer is aligned and valid for
    // that many elements, and the dims are row-major (C order) and
    // non-negative.
    unsafe { ArrayViewD::from_shape_ptr(IxDyn(shape), data.as_ptr()) }
}

/// Shared, borrow-checked access to a blob's elements. Derefs to `[T]`;
/// [`ReadGuard::array`] gives an ndarray view tied to the guard.
pub struct ReadGuard<T: Element> {
    host: HostRef,
    shape: Vec<usize>,
    _t: PhantomData<T>,
}

impl<T: Element> ReadGuard<T> {
    /// The guard's shape (the blob's for whole-blob guards, `[size]` for ranges).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// An ndarray view of the elements.
    pub fn array(&self) -> ArrayViewD<'_, T> {
        array_of(&self.shape, self.host.typed::<T>())
    }
}

impl<T: Element> Deref for ReadGuard<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.host.typed::<T>()
    }
}

/// Exclusive, borrow-checked access to a blob's elements. Derefs to
/// `[T]` and `&mut [T]`; [`WriteGuard::array_mut`] gives a mutable ndarray view.
pub struct WriteGuard<T: Element> {
    host: HostMut,
    shape: Vec<usize>,
    _t: PhantomData<T>,
}

impl<T: Element> WriteGuard<T> {
    /// The guard's shape (the blob's for whole-blob guards, `[size]` for ranges).
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// An ndarray view of the elements.
    pub fn array(&self) -> ArrayViewD<'_, T> {
        array_of(&self.shape, self.host.typed::<T>())
    }

    /// A mutable ndarray view of the elements.
    pub fn array_mut(&mut self) -> ArrayViewMutD<'_, T> {
        let data = self.host.typed_mut::<T>();
        // SAFETY: as in `array_of`, and the slice is exclusively ours.
        unsafe { ArrayViewMutD::from_shape_ptr(IxDyn(&self.shape), data.as_mut_ptr()) }
    }
}

impl<T: Element> Deref for WriteGuard<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.host.typed::<T>()
    }
}

impl<T: Element> DerefMut for WriteGuard<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.host.typed_mut::<T>()
    }
}

impl<T: Element> std::fmt::Debug for ReadGuard<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadGuard").field("shape", &self.shape).finish()
    }
}

impl<T: Element> std::fmt::Debug for WriteGuard<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteGuard").field("shape", &self.shape).finish()
    }
}
