//! Parsing NumPy index keys into the core's [`blobcore::Index`] entries.
//! The semantics (shapes, bounds, views) live in `blobcore::index`.

use blobcore::Index;
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::ffi;
use pyo3::types::{PyEllipsis, PyInt, PySlice, PyTuple};

/// The basic entries of a key, inline: a key lives on the stack for one
/// call (no allocation per index). [`parse`] fills one in place, so the
/// entries are not moved through return values.
pub type Entries = smallvec::SmallVec<[Index; 8]>;

const VALID: &str = "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or boolean arrays are valid indices";

/// An integer index: exact `int` first (the common case, no method
/// calls), then anything with `__index__` that is not a sequence (NumPy
/// integers; arrays, even 0-d ones, index by value). Too large for 64 bits
/// is an IndexError, as in NumPy. Bools are masks, not integers.
fn int_of(obj: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if let Some(i) = exact_int(obj) {
        return i.map(Some);
    }
    // SAFETY: both only read the type slots of a live object.
    let integer_like = unsafe { ffi::PyIndex_Check(obj.as_ptr()) != 0 && ffi::PySequence_Check(obj.as_ptr()) == 0 };
    if !integer_like || obj.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(None);
    }
    match obj.call_method0("__index__")?.extract::<i64>() {
        Ok(v) => Ok(Some(v)),
        Err(_) => Err(PyIndexError::new_err(TOO_BIG)),
    }
}

/// An exact `int` as an index (IndexError past 64 bits), or None for
/// any other object.
#[inline(always)]
fn exact_int(obj: &Bound<'_, PyAny>) -> Option<PyResult<i64>> {
    let i = obj.cast_exact::<PyInt>().ok()?;
    Some(i.extract::<i64>().map_err(|_| PyIndexError::new_err(TOO_BIG)))
}

const TOO_BIG: &str = "index out of range: it does not fit a 64-bit integer";

/// `start:stop:step` as Python resolves them before knowing the length
/// (`PySlice_Unpack`: `__index__` on each part, None as the defaults,
/// values beyond the index range clamped, which changes no result).
#[inline(always)]
fn range_of(s: &Bound<'_, PySlice>) -> PyResult<Index> {
    let (mut start, mut stop, mut step): (ffi::Py_ssize_t, ffi::Py_ssize_t, ffi::Py_ssize_t) = (0, 0, 0);
    // SAFETY: `s` is a live slice object (the cast checked its type) and
    // the three out-pointers are valid for writes for the call.
    let rc = unsafe { ffi::PySlice_Unpack(s.as_ptr(), &mut start, &mut stop, &mut step) };
    if rc < 0 {
        // A part without __index__ (TypeError) or a zero step (ValueError),
        // worded by Python as NumPy words them.
        return Err(PyErr::fetch(s.py()));
    }
    Ok(Index::Range { start: Some(start as i64), stop: Some(stop as i64), step: Some(step as i64) })
}

/// Pushes one entry of a key onto `out`: true, or false for an
/// advanced entry (nothing pushed). Exact ints and slices, the common
/// entries, are worked out inline and pushed where they are made
/// (`range_of` too): returned through memory, an entry (written in 8-byte
/// parts) was read back at once in 16-byte loads to be pushed, a
/// store-forwarding stall (`x[::2, 1]` 209-210 -> 192-196 ns, `x[0]`
/// 121-133 -> 110-117 ns on session 85's Zen 4 VM; the push of a
/// returned `Option`, session 86).
#[inline(always)]
fn push_entry(obj: &Bound<'_, PyAny>, out: &mut Entries) -> PyResult<bool> {
    if let Some(i) = exact_int(obj) {
        out.push(Index::At(i?));
        return Ok(true);
    }
    if let Ok(s) = obj.cast::<PySlice>() {
        out.push(range_of(s)?);
        return Ok(true);
    }
    Ok(match entry_other(obj)? {
        Some(e) => {
            out.push(e);
            true
        }
        None => false,
    })
}

