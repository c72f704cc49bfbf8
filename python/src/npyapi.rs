//! Two entries of NumPy's C API, reached through its `_ARRAY_API` capsule
//! as every compiled NumPy extension does: `PyArray_Scalar` (element bytes
//! -> a NumPy scalar, as `a[i, j]` returns) and `PyArray_Pack` (a Python
//! value -> element bytes, as `a[i, j] = v` converts it). With them
//! `b[i, j]` and `b[i, j] = v` follow NumPy's rules exactly without
//! building an array per call. Without the API (NumPy 1.x, or a dtype that
//! is only a marker because ml_dtypes is missing) callers take the slower
//! path through an ndarray view.

use blobcore::{DType, Scalar};
use pyo3::ffi;
use pyo3::prelude::*;
use blobcore::first_use::FirstUse;
use std::os::raw::{c_int, c_void};

type ScalarFn = unsafe extern "C" fn(*mut c_void, *mut ffi::PyObject, *mut ffi::PyObject) -> *mut ffi::PyObject;
type PackFn = unsafe extern "C" fn(*mut ffi::PyObject, *mut c_void, *mut ffi::PyObject) -> c_int;

/// Slots of the API table (numpy/_core/include/numpy/__multiarray_api.h,
/// stable across NumPy 2.x): the ABI version, PyArray_Scalar, PyArray_Pack.
const SLOT_ABI_VERSION: usize = 0;
const SLOT_SCALAR: usize = 60;
const SLOT_PACK: usize = 65;
/// `PyArray_GetNDArrayCVersion()` of NumPy 2 (`NPY_ABI_VERSION`).
const ABI_2: u32 = 0x0200_0000;

struct Api {
    scalar: ScalarFn,
    pack: PackFn,
    /// The NumPy dtype (a `PyArray_Descr`) of each of `DType::ALL` that
    /// NumPy has itself (None for ml_dtypes' ones: see [`ML_DESCRS`]).
    descrs: Vec<Option<Py<PyAny>>>,
    /// `numpy.generic`, the base of NumPy's scalar types.
    generic: Py<pyo3::types::PyType>,
    /// `numpy.integer`, the base of NumPy's integer scalar types.
    integer: Py<pyo3::types::PyType>,
}

static API: FirstUse<Option<Api>> = FirstUse::new();

/// ml_dtypes' dtypes (bfloat16, float8) as [`Api::descrs`] holds NumPy's:
/// loaded when first needed, since importing ml_dtypes takes most of a
/// second (see `crate::dtypes`).
static ML_DESCRS: FirstUse<Vec<Option<Py<PyAny>>>> = FirstUse::new();

/// The dtype objects of `DType::ALL` that are NumPy dtypes, those that
/// ml_dtypes has (`ml`) or those it has not; None for the others.
fn descr_objects(py: Python<'_>, ml: bool) -> PyResult<Vec<Option<Py<PyAny>>>> {
    let dtype_type = py.import("numpy")?.getattr("dtype")?;
    DType::ALL
        .iter()
        .map(|&d| {
            if crate::dtypes::ml_dtype(d).is_some() != ml {
                return Ok(None);
            }
            let obj = crate::dtypes::to_py(py, d)?;
            Ok(if obj.is_instance(&dtype_type)? { Some(obj.unbind()) } else { None })
        })
        .collect()
}

fn ml_descrs(py: Python<'_>) -> PyResult<&Vec<Option<Py<PyAny>>>> {
    ML_DESCRS.get_or_try_make(|| descr_objects(py, true))
}

