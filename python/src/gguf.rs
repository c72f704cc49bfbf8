//! GGUF files from Python: tensors as a dict of blobs, metadata as a dict
//! of typed Python values, tensor infos as (type name, logical shape). The
//! format and its checks live in `blobcore::io::gguf`; this module
//! converts.

use crate::engine::{engine_of, PyEngine};
use crate::errors::raise;
use crate::gil::{run, run_loading};
use crate::handle::PyBlob;
use blobcore::io::gguf::{self, GgufArray, GgufValue};
use blobcore::BlobMap;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::IntoPyObjectExt;
use std::path::PathBuf;

/// Loads a GGUF file (versions 2 and 3, little-endian) as a dict of name
/// -> Blob in file order, each as gguf-py's ``GGUFReader`` gives
/// ``tensor.data``: NumPy axis order (the file's dims reversed); F32, F16,
/// BF16, F64, I8, I16, I32 and I64 as typed blobs; block-quantized types
/// (Q4_0, Q8_0, the K-quants, ...) as uint8 blobs whose last axis holds a
/// row's blocks. With ``mmap=True`` (the default) the file is mapped in
/// O(1) and the blobs are read-only views of it. With ``dequantize=True``
/// Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q2_K-Q6_K tensors become writable
/// float32 blobs of their logical shape, equal to
/// ``gguf.quants.dequantize``; other block types raise UnsupportedError
/// naming the type (before anything is loaded). An eager load reads with
/// all cores; ``progress`` as for ``load_safetensors`` (dequantized
/// tensors are decoded first and not counted).
#[pyfunction]
#[pyo3(signature = (path, mmap=true, dequantize=false, engine=None, progress=None))]
pub fn load_gguf<'py>(py: Python<'py>, path: PathBuf, mmap: bool, dequantize: bool, engine: Option<PyRef<'_, PyEngine>>, progress: Option<Py<PyAny>>) -> PyResult<Bound<'py, PyDict>> {
    let e = engine_of(engine)?;
    let m = run_loading(py, progress, move |p| BlobMap::load_gguf_with_progress(&e, &path, mmap, dequantize, p))?;
    let d = PyDict::new(py);
    for (name, _, mut blobs) in m.into_entries() {
        if let Some(b) = blobs.pop() {
            d.set_item(name, Py::new(py, PyBlob::new(b))?)?;
        }
    }
    Ok(d)
}

fn array<'py>(py: Python<'py>, a: &GgufArray) -> PyResult<Bound<'py, PyAny>> {
    Ok(match a {
        GgufArray::U8(v) => PyList::new(py, v)?.into_any(),
        GgufArray::I8(v) => PyList::new(py, v)?.into_any(),
        GgufArray::U16(v) => PyList::new(py, v)?.into_any(),
        GgufArray::I16(v) => PyList::new(py, v)?.into_any(),
        GgufArray::U32(v) => PyList::new(py, v)?.into_any(),
        GgufArray::I32(v) => PyList::new(py, v)?.into_any(),
        GgufArray::F32(v) => PyList::new(py, v)?.into_any(),
        GgufArray::Bool(v) => PyList::new(py, v)?.into_any(),
        GgufArray::String(v) => PyList::new(py, v)?.into_any(),
        GgufArray::Array(v) => PyList::new(py, v.iter().map(|x| array(py, x)).collect::<PyResult<Vec<_>>>()?)?.into_any(),
        GgufArray::U64(v) => PyList::new(py, v)?.into_any(),
        GgufArray::I64(v) => PyList::new(py, v)?.into_any(),
        GgufArray::F64(v) => PyList::new(py, v)?.into_any(),
    })
}

