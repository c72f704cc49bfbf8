//! Module-level functions: merge/split, DLPack import, file loaders.

use crate::args::Axis;
use crate::engine::{engine_of, PyEngine};
use crate::gil::run;
use crate::handle::PyBlob;
use crate::dlpack;
use crate::errors::raise;
use blobcore::Blob;
use pyo3::prelude::*;


fn blobs(list: &[PyRef<'_, PyBlob>]) -> Vec<Blob> {
    list.iter().map(|b| b.b.clone()).collect()
}

fn first(list: &[Blob], what: &str) -> PyResult<Blob> {
    list.first().cloned().ok_or_else(|| raise("InvalidArgumentError", format!("{what}: no blobs given")))
}

fn axis_or_0(axis: Option<&Bound<'_, PyAny>>) -> PyResult<Axis> {
    match axis {
        Some(a) if !a.is_none() => Axis::of(a),
        _ => Ok(Axis::At(0)),
    }
}

fn small(list: &[Blob]) -> bool {
    list.iter().all(|b| b.is_small())
}

/// ``numpy.concatenate(blobs, axis)`` into a new blob (NeoML ``MergeByDim``).
/// ``axis`` is an int (NumPy axis) or a ``bc.Dim`` (named dim: every blob
/// padded to 7 dims, as NeoML does; the result keeps the largest rank
/// while the padding stays 1, else has rank 7).
#[pyfunction]
#[pyo3(signature = (blobs, axis=None))]
pub fn merge(py: Python<'_>, blobs: Vec<PyRef<'_, PyBlob>>, axis: Option<&Bound<'_, PyAny>>) -> PyResult<PyBlob> {
    let v = self::blobs(&blobs);
    first(&v, "merge")?;
    let a = axis_or_0(axis)?;
    let s = small(&v);
    Ok(PyBlob::new(run(py, s, move || {
        let refs: Vec<&Blob> = v.iter().collect();
        match a {
            Axis::At(a) => Blob::merged(&refs, a),
            Axis::Named(d) => Blob::merged_dim(&refs, d),
        }
    })?))
}

/// Merges ``blobs`` along ``axis`` (int or ``bc.Dim``) into the
/// preallocated ``to``.
#[pyfunction]
#[pyo3(signature = (blobs, to, axis=None))]
pub fn merge_into(py: Python<'_>, blobs: Vec<PyRef<'_, PyBlob>>, to: PyRef<'_, PyBlob>, axis: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let v = self::blobs(&blobs);
    let t = to.b.clone();
    let a = axis_or_0(axis)?;
    let s = small(&v) && t.is_small();
    run(py, s, move || {
        let refs: Vec<&Blob> = v.iter().collect();
        match a {
            Axis::At(a) => Blob::merge(&refs, a, &t),
            Axis::Named(d) => Blob::merge_dim(&refs, d, &t),
        }
    })
}

/// ``numpy.split``-like: ``parts`` is a number of equal parts or a list of
/// sizes along ``axis`` (int or ``bc.Dim``); returns new blobs.
#[pyfunction]
#[pyo3(signature = (blob, parts, axis=None))]
pub fn split(py: Python<'_>, blob: PyRef<'_, PyBlob>, parts: &Bound<'_, PyAny>, axis: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<PyBlob>> {
    let b = blob.b.clone();
    let a = axis_or_0(axis)?;
    let s = b.is_small();
    let out = if let Ok(n) = parts.extract::<i64>() {
        let n = crate::args::uidx(n, "number of parts")?;
        run(py, s, move || match a {
            Axis::At(a) => b.split_equal(a, n),
            Axis::Named(d) => b.split_equal_dim(d, n),
        })?
    } else {
        let sizes: Vec<i64> = parts.extract().map_err(|_| raise("InvalidArgumentError", "parts must be an int or a list of sizes"))?;
        let sizes = sizes.iter().map(|&x| crate::args::uidx(x, "part size")).collect::<PyResult<Vec<_>>>()?;
        run(py, s, move || match a {
            Axis::At(a) => b.split_sizes(a, &sizes),
            Axis::Named(d) => b.split_sizes_dim(d, &sizes),
        })?
    };
    Ok(out.into_iter().map(PyBlob::new).collect())
}

/// Splits ``blob`` along ``axis`` (int or ``bc.Dim``) into the
/// preallocated ``tos``.
#[pyfunction]
#[pyo3(signature = (blob, tos, axis=None))]
pub fn split_into(py: Python<'_>, blob: PyRef<'_, PyBlob>, tos: Vec<PyRef<'_, PyBlob>>, axis: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let b = blob.b.clone();
    let v = blobs(&tos);
    let a = axis_or_0(axis)?;
    let s = b.is_small();
    run(py, s, move || {
        let refs: Vec<&Blob> = v.iter().collect();
        match a {
            Axis::At(a) => Blob::split(&b, a, &refs),
            Axis::Named(d) => Blob::split_dim(&b, d, &refs),
        }
    })
}

/// ``numpy.asarray`` for blobs (Serrano's ``Tensor(fromArray:tensorShape:)``):
/// ``obj`` as a blob, sharing memory whenever it can. A blob of the asked
/// dtype and shape is returned as is; a C-contiguous buffer of the asked
/// dtype is wrapped without copying (read-only arrays give read-only
/// blobs); anything else (nested lists, strided arrays, another dtype) is
/// converted by NumPy into new memory. ``shape`` reinterprets the
/// elements in row-major order and must keep their count (ShapeError).
#[pyfunction]
#[pyo3(signature = (obj, dtype=None, shape=None, engine=None))]
pub fn asblob<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, dtype: Option<&Bound<'py, PyAny>>, shape: Option<Vec<i64>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Bound<'py, PyAny>> {
    let dtype = match dtype {
        Some(d) if !d.is_none() => Some(crate::dtypes::from_py(Some(d))?),
        _ => None,
    };
    let dims = match &shape {
        Some(s) => Some(crate::errors::core(blobcore::Shape::from_i64(s))?.dims().to_vec()),
        None => None,
    };
    let np = py.import("numpy")?;
    let out = if let Ok(b) = obj.cast::<PyBlob>() {
        let b = b.get().b.clone();
        match dtype {
            Some(d) if d != b.dtype() => crate::errors::core(b.cast(d))?,
            _ => match &dims {
                Some(d) if *d != b.dims() => {
                    // A new blob over the same memory (the export keeps it alive).
                    // A view that is not dense has no flat memory to share: copy it.
                    let arr = crate::arrays::array_of(obj.cast::<PyBlob>()?, None, None)?;
                    match crate::arrays::wrap_array(&arr, b.engine()) {
                        Ok(w) => w,
                        Err(_) => crate::errors::core(b.copy())?,
                    }
                }
                _ => return Ok(obj.clone()),
            },
        }
    } else {
        let engine = engine_of(engine)?;
        let arr = match dtype {
            Some(d) => crate::arrays::as_dtype(py, obj, d, true)?,
            None => np.getattr("asarray")?.call1((obj,))?,
        };
        match crate::arrays::wrap_array(&arr, &engine) {
            Ok(b) => b,
            Err(_) => crate::arrays::copy_array(py, &arr, &engine)?,
        }
    };
    if let Some(d) = dims {
        crate::errors::core(out.reinterpret(&d))?;
    }
    Ok(Bound::new(py, PyBlob::new(out))?.into_any())
}

/// NeoML ``MergeByObjects`` into the preallocated ``to``.
#[pyfunction]
pub fn merge_objects(py: Python<'_>, blobs: Vec<PyRef<'_, PyBlob>>, to: PyRef<'_, PyBlob>) -> PyResult<()> {
    let v = self::blobs(&blobs);
    let t = to.b.clone();
    let s = t.is_small();
    run(py, s, move || {
        let refs: Vec<&Blob> = v.iter().collect();
        Blob::merge_objects(&refs, &t)
    })
}

/// NeoML ``SplitByObjects`` into the preallocated ``tos``.
#[pyfunction]
pub fn split_objects(py: Python<'_>, blob: PyRef<'_, PyBlob>, tos: Vec<PyRef<'_, PyBlob>>) -> PyResult<()> {
    let b = blob.b.clone();
    let v = blobs(&tos);
    let s = b.is_small();
    run(py, s, move || {
        let refs: Vec<&Blob> = v.iter().collect();
        Blob::split_objects(&b, &refs)
    })
}

/// The array API's ``from_dlpack``: a blob sharing the memory of any
/// DLPack producer (NumPy, PyTorch, JAX ...) or of a DLPack capsule.
/// ``copy=None`` shares when it can (strided or misaligned tensors are
/// copied); ``copy=True`` always copies; ``copy=False`` never copies and
/// raises BufferError when it would have to. Tensors flagged read-only
/// give read-only blobs. ``device`` must be None, "cpu" or ``(1, 0)`` —
/// or, with a CUDA engine, "cuda" / ``(2, ordinal)``; ``engine`` places
/// the result (a GPU engine uploads on first use; a CUDA engine takes
/// CUDA tensors of its device without a trip through the host, passing
/// its stream to the producer). A NumPy array over a blob's own memory
/// (``np.asarray(x)``, ``np.from_dlpack(x)`` and their views) gives a
/// blob on that blob's storage, as a view of it would be.
#[pyfunction]
#[pyo3(signature = (obj, *, device=None, copy=None, engine=None))]
pub fn from_dlpack(obj: &Bound<'_, PyAny>, device: Option<&Bound<'_, PyAny>>, copy: Option<bool>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    let engine = engine_of(engine)?;
    let cuda_stream = engine.cuda_stream();
    if let Some(d) = device {
        let mine = engine.device().and_then(|g| g.cuda()).map(|c| (blobcore::dlpack::DL_CUDA, c.ordinal() as i32));
        let ok = d.is_none()
            || d.extract::<String>().is_ok_and(|s| s == "cpu" || (s == "cuda" && mine.is_some()))
            || d.extract::<(i32, i32)>().is_ok_and(|t| t == dlpack::CPU_DEVICE || Some(t) == mine);
        if !ok {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "from_dlpack: device {} is not supported (None, \"cpu\" or (1, 0); \"cuda\" or (2, ordinal) with a CUDA engine on that device)",
                d.repr()?
            )));
        }
    }
    // A blob's own memory coming back through NumPy: a blob on its
    // storage, holding nothing of NumPy's (see blobcore::lent_back).
    if copy != Some(true) && crate::arrays::is_ndarray(obj.py(), obj)? {
        if let Some(b) = crate::arrays::returned_array(obj, &engine)? {
            return Ok(PyBlob::new(b));
        }
    }
    let capsule = if obj.hasattr("__dlpack__")? {
        let kwargs = pyo3::types::PyDict::new(obj.py());
        kwargs.set_item("max_version", (1u32, 1u32))?;
        // A CUDA producer makes its data ready for this engine's stream.
        if let Some(s) = cuda_stream {
            let on_cuda = obj.hasattr("__dlpack_device__")?
                && obj.call_method0("__dlpack_device__")?.extract::<(i32, i32)>().is_ok_and(|d| d.0 == blobcore::dlpack::DL_CUDA);
            if on_cuda {
                kwargs.set_item("stream", s)?;
            }
        }
        match obj.call_method("__dlpack__", (), Some(&kwargs)) {
            Ok(c) => c,
            // Producers older than DLPack 1.0 take no keywords.
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(obj.py()) => obj.call_method0("__dlpack__")?,
            Err(e) => return Err(e),
        }
    } else {
        obj.clone()
    };
    Ok(PyBlob::new(dlpack::consume(&capsule, copy, &engine)?))
}