fn load(py: Python<'_>) -> PyResult<Option<Api>> {
    let capsule = py.import("numpy._core._multiarray_umath")?.getattr("_ARRAY_API")?;
    // SAFETY: the capsule's pointer is NumPy's API table (an array of
    // function pointers that lives as long as the module); its name is
    // read first so that GetPointer's name check passes.
    let table = unsafe {
        let name = ffi::PyCapsule_GetName(capsule.as_ptr());
        let p = ffi::PyCapsule_GetPointer(capsule.as_ptr(), name);
        if p.is_null() {
            return Err(PyErr::fetch(py));
        }
        p as *const *const c_void
    };
    // SAFETY: slot 0 is PyArray_GetNDArrayCVersion in every NumPy; the
    // other slots are only read once it says NumPy 2 or later.
    let (scalar, pack) = unsafe {
        let version: unsafe extern "C" fn() -> u32 = std::mem::transmute(*table.add(SLOT_ABI_VERSION));
        if version() < ABI_2 {
            return Ok(None);
        }
        let scalar: ScalarFn = std::mem::transmute(*table.add(SLOT_SCALAR));
        let pack: PackFn = std::mem::transmute(*table.add(SLOT_PACK));
        (scalar, pack)
    };
    let descrs = descr_objects(py, false)?;
    let generic = py.import("numpy")?.getattr("generic")?.cast_into::<pyo3::types::PyType>()?.unbind();
    let integer = py.import("numpy")?.getattr("integer")?.cast_into::<pyo3::types::PyType>()?.unbind();
    Ok(Some(Api { scalar, pack, descrs, generic, integer }))
}

fn api(py: Python<'_>) -> PyResult<Option<&'static Api>> {
    Ok(API.get_or_try_make(|| load(py))?.as_ref())
}

fn descr(api: &Api, py: Python<'_>, d: DType) -> PyResult<Option<*mut ffi::PyObject>> {
    let Some(i) = DType::ALL.iter().position(|x| *x == d) else { return Ok(None) };
    let set = if crate::dtypes::ml_dtype(d).is_some() { ml_descrs(py)? } else { &api.descrs };
    Ok(set[i].as_ref().map(|o| o.bind(py).as_ptr()))
}

/// `s` as the NumPy scalar `a[i, j]` would return (`numpy.float32(...)`,
/// ml_dtypes' scalars); None when the API or the dtype is not there.
pub fn scalar<'py>(py: Python<'py>, s: &Scalar) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Some(api) = api(py)? else { return Ok(None) };
    let Some(d) = descr(api, py, s.dtype())? else { return Ok(None) };
    let mut bytes = [0u64; 2];
    // SAFETY: `bytes` is 8-aligned and holds the scalar's bytes;
    // PyArray_Scalar copies them into a new scalar (base NULL: nothing is
    // kept) and returns a new reference or NULL with an exception set.
    unsafe {
        std::ptr::copy_nonoverlapping(s.bytes().as_ptr(), bytes.as_mut_ptr() as *mut u8, s.bytes().len());
        let obj = (api.scalar)(bytes.as_mut_ptr() as *mut c_void, d, std::ptr::null_mut());
        Bound::from_owned_ptr_or_err(py, obj).map(Some)
    }
}

/// True for a NumPy scalar (`numpy.float64(2.5)`, `numpy.uint8(7)`,
/// ml_dtypes' scalars): one value [`pack`] converts as NumPy's `a[i] = v`
/// does. False when the API is not there.
pub fn is_numpy_scalar(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Some(api) = api(py)? else { return Ok(false) };
    value.is_instance(api.generic.bind(py))
}

/// True for a NumPy integer scalar (`numpy.int64(7)`, `numpy.uint8(3)`);
/// False when the API is not there.
pub fn is_numpy_integer(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<bool> {
    let Some(api) = api(py)? else { return Ok(false) };
    value.is_instance(api.integer.bind(py))
}

/// `value` converted to one `dtype` element as NumPy's `a[i] = value`
/// converts it (its errors included: OverflowError for an out-of-range
/// Python int, ValueError for NaN into an integer); None when the API or
/// the dtype is not there.
pub fn pack(py: Python<'_>, dtype: DType, value: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    let Some(api) = api(py)? else { return Ok(None) };
    let Some(d) = descr(api, py, dtype)? else { return Ok(None) };
    let mut bytes = [0u64; 2];
    // SAFETY: `d` is a live PyArray_Descr of an element of at most 8
    // bytes, `bytes` is 16 aligned bytes, and PyArray_Pack writes one
    // element there or returns -1 with an exception set.
    let rc = unsafe { (api.pack)(d, bytes.as_mut_ptr() as *mut c_void, value.as_ptr()) };
    if rc < 0 {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: plain bytes of a local array.
    let raw = unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const u8, dtype.size()) };
    crate::errors::core(Scalar::from_bytes(dtype, raw)).map(Some)
}