fn value<'py>(py: Python<'py>, v: &GgufValue) -> PyResult<Bound<'py, PyAny>> {
    match v {
        GgufValue::U8(x) => x.into_bound_py_any(py),
        GgufValue::I8(x) => x.into_bound_py_any(py),
        GgufValue::U16(x) => x.into_bound_py_any(py),
        GgufValue::I16(x) => x.into_bound_py_any(py),
        GgufValue::U32(x) => x.into_bound_py_any(py),
        GgufValue::I32(x) => x.into_bound_py_any(py),
        GgufValue::F32(x) => x.into_bound_py_any(py),
        GgufValue::Bool(x) => x.into_bound_py_any(py),
        GgufValue::String(x) => x.into_bound_py_any(py),
        GgufValue::Array(a) => array(py, a),
        GgufValue::U64(x) => x.into_bound_py_any(py),
        GgufValue::I64(x) => x.into_bound_py_any(py),
        GgufValue::F64(x) => x.into_bound_py_any(py),
    }
}

/// Every key/value pair of a GGUF file's header, in file order, as Python
/// values: ints, floats, bools, strs, and lists for arrays (of arrays).
/// Reads only the header.
#[pyfunction]
pub fn gguf_metadata<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let h = run(py, false, move || gguf::read_header(&path))?;
    let d = PyDict::new(py);
    for (k, v) in &h.metadata {
        d.set_item(k, value(py, v)?)?;
    }
    Ok(d)
}

/// Each tensor of a GGUF file as name -> (ggml type name, logical shape
/// in NumPy axis order), in file order. Reads only the header.
#[pyfunction]
pub fn gguf_tensor_info<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let h = run(py, false, move || gguf::read_header(&path))?;
    let d = PyDict::new(py);
    for t in &h.tensors {
        let shape = PyTuple::new(py, t.logical_dims())?;
        d.set_item(&t.name, (t.ggml_type.name, shape))?;
    }
    Ok(d)
}

/// A Python value as a GGUF value, as gguf-py's writer types them (str ->
/// STRING, bool -> BOOL, float -> FLOAT32, int -> INT32, list -> ARRAY of
/// its first element's type) except that ints beyond INT32 take INT64 or
/// UINT64 instead of failing, and NumPy scalars keep their own type
/// (``np.float64(x)`` -> FLOAT64, ``np.uint32(n)`` -> UINT32).
/// ``general.alignment`` given as an int is UINT32, as readers require.
fn to_value(key: &str, v: &Bound<'_, PyAny>) -> PyResult<GgufValue> {
    if key == "general.alignment" {
        if let Ok(n) = v.extract::<u32>() {
            return Ok(GgufValue::U32(n));
        }
    }
    if let Ok(dt) = v.getattr("dtype") {
        if v.hasattr("item")? && v.getattr("ndim").and_then(|n| n.extract::<usize>()).ok() == Some(0) {
            let name: String = dt.getattr("name")?.extract()?;
            let item = v.call_method0("item")?;
            let bad = |_| raise("InvalidArgumentError", format!("gguf metadata {key:?}: cannot store {v}"));
            return Ok(match name.as_str() {
                "uint8" => GgufValue::U8(item.extract().map_err(bad)?),
                "int8" => GgufValue::I8(item.extract().map_err(bad)?),
                "uint16" => GgufValue::U16(item.extract().map_err(bad)?),
                "int16" => GgufValue::I16(item.extract().map_err(bad)?),
                "uint32" => GgufValue::U32(item.extract().map_err(bad)?),
                "int32" => GgufValue::I32(item.extract().map_err(bad)?),
                "uint64" => GgufValue::U64(item.extract().map_err(bad)?),
                "int64" => GgufValue::I64(item.extract().map_err(bad)?),
                "float32" => GgufValue::F32(item.extract().map_err(bad)?),
                "float64" => GgufValue::F64(item.extract().map_err(bad)?),
                "bool" => GgufValue::Bool(item.extract().map_err(bad)?),
                other => return Err(raise("InvalidArgumentError", format!("gguf metadata {key:?}: GGUF has no {other} values"))),
            });
        }
    }
    if let Ok(s) = v.cast::<pyo3::types::PyString>() {
        return Ok(GgufValue::String(s.to_str()?.to_owned()));
    }
    if let Ok(b) = v.cast::<pyo3::types::PyBool>() {
        return Ok(GgufValue::Bool(b.is_true()));
    }
    if let Ok(f) = v.cast::<pyo3::types::PyFloat>() {
        return Ok(GgufValue::F32(f.value() as f32));
    }
    if v.cast::<pyo3::types::PyInt>().is_ok() {
        if let Ok(n) = v.extract::<i32>() {
            return Ok(GgufValue::I32(n));
        }
        if let Ok(n) = v.extract::<i64>() {
            return Ok(GgufValue::I64(n));
        }
        if let Ok(n) = v.extract::<u64>() {
            return Ok(GgufValue::U64(n));
        }
        return Err(raise("InvalidArgumentError", format!("gguf metadata {key:?}: {v} does not fit in 64 bits")));
    }
    if let Ok(l) = v.cast::<PyList>() {
        return Ok(GgufValue::Array(to_array(key, l)?));
    }
    Err(raise("InvalidArgumentError", format!("gguf metadata {key:?}: cannot store a {} (str, bool, int, float, list or a NumPy scalar)", v.get_type())))
}

