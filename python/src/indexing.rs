//! Parsing NumPy index keys into the core's [`blobcore::Index`] entries.
//! The semantics (shapes, bounds, views) live in `blobcore::index`.

use blobcore::Index;
use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PySlice, PyTuple};

/// A parsed key: basic entries the core handles, or an advanced key
/// (integer or boolean arrays) that makes a copy through NumPy.
pub enum Key {
    Basic(Vec<Index>),
    Advanced,
}

const VALID: &str = "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays are valid indices";

fn int_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(None); // a bool is a mask, not an integer (NumPy)
    }
    if obj.hasattr("__index__")? && !obj.hasattr("__len__")? {
        return match obj.call_method0("__index__")?.extract::<i64>() {
            Ok(v) => Ok(Some(v)),
            Err(_) => Err(PyIndexError::new_err("index out of range: it does not fit a 64-bit integer")),
        };
    }
    Ok(None)
}

fn slice_part(obj: Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_none() {
        return Ok(None);
    }
    match int_of(&obj)? {
        Some(v) => Ok(Some(v)),
        None => Err(PyTypeError::new_err("slice indices must be integers or None or have an __index__ method")),
    }
}

fn entry(obj: &Bound<'_, PyAny>) -> PyResult<Option<Index>> {
    if obj.is_none() {
        return Ok(Some(Index::NewAxis));
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(Some(Index::Ellipsis));
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        return Ok(Some(Index::Range {
            start: slice_part(s.getattr("start")?)?,
            stop: slice_part(s.getattr("stop")?)?,
            step: slice_part(s.getattr("step")?)?,
        }));
    }
    if let Some(i) = int_of(obj)? {
        return Ok(Some(Index::At(i)));
    }
    // Arrays, lists and bools index by value (a copy), as in NumPy.
    let np = obj.py().import("numpy")?;
    if obj.is_instance_of::<pyo3::types::PyBool>() || obj.is_instance_of::<pyo3::types::PyList>() || obj.is_instance(&np.getattr("ndarray")?)? || obj.hasattr("__array__")? {
        return Ok(None);
    }
    Err(PyIndexError::new_err(VALID))
}

/// Parses `key` (one entry or a tuple of them).
pub fn parse(key: &Bound<'_, PyAny>) -> PyResult<Key> {
    let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let mut out = Vec::with_capacity(items.len());
    for item in &items {
        match entry(item)? {
            Some(e) => out.push(e),
            None => return Ok(Key::Advanced),
        }
    }
    Ok(Key::Basic(out))
}

/// True when every entry is an integer and they index every axis: NumPy
/// then returns a scalar, not an array.
pub fn selects_scalar(key: &[Index], rank: usize) -> bool {
    key.len() == rank && key.iter().all(|k| matches!(k, Index::At(_)))
}