/// The leading fields of NumPy's `PyArrayObject_fields`
/// (numpy/ndarraytypes.h), the ones its inline accessors `PyArray_DATA`,
/// `PyArray_NDIM`, `PyArray_DIMS`, `PyArray_DESCR` and `PyArray_FLAGS`
/// read: a layout every compiled NumPy extension depends on, unchanged
/// from NumPy 1.7 through 2.x.
#[repr(C)]
struct ArrayFields {
    head: ffi::PyObject,
    data: *const u8,
    nd: c_int,
    dimensions: *const isize,
    strides: *const isize,
    base: *mut ffi::PyObject,
    descr: *mut ffi::PyObject,
    flags: c_int,
}

/// `NPY_ARRAY_C_CONTIGUOUS`.
const C_CONTIGUOUS: c_int = 0x0001;

/// For an ndarray (exactly `numpy.ndarray`, checked by the caller) that is
/// C-contiguous, holds at most [`blobcore::SMALL_BYTES`] and has one of
/// blobcore's dtypes as NumPy's own dtype object (so native byte order,
/// no metadata): `f(dtype, dims, bytes)` with its memory, read from the
/// array's fields without a buffer export, and its result; None for any
/// other array (the caller takes the buffer path) or without the API.
/// The GIL stays held throughout, so the array cannot be resized or freed
/// meanwhile (which is why only small arrays come here).
pub fn with_small_array<R>(py: Python<'_>, array: &Bound<'_, PyAny>, f: impl FnOnce(DType, &[usize], &[u8]) -> R) -> PyResult<Option<R>> {
    let Some(api) = api(py)? else { return Ok(None) };
    // SAFETY: the caller checked that `array` is a numpy.ndarray, whose
    // object starts with these fields; we hold a reference and the GIL,
    // so they stay valid while read.
    let fields = unsafe { &*(array.as_ptr() as *const ArrayFields) };
    if fields.flags & C_CONTIGUOUS == 0 {
        return Ok(None);
    }
    let at = |set: &[Option<Py<PyAny>>]| set.iter().position(|d| d.as_ref().is_some_and(|d| d.as_ptr() == fields.descr));
    // An array of ml_dtypes' dtypes exists only once ml_dtypes is imported.
    let found = match at(&api.descrs) {
        Some(i) => Some(i),
        None if crate::dtypes::ml_reachable(py)? => at(ml_descrs(py)?),
        None => None,
    };
    let Some(i) = found else { return Ok(None) };
    let dtype = DType::ALL[i];
    let nd = usize::try_from(fields.nd).unwrap_or(usize::MAX);
    if nd > blobcore::MAX_RANK {
        return Ok(None);
    }
    let mut dims = [0usize; blobcore::MAX_RANK];
    let mut bytes = dtype.size();
    for (k, d) in dims[..nd].iter_mut().enumerate() {
        // SAFETY: `dimensions` holds `nd` entries (NumPy's invariant).
        let n = unsafe { *fields.dimensions.add(k) };
        *d = usize::try_from(n).unwrap_or(usize::MAX);
        bytes = bytes.saturating_mul(*d);
    }
    if bytes > blobcore::SMALL_BYTES {
        return Ok(None);
    }
    let slice: &[u8] = if bytes == 0 || fields.data.is_null() {
        &[]
    } else {
        // SAFETY: a C-contiguous array's `bytes` bytes start at `data`;
        // the GIL held keeps them alive and unchanged (nothing here runs
        // Python code) while `f` reads them.
        unsafe { std::slice::from_raw_parts(fields.data, bytes) }
    };
    Ok(Some(f(dtype, &dims[..nd], slice)))
}