/// A list as a GGUF array: every element of the first one's type.
fn to_array(key: &str, l: &Bound<'_, PyList>) -> PyResult<GgufArray> {
    let items: Vec<GgufValue> = l.iter().map(|x| to_value("", &x)).collect::<PyResult<_>>()?;
    let first = items.first().map_or(5, GgufValue::type_id);
    let mixed = || raise("InvalidArgumentError", format!("gguf metadata {key:?}: an array's elements must all have one type"));
    macro_rules! all {
        ($var:ident, $arr:ident) => {
            GgufArray::$arr(items.into_iter().map(|x| if let GgufValue::$var(v) = x { Ok(v) } else { Err(mixed()) }).collect::<PyResult<_>>()?)
        };
    }
    Ok(match first {
        0 => all!(U8, U8),
        1 => all!(I8, I8),
        2 => all!(U16, U16),
        3 => all!(I16, I16),
        4 => all!(U32, U32),
        5 => all!(I32, I32),
        6 => all!(F32, F32),
        7 => all!(Bool, Bool),
        8 => all!(String, String),
        9 => all!(Array, Array),
        10 => all!(U64, U64),
        11 => all!(I64, I64),
        _ => all!(F64, F64),
    })
}

/// Saves a mapping of name -> Blob (or array) as a GGUF v3 file that
/// gguf-py and llama.cpp read: float32, float16, bfloat16, float64, int8,
/// int16, int32 and int64 tensors (others raise DTypeError naming the
/// tensor), dims written reversed as ggml's ``ne``, and ``metadata`` (a
/// mapping of str -> value, typed as gguf-py's writer types them; NumPy
/// scalars keep their type) as key/value pairs; ``general.alignment``
/// (a power of two) sets the data alignment (default 32). Atomic.
#[pyfunction]
#[pyo3(signature = (path, tensors, metadata=None))]
pub fn save_gguf(py: Python<'_>, path: PathBuf, tensors: &Bound<'_, PyAny>, metadata: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let tensors = crate::weights::as_dict(tensors, "tensors")?;
    let mut m = BlobMap::new();
    for (k, v) in tensors.iter() {
        let name = crate::weights::key_of(&k)?;
        let b = crate::weights::as_blob(py, &name, &v)?;
        m.insert(name, b);
    }
    let mut kv = Vec::new();
    if let Some(md) = metadata.filter(|m| !m.is_none()) {
        for (k, v) in crate::weights::as_dict(md, "metadata")?.iter() {
            let key = crate::weights::key_of(&k)?;
            let value = to_value(&key, &v)?;
            kv.push((key, value));
        }
    }
    run(py, false, move || m.save_gguf(&path, &kv))
}
