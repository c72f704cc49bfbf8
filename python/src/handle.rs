//! The `bc.Blob` class itself: one core blob per Python object (its
//! methods are in `blob.rs`, which builds on every module of the crate).

use blobcore::Blob;
use pyo3::prelude::*;

/// A blob: an N-d array of one dtype on an engine, with NeoML's seven
/// named dims, Caffe's data/diff and capacity, safe views (windows,
/// slices) and LIFO buffers. ``numpy.asarray(b)`` shares its memory.
#[pyclass(name = "Blob", module = "blobcore", frozen, sequence, freelist = 64)]
pub struct PyBlob {
    pub(crate) b: Blob,
}

impl PyBlob {
    pub(crate) fn new(b: Blob) -> Self {
        PyBlob { b }
    }
}

