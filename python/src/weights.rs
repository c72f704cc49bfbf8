//! Weight files from Python: safetensors and Caffe `.caffemodel`, as plain
//! dicts of blobs. The formats, the memory maps and every check live in
//! `blobcore` (`BlobMap`); this module converts between dicts and maps.

use crate::engine::{engine_of, PyEngine};
use crate::gil::{run, run_loading};
use crate::handle::PyBlob;
use crate::errors::raise;
use blobcore::{Blob, BlobMap};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use std::path::PathBuf;

/// A dict value as a blob: a Blob as is, anything else through
/// ``bc.asblob`` (NumPy arrays are shared when they can be).
pub(crate) fn as_blob(py: Python<'_>, key: &str, v: &Bound<'_, PyAny>) -> PyResult<Blob> {
    if let Ok(b) = v.cast::<PyBlob>() {
        return Ok(b.get().b.clone());
    }
    let converted = crate::functions::asblob(py, v, None, None, None)
        .map_err(|e| raise("InvalidArgumentError", format!("{key:?}: not a blob or array: {e}")))?;
    Ok(converted.cast::<PyBlob>()?.get().b.clone())
}

/// Any mapping (a dict, or anything ``dict()`` takes) as a dict.
pub(crate) fn as_dict<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Bound<'py, PyDict>> {
    if let Ok(d) = obj.cast::<PyDict>() {
        return Ok(d.clone());
    }
    let made = obj
        .py()
        .import("builtins")?
        .getattr("dict")?
        .call1((obj,))
        .map_err(|_| raise("InvalidArgumentError", format!("{what} must be a mapping, got {}", obj.get_type())))?;
    Ok(made.cast_into::<PyDict>()?)
}

pub(crate) fn key_of(k: &Bound<'_, PyAny>) -> PyResult<String> {
    match k.cast::<PyString>() {
        Ok(s) => Ok(s.to_str()?.to_owned()),
        Err(_) => Err(raise("InvalidArgumentError", format!("names must be str, got {}", k.get_type()))),
    }
}

/// Loads a safetensors file as a dict of name -> Blob in file order. With
/// ``mmap=True`` (the default) the file is memory-mapped in O(1) and the
/// blobs are read-only views of it (``writeable`` is False; ``.copy()``
/// gives a writable blob); with ``mmap=False`` every tensor is read into a
/// fresh writable blob. A dtype blobcore lacks raises DTypeError naming
/// the tensor. A sharded checkpoint loads through its index
/// (``model.safetensors.index.json``) or its directory: every tensor of
/// the weight map, in its order, each from its shard; a missing shard, a
/// tensor absent from its shard, in two shards or not listed, or a wrong
/// ``total_size`` raises FormatError. An eager load reads with all cores
/// (every shard together); ``progress``, a callable, is called with
/// ``(done, total)`` bytes as it goes and once at the end (a mapped load
/// calls it once); an exception it raises cancels the load and propagates.
#[pyfunction]
#[pyo3(signature = (path, mmap=true, engine=None, progress=None))]
pub fn load_safetensors<'py>(py: Python<'py>, path: PathBuf, mmap: bool, engine: Option<PyRef<'_, PyEngine>>, progress: Option<Py<PyAny>>) -> PyResult<Bound<'py, PyDict>> {
    let e = engine_of(engine)?;
    let m = run_loading(py, progress, move |p| BlobMap::load_safetensors_with_progress(&e, &path, mmap, p))?;
    let d = PyDict::new(py);
    for (name, _, mut blobs) in m.into_entries() {
        if let Some(b) = blobs.pop() {
            d.set_item(name, Py::new(py, PyBlob::new(b))?)?;
        }
    }
    Ok(d)
}

/// The ``__metadata__`` of a safetensors file as a dict of str -> str
/// (empty when it has none). Maps the file; reads only its header. For a
/// sharded checkpoint (its index or directory): the index's metadata, with
/// ``total_size`` checked against the tensors (non-string values as their
/// JSON text: ``"total_size": "1234"``), then the shards' keys.
#[pyfunction]
pub fn safetensors_metadata<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let e = blobcore::Engine::cpu();
    let m = run(py, false, move || BlobMap::load_safetensors(&e, &path, true))?;
    let d = PyDict::new(py);
    for (k, v) in m.metadata() {
        d.set_item(k, v)?;
    }
    Ok(d)
}

