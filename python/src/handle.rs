//! The `bc.Blob` class itself: one core blob per Python object (its
//! methods are in `blob.rs`, which builds on every module of the crate).

use blobcore::Blob;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

/// A blob: an N-d array of one dtype on an engine, with NeoML's seven
/// named dims, Caffe's data/diff and capacity, safe views (windows,
/// slices) and LIFO buffers. ``numpy.asarray(b)`` shares its memory.
// No pyo3 freelist: its mutex cost more per view (`b[0]`, `b.T`) than
// CPython's own allocator saves (measured in session 27).
#[pyclass(name = "Blob", module = "blobcore", frozen, sequence)]
pub struct PyBlob {
    pub(crate) b: Blob,
    /// The last `b.shape` tuple handed out and the core generation it was
    /// built at (see `Blob::generation`); NULL before the first.
    shape_tuple: AtomicPtr<ffi::PyObject>,
    shape_generation: AtomicU64,
}

impl PyBlob {
    pub(crate) fn new(b: Blob) -> Self {
        PyBlob { b, shape_tuple: AtomicPtr::new(std::ptr::null_mut()), shape_generation: AtomicU64::new(0) }
    }

    /// The dims as a tuple: the cached one while the blob's generation
    /// is the one it was built at, else a new one (cached in turn).
    pub(crate) fn shape_tuple<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        // The cache is touched only with the GIL held (this is a getter,
        // and the module is built for GIL-enabled CPython: abi3), so the
        // load/incref below cannot interleave with another thread's swap.
        let generation = self.b.generation();
        let cached = self.shape_tuple.load(Ordering::Acquire);
        if !cached.is_null() && self.shape_generation.load(Ordering::Acquire) == generation {
            // SAFETY: the cache owns one reference to a live tuple; this
            // adds one for the caller (GIL held, see above).
            return Ok(unsafe { Bound::from_borrowed_ptr(py, cached).cast_into_unchecked() });
        }
        // The dims are copied out under the state lock (inline, no
        // allocation); the tuple is built after it is released.
        let t = PyTuple::new(py, self.b.shape().dims())?;
        let old = self.shape_tuple.swap(t.clone().into_ptr(), Ordering::AcqRel);
        self.shape_generation.store(generation, Ordering::Release);
        if !old.is_null() {
            // SAFETY: the reference the cache held; a tuple of ints runs no
            // Python code when freed.
            unsafe { ffi::Py_DecRef(old) };
        }
        Ok(t)
    }
}

impl Drop for PyBlob {
    fn drop(&mut self) {
        let p = *self.shape_tuple.get_mut();
        if !p.is_null() {
            // The cache's reference, given back through pyo3 (which defers
            // it if this thread is not attached to the interpreter).
            // SAFETY: `p` is an owned reference to a tuple.
            Python::attach(|py| drop(unsafe { Bound::from_owned_ptr(py, p) }));
        }
    }
}