/// The entry of anything but an exact int or a slice (see [`push_entry`]).
#[inline(never)]
fn entry_other(obj: &Bound<'_, PyAny>) -> PyResult<Option<Index>> {
    if let Some(i) = int_of(obj)? {
        return Ok(Some(Index::At(i)));
    }
    if obj.is_none() {
        return Ok(Some(Index::NewAxis));
    }
    if obj.is_instance_of::<PyEllipsis>() {
        return Ok(Some(Index::Ellipsis));
    }
    // Strings are no indices (NumPy refuses them too).
    if obj.is_instance_of::<pyo3::types::PyString>() || obj.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(PyIndexError::new_err(VALID));
    }
    // Arrays, sequences (lists, tuples inside the key, ranges) and bools
    // index by value (a copy): NumPy's advanced indexing.
    // SAFETY: only reads the type slots of a live object.
    let sequence = unsafe { ffi::PySequence_Check(obj.as_ptr()) != 0 };
    if sequence || obj.is_instance_of::<pyo3::types::PyBool>() || obj.hasattr("__array__")? {
        return Ok(None);
    }
    Err(PyIndexError::new_err(VALID))
}

/// Parses `key` (one entry or a tuple of them) into `out`: true for a
/// basic key, false for an advanced one (integer or boolean arrays, which
/// make a copy through NumPy; `out` is then partial).
pub fn parse(key: &Bound<'_, PyAny>, out: &mut Entries) -> PyResult<bool> {
    let Ok(t) = key.cast::<PyTuple>() else {
        return push_entry(key, out);
    };
    for i in 0..t.len() {
        // Borrowed: no reference count traffic per entry.
        let Ok(item) = t.get_borrowed_item(i) else { return Ok(false) };
        if !push_entry(&item, out)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The integers of a key that is exactly `rank` Python `int`s (a tuple of
/// them, or one for rank 1): the common `b[i, j, k]` of one element,
/// read without parsing the general key. None for anything else (NumPy
/// integers, slices ...), which [`parse`] handles.
pub fn exact_element(key: &Bound<'_, PyAny>, rank: usize) -> Option<smallvec::SmallVec<[i64; 8]>> {
    fn int(o: &Bound<'_, PyAny>) -> Option<i64> {
        o.cast_exact::<PyInt>().ok()?.extract::<i64>().ok()
    }
    let mut out = smallvec::SmallVec::new();
    let Ok(t) = key.cast_exact::<PyTuple>() else {
        if rank == 1 {
            out.push(int(key)?);
            return Some(out);
        }
        return None;
    };
    if t.len() != rank {
        return None;
    }
    for i in 0..rank {
        // Borrowed: no reference count traffic per entry.
        out.push(int(&*t.get_borrowed_item(i).ok()?)?);
    }
    Some(out)
}

/// The integers of a key that has one integer per axis and nothing else
/// (NumPy then returns a scalar, not an array); None otherwise.
pub fn element_of(key: &[Index], rank: usize) -> Option<smallvec::SmallVec<[i64; 8]>> {
    if key.len() != rank {
        return None;
    }
    key.iter().map(|k| if let Index::At(i) = k { Some(*i) } else { None }).collect()
}

/// True for the Python values `b[key] = value` converts itself (exact
/// `float`, `int` and `bool`, through NumPy's own conversion; NumPy
/// scalars are the other such values, see `npyapi::is_numpy_scalar`);
/// anything else (arrays, sequences, blobs) goes through an ndarray.
pub fn is_plain_scalar(value: &Bound<'_, PyAny>) -> bool {
    value.is_exact_instance_of::<pyo3::types::PyFloat>()
        || value.is_exact_instance_of::<PyInt>()
        || value.is_exact_instance_of::<pyo3::types::PyBool>()
}
