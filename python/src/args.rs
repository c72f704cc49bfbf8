//! Argument parsing shared by the methods and functions: dims, indices
//! and axes (NumPy ints or `bc.Dim` members).

use crate::errors::{core, raise};
use blobcore::{BlobDim, Shape};
use pyo3::prelude::*;

/// Dims from Python ints: negative or overflowing dims are ShapeErrors.
pub(crate) fn udims(dims: &[i64]) -> PyResult<Vec<usize>> {
    Ok(core(Shape::from_i64(dims))?.dims().to_vec())
}

/// A non-negative index, else OutOfRangeError.
pub(crate) fn uidx(v: i64, what: &str) -> PyResult<usize> {
    usize::try_from(v).map_err(|_| raise("OutOfRangeError", format!("{what} {v} is negative")))
}

/// True when `obj` is a `bc.Dim` member.
pub(crate) fn as_named_dim(obj: &Bound<'_, PyAny>) -> PyResult<Option<BlobDim>> {
    let dim_cls = obj.py().import("blobcore._enums")?.getattr("Dim")?;
    if obj.is_instance(&dim_cls)? {
        let v: i64 = obj.extract()?;
        return Ok(Some(core(BlobDim::from_index(v))?));
    }
    Ok(None)
}

/// An axis argument: an int (a NumPy axis; negative counts from the end)
/// or a `bc.Dim` (a NeoML named dim, on the blob padded to 7 dims).
#[derive(Clone, Copy)]
pub(crate) enum Axis {
    At(isize),
    Named(BlobDim),
}

impl Axis {
    pub(crate) fn of(obj: &Bound<'_, PyAny>) -> PyResult<Axis> {
        match as_named_dim(obj)? {
            Some(d) => Ok(Axis::Named(d)),
            None => obj.extract::<isize>().map(Axis::At).map_err(|_| raise("OutOfRangeError", format!("axis must be an int or a bc.Dim, not {}", obj.get_type().name().map(|n| n.to_string()).unwrap_or_default()))),
        }
    }
}

/// Two axes of one kind: both ints or both `bc.Dim`s.
pub(crate) fn axis_pair(a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Result<(isize, isize), (BlobDim, BlobDim)>> {
    match (Axis::of(a)?, Axis::of(b)?) {
        (Axis::At(x), Axis::At(y)) => Ok(Ok((x, y))),
        (Axis::Named(x), Axis::Named(y)) => Ok(Err((x, y))),
        _ => Err(raise("InvalidArgumentError", "give two ints (NumPy axes) or two bc.Dim members (named dims), not one of each")),
    }
}