/// Saves a mapping of name -> Blob (or array) as a safetensors file, with
/// ``metadata`` (a mapping of str -> str) as its ``__metadata__``. Written
/// atomically: a failed save leaves an existing file as it was.
///
/// A ``path`` ending in ``.index.json`` or naming a directory saves a
/// sharded checkpoint as huggingface_hub splits one: shards of at most
/// ``max_shard_size`` bytes (an int, or a str such as ``"5GB"``; default
/// 5 GB) named ``x-00001-of-0000N.safetensors`` after the index
/// (``model-…`` in a directory, where a single shard is
/// ``model.safetensors`` with no index), plus the index with
/// ``total_size``; nothing is replaced until every file is written.
#[pyfunction]
#[pyo3(signature = (path, blobs, metadata=None, max_shard_size=None))]
pub fn save_safetensors(
    py: Python<'_>,
    path: PathBuf,
    blobs: &Bound<'_, PyAny>,
    metadata: Option<&Bound<'_, PyAny>>,
    max_shard_size: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let max = match max_shard_size.filter(|m| !m.is_none()) {
        None => None,
        Some(m) if m.is_instance_of::<PyString>() => Some(crate::errors::core(blobcore::io::safetensors_index::parse_shard_size(m.cast::<PyString>()?.to_str()?))?),
        Some(m) => Some(m.extract::<u64>().map_err(|_| raise("InvalidArgumentError", format!("max_shard_size must be a positive int of bytes or a str such as \"5GB\", got {m}")))?),
    };
    let blobs = as_dict(blobs, "blobs")?;
    let metadata = metadata.filter(|m| !m.is_none()).map(|m| as_dict(m, "metadata")).transpose()?;
    let mut m = BlobMap::new();
    for (k, v) in blobs.iter() {
        let name = key_of(&k)?;
        let b = as_blob(py, &name, &v)?;
        m.insert(name, b);
    }
    if let Some(md) = &metadata {
        for (k, v) in md.iter() {
            let key = key_of(&k)?;
            let value = v
                .cast::<PyString>()
                .map_err(|_| raise("InvalidArgumentError", format!("metadata {key:?}: values must be str, got {}", v.get_type())))?
                .to_str()?
                .to_owned();
            m.set_metadata(key, value);
        }
    }
    run(py, false, move || match max {
        Some(n) => m.save_safetensors_sharded(&path, n),
        None => m.save_safetensors(&path),
    })
}

/// Loads the learned blobs of a Caffe ``.caffemodel`` as a dict of layer
/// name -> list of Blobs (weights, bias, ...), in file order; layers
/// without blobs are left out, as pycaffe's ``net.params``. Reads both the
/// ``layer`` and the legacy ``layers`` (V1) fields; legacy blobs are 4-D.
/// The values are read with all cores; ``progress`` as for
/// ``load_safetensors``.
#[pyfunction]
#[pyo3(signature = (path, engine=None, progress=None))]
pub fn load_caffemodel<'py>(py: Python<'py>, path: PathBuf, engine: Option<PyRef<'_, PyEngine>>, progress: Option<Py<PyAny>>) -> PyResult<Bound<'py, PyDict>> {
    let e = engine_of(engine)?;
    let m = run_loading(py, progress, move |p| BlobMap::load_caffemodel_with_progress(&e, &path, p))?;
    let d = PyDict::new(py);
    for (name, _, blobs) in m.into_entries() {
        let list = PyList::empty(py);
        for b in blobs {
            list.append(Py::new(py, PyBlob::new(b))?)?;
        }
        d.set_item(name, list)?;
    }
    Ok(d)
}

/// Saves a dict of layer name -> list of float32/float64 Blobs (or arrays)
/// as a ``.caffemodel`` (a NetParameter of name, type and blobs, which
/// Caffe's ``CopyTrainedLayersFrom`` accepts). ``types`` optionally gives
/// layer types by name.
#[pyfunction]
#[pyo3(signature = (path, layers, types=None))]
pub fn save_caffemodel(py: Python<'_>, path: PathBuf, layers: &Bound<'_, PyAny>, types: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let layers = as_dict(layers, "layers")?;
    let types = types.filter(|t| !t.is_none()).map(|t| as_dict(t, "types")).transpose()?;
    let mut m = BlobMap::new();
    for (k, v) in layers.iter() {
        let name = key_of(&k)?;
        let items: Vec<Bound<'_, PyAny>> = v
            .try_iter()
            .map_err(|_| raise("InvalidArgumentError", format!("layer {name:?}: expected a list of blobs, got {}", v.get_type())))?
            .collect::<PyResult<_>>()?;
        let blobs = items.iter().map(|b| as_blob(py, &name, b)).collect::<PyResult<Vec<_>>>()?;
        let kind = match types.as_ref().map(|t| t.get_item(&name)).transpose()?.flatten() {
            Some(t) => t
                .cast::<PyString>()
                .map_err(|_| raise("InvalidArgumentError", format!("types[{name:?}] must be str")))?
                .to_str()?
                .to_owned(),
            None => String::new(),
        };
        m.insert_all(name, kind, blobs);
    }
    run(py, false, move || m.save_caffemodel(&path))
}
