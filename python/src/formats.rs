//! File formats from Python: module functions that load, and the helpers
//! behind `Blob.save_*` / `Blob.to_*_bytes`. Paths may be `str` or any
//! `os.PathLike`; file I/O and decoding run with the GIL released.

use crate::engine::{engine_of, PyEngine};
use crate::gil::run;
use crate::handle::PyBlob;
use crate::errors::raise;
use blobcore::{Blob, Engine};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;

type Loader = fn(&Engine, &std::path::Path) -> blobcore::Result<Blob>;

fn load(py: Python<'_>, path: PathBuf, engine: Option<PyRef<'_, PyEngine>>, f: Loader) -> PyResult<PyBlob> {
    let e = engine_of(engine)?;
    run(py, false, move || f(&e, &path)).map(PyBlob::new)
}

type Decoder = fn(&Engine, &[u8]) -> blobcore::Result<Blob>;

/// Decodes bytes-like input (``bytes``, ``bytearray``, ``memoryview``,
/// NumPy uint8 arrays: the buffer protocol) without the GIL.
fn decode(data: &Bound<'_, PyAny>, engine: Option<PyRef<'_, PyEngine>>, f: Decoder) -> PyResult<PyBlob> {
    let e = engine_of(engine)?;
    let copied;
    let bytes = match data.cast::<PyBytes>() {
        Ok(b) => b.as_bytes(),
        Err(_) => {
            let buf = pyo3::buffer::PyBuffer::<u8>::get(data).map_err(|_| {
                raise("InvalidArgumentError", format!("expected bytes-like data, got {}", data.get_type()))
            })?;
            copied = buf.to_vec(data.py())?;
            &copied[..]
        }
    };
    run(data.py(), false, || f(&e, bytes)).map(PyBlob::new)
}

/// Loads a Caffe BlobProto file (``.binaryproto``) as a new float32 blob
/// (float64 when the file holds ``double_data``), with its diff when the
/// file has one. Legacy num/channels/height/width files give 4-D blobs.
#[pyfunction]
#[pyo3(signature = (path, engine=None))]
pub fn load_caffe(py: Python<'_>, path: PathBuf, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    load(py, path, engine, |e, p| Blob::load_caffe(e, p))
}

/// Loads a Caffe BlobProtoVector file as a list of blobs.
#[pyfunction]
#[pyo3(signature = (path, engine=None))]
pub fn load_caffe_vector(py: Python<'_>, path: PathBuf, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Vec<PyBlob>> {
    let e = engine_of(engine)?;
    let v = run(py, false, move || Blob::load_caffe_vector(&e, &path))?;
    Ok(v.into_iter().map(PyBlob::new).collect())
}

/// Saves float32/float64 blobs as a Caffe BlobProtoVector file.
#[pyfunction]
#[pyo3(signature = (path, blobs, write_diff=false))]
pub fn save_caffe_vector(py: Python<'_>, path: PathBuf, blobs: Vec<PyRef<'_, PyBlob>>, write_diff: bool) -> PyResult<()> {
    let list: Vec<Blob> = blobs.iter().map(|b| b.b.clone()).collect();
    run(py, false, move || {
        let refs: Vec<&Blob> = list.iter().collect();
        Blob::save_caffe_vector(&refs, &path, write_diff)
    })
}

/// Decodes a serialized Caffe BlobProto (``bytes`` or any bytes-like).
#[pyfunction]
#[pyo3(signature = (data, engine=None))]
pub fn from_caffe_bytes(data: &Bound<'_, PyAny>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    decode(data, engine, Blob::from_caffe_bytes)
}

/// Loads a NeoML blob archive as a rank-7 float32 or int32 blob.
#[pyfunction]
#[pyo3(signature = (path, engine=None))]
pub fn load_neoml(py: Python<'_>, path: PathBuf, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    load(py, path, engine, |e, p| Blob::load_neoml(e, p))
}

/// Decodes a NeoML blob archive held in memory.
#[pyfunction]
#[pyo3(signature = (data, engine=None))]
pub fn from_neoml_bytes(data: &Bound<'_, PyAny>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    decode(data, engine, Blob::from_neoml_bytes)
}

/// Loads a NumPy ``.npy`` file (float32, int32, float64, int64, uint8,
/// int8, float16; either byte order; Fortran order is made row-major).
/// ``mmap_mode`` as ``numpy.load``: None reads into fresh memory; "r"
/// maps the file read-only (the blob is read-only), "r+" maps it shared
/// (writes go to the file), "c" copy-on-write (writes stay private). A
/// map costs O(1) and lives while any blob, view or export uses it;
/// Fortran-order and other-endian files are converted, so not mapped.
#[pyfunction]
#[pyo3(signature = (path, engine=None, mmap_mode=None))]
pub fn load_npy(py: Python<'_>, path: PathBuf, engine: Option<PyRef<'_, PyEngine>>, mmap_mode: Option<&str>) -> PyResult<PyBlob> {
    match mmap_mode {
        None => load(py, path, engine, |e, p| Blob::load_npy(e, p)),
        Some(m) => {
            let mode = crate::errors::core(blobcore::mapped::MapMode::from_name(m))?;
            let e = engine_of(engine)?;
            run(py, false, move || Blob::load_npy_mapped(&e, &path, mode)).map(PyBlob::new)
        }
    }
}

/// Decodes a ``.npy`` file held in memory.
#[pyfunction]
#[pyo3(signature = (data, engine=None))]
pub fn from_npy_bytes(data: &Bound<'_, PyAny>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    decode(data, engine, Blob::from_npy_bytes)
}

/// Runs an encoder without the GIL and returns its output as ``bytes``.
pub(crate) fn to_bytes<'py>(
    py: Python<'py>,
    b: &Blob,
    f: impl FnOnce(&Blob) -> blobcore::Result<Vec<u8>> + Send,
) -> PyResult<Bound<'py, PyBytes>> {
    let v = run(py, b.is_small(), || f(b))?;
    Ok(PyBytes::new(py, &v))
}

/// Runs a file operation (save, load into) without the GIL.
pub(crate) fn file_op(py: Python<'_>, b: &Blob, f: impl FnOnce(&Blob) -> blobcore::Result<()> + Send) -> PyResult<()> {
    run(py, false, || f(b))
}
