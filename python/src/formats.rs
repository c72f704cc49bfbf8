//! File formats from Python: module functions that load, and the helpers
//! behind `Blob.save_*` / `Blob.to_*_bytes`. Paths may be `str` or any
//! `os.PathLike`; file I/O and decoding run with the GIL released.

use crate::blob::{engine_of, run, PyBlob, PyEngine};
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

/// Bytes-like input as a slice; `bytes`, `bytearray`, `memoryview` and
/// NumPy uint8 arrays are accepted through the buffer protocol.
fn with_bytes<R>(data: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> PyResult<R>) -> PyResult<R> {
    if let Ok(b) = data.cast::<PyBytes>() {
        return f(b.as_bytes());
    }
    let buf = pyo3::buffer::PyBuffer::<u8>::get(data).map_err(|_| {
        raise("InvalidArgumentError", format!("expected bytes-like data, got {}", data.get_type()))
    })?;
    let v = buf.to_vec(data.py())?;
    f(&v)
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
    let e = engine_of(engine)?;
    with_bytes(data, |b| run(data.py(), false, || Blob::from_caffe_bytes(&e, b)).map(PyBlob::new))
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
    let e = engine_of(engine)?;
    with_bytes(data, |b| run(data.py(), false, || Blob::from_neoml_bytes(&e, b)).map(PyBlob::new))
}

/// Loads a NumPy ``.npy`` file (float32, int32, float64, int64, uint8,
/// int8, float16; either byte order; Fortran order is made row-major).
#[pyfunction]
#[pyo3(signature = (path, engine=None))]
pub fn load_npy(py: Python<'_>, path: PathBuf, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    load(py, path, engine, |e, p| Blob::load_npy(e, p))
}

/// Decodes a ``.npy`` file held in memory.
#[pyfunction]
#[pyo3(signature = (data, engine=None))]
pub fn from_npy_bytes(data: &Bound<'_, PyAny>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    let e = engine_of(engine)?;
    with_bytes(data, |b| run(data.py(), false, || Blob::from_npy_bytes(&e, b)).map(PyBlob::new))
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
