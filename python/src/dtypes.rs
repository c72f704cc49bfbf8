//! dtypes: blobcore's `DType` <-> the Python dtype objects exported as
//! `bc.float32` ... (NumPy dtypes; `bc.bfloat16` and the float8 dtypes are
//! ml_dtypes' when that package is installed, else marker objects), plus
//! the buffer-protocol format characters.

use crate::errors::raise;
use blobcore::DType;
use pyo3::prelude::*;
use blobcore::first_use::FirstUse;
use pyo3::types::PyString;

/// The dtype objects of some of `DType::ALL` and their scalar types
/// (`numpy.float32` ...; None for the markers of a missing ml_dtypes).
struct Objects {
    dtypes: Vec<(DType, Py<PyAny>, Option<Py<PyAny>>)>,
}

/// NumPy's own dtypes (loaded on first use).
static NUMPY: FirstUse<Objects> = FirstUse::new();
/// ml_dtypes' (bfloat16, float8): loaded only when one is needed or
/// ml_dtypes is imported already, since importing it takes most of a
/// second (see `blobcore/_dtypes.py`).
static ML: FirstUse<Objects> = FirstUse::new();

/// The name of `d`'s object in the `blobcore` module (`bool_` for bool,
/// as NumPy spells its scalar type; the dtype's name otherwise).
pub fn attr_name(d: DType) -> &'static str {
    if d == DType::Bool { "bool_" } else { d.name() }
}

/// The dtypes NumPy reaches only through ml_dtypes: their ml_dtypes name
/// and the unsigned integer type of the same size that carries their bits
/// through the buffer protocol.
pub fn ml_dtype(d: DType) -> Option<(&'static str, &'static str)> {
    match d {
        DType::BF16 => Some(("bfloat16", "uint16")),
        DType::F8E4M3Fn | DType::F8E5M2 | DType::F8E8M0Fnu => Some((d.name(), "uint8")),
        _ => None,
    }
}

/// The ml_dtypes dtype with this name, if blobcore has it.
pub fn ml_by_name(name: &str) -> Option<DType> {
    DType::from_name(name).filter(|d| ml_dtype(*d).is_some())
}

/// The Python object for `d` (`numpy.dtype("float32")` ...).
pub fn to_py(py: Python<'_>, d: DType) -> PyResult<Bound<'_, PyAny>> {
    let set = if ml_dtype(d).is_some() { ml_objects(py)? } else { numpy_objects(py)? };
    let (_, o, _) = set.dtypes.iter().find(|(x, ..)| *x == d).ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("blobcore: a dtype without its object"))?;
    Ok(o.bind(py).clone())
}

/// The objects of the dtypes of `DType::ALL` that ml_dtypes has (`ml`)
/// or not, from `blobcore._dtypes`.
fn load(py: Python<'_>, ml: bool) -> PyResult<Objects> {
    let m = py.import("blobcore._dtypes")?;
    let dtypes = DType::ALL
        .iter()
        .filter(|d| ml_dtype(**d).is_some() == ml)
        .map(|d| {
            let o = m.getattr(attr_name(*d))?;
            let t = o.getattr("type").ok().map(Bound::unbind);
            Ok((*d, o.unbind(), t))
        })
        .collect::<PyResult<Vec<_>>>()?;
    Ok(Objects { dtypes })
}

fn numpy_objects(py: Python<'_>) -> PyResult<&Objects> {
    NUMPY.get_or_try_make(|| load(py, false))
}

fn ml_objects(py: Python<'_>) -> PyResult<&Objects> {
    ML.get_or_try_make(|| load(py, true))
}

/// The dtype in `o` whose object or scalar type `obj` is.
fn find(py: Python<'_>, o: &Objects, obj: &Bound<'_, PyAny>) -> Option<DType> {
    o.dtypes.iter().find(|(_, d, _)| d.bind(py).is(obj)).or_else(|| o.dtypes.iter().find(|(_, _, t)| t.as_ref().is_some_and(|t| t.bind(py).is(obj)))).map(|(d, ..)| *d)
}

/// True once ml_dtypes' objects may exist: they are loaded here, or
/// ml_dtypes is imported. (The markers made without ml_dtypes are found
/// by name instead: see [`by_identity`]'s callers.)
pub(crate) fn ml_reachable(py: Python<'_>) -> PyResult<bool> {
    Ok(ML.get().is_some() || py.import("sys")?.getattr("modules")?.contains("ml_dtypes")?)
}

/// The dtype whose object (`bc.float32` ...) or scalar type
/// (`numpy.float32`, `ml_dtypes.bfloat16`) `obj` is, by identity.
/// NumPy's builtin dtypes (native byte order) and ml_dtypes' are
/// singletons, so this answers for the arrays and dtype arguments users
/// pass without asking NumPy (`dtype.name` is a Python-level getter in
/// NumPy 2: microseconds a call). None for anything else (an equal dtype
/// that is another object, byte-swapped, unpickled ...): callers then go
/// by name.
pub fn by_identity(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Option<DType>> {
    if let Some(d) = find(py, numpy_objects(py)?, obj) {
        return Ok(Some(d));
    }
    // ml_dtypes' objects exist only once it is imported: until then
    // nothing can be one, and it is not imported here.
    if obj.is_instance_of::<PyString>() || !ml_reachable(py)? {
        return Ok(None);
    }
    Ok(find(py, ml_objects(py)?, obj))
}

/// Parses a dtype argument: `None` (float32), a name, a NumPy or
/// ml_dtypes dtype or scalar type, or one of `bc`'s dtype objects.
pub fn from_py(obj: Option<&Bound<'_, PyAny>>) -> PyResult<DType> {
    let Some(obj) = obj else { return Ok(DType::F32) };
    if obj.is_none() {
        return Ok(DType::F32);
    }
    let py = obj.py();
    // NumPy's and ml_dtypes' dtype objects and scalar types found by
    // identity, and blobcore's own names as they are (each is the name
    // NumPy gives its dtype).
    if let Some(d) = by_identity(py, obj)? {
        return Ok(d);
    }
    if let Some(d) = obj.cast::<PyString>().ok().and_then(|s| s.to_str().ok().and_then(DType::from_name)) {
        return Ok(d);
    }
    let ml_name = || -> PyResult<Option<String>> {
        if !obj.hasattr("name")? {
            return Ok(None);
        }
        Ok(obj.getattr("name")?.extract::<String>().ok().filter(|n| ml_by_name(n).is_some()))
    };
    let name: String = if let Ok(s) = obj.cast::<PyString>() {
        s.to_str()?.to_owned()
    } else if let Some(n) = ml_name()? {
        n
    } else if obj.is_instance_of::<pyo3::types::PyType>() && obj.hasattr("__name__")? && obj.getattr("__name__")?.extract::<String>().is_ok_and(|n| ml_by_name(&n).is_some()) {
        // ml_dtypes' scalar types (ml_dtypes.float8_e4m3fn) without numpy
        // knowing their names.
        obj.getattr("__name__")?.extract()?
    } else {
        let np = py.import("numpy")?;
        match np.getattr("dtype")?.call1((obj,)) {
            Ok(d) => d.getattr("name")?.extract()?,
            Err(_) => return Err(raise("DTypeError", format!("{} is not a dtype", obj.repr()?))),
        }
    };
    let name = if ml_by_name(&name).is_some() || name == "bool_" { name } else {
        // Let NumPy canonicalise names ("f4", "float", "<i8", "?" ...).
        match py.import("numpy")?.getattr("dtype")?.call1((name.as_str(),)) {
            Ok(d) => d.getattr("name")?.extract()?,
            Err(_) => name,
        }
    };
    let name = if name == "bool_" { "bool".to_owned() } else { name };
    DType::from_name(&name).ok_or_else(|| {
        let all: Vec<&str> = DType::ALL.iter().map(|d| d.name()).collect();
        raise("DTypeError", format!("dtype {name} is not supported (blobcore has {})", all.join(", ")))
    })
}

/// The buffer-protocol (struct module) format of `d`, if it has one.
pub fn format(d: DType) -> Option<&'static std::ffi::CStr> {
    Some(match d {
        DType::F32 => c"f",
        DType::I32 => c"i",
        DType::F64 => c"d",
        // NumPy's int64 is C long where long has 64 bits ("q", long long,
        // gives an equal dtype but another scalar type, numpy.longlong).
        DType::I64 => if std::mem::size_of::<std::ffi::c_long>() == 8 { c"l" } else { c"q" },
        DType::U8 => c"B",
        DType::I8 => c"b",
        DType::F16 => c"e",
        DType::Bool => c"?",
        DType::I16 => c"h",
        DType::U16 => c"H",
        DType::U32 => c"I",
        DType::U64 => if std::mem::size_of::<std::ffi::c_ulong>() == 8 { c"L" } else { c"Q" },
        DType::BF16 | DType::F8E4M3Fn | DType::F8E5M2 | DType::F8E8M0Fnu => return None,
    })
}

/// The dtype of a buffer-protocol format and item size (native byte order).
pub fn from_format(fmt: &str, itemsize: usize) -> Option<DType> {
    let f = fmt.trim_start_matches(['@', '=', '<']);
    if cfg!(target_endian = "little") && (f.starts_with('>') || f.starts_with('!')) {
        return None;
    }
    let d = match f {
        "f" => DType::F32,
        "d" => DType::F64,
        "e" => DType::F16,
        "b" => DType::I8,
        "B" => DType::U8,
        "?" => DType::Bool,
        "h" if itemsize == 2 => DType::I16,
        "H" if itemsize == 2 => DType::U16,
        "i" | "l" | "q" | "n" if itemsize == 4 => DType::I32,
        "i" | "l" | "q" | "n" if itemsize == 8 => DType::I64,
        "I" | "L" | "Q" | "N" if itemsize == 4 => DType::U32,
        "I" | "L" | "Q" | "N" if itemsize == 8 => DType::U64,
        _ => return None,
    };
    (d.size() == itemsize).then_some(d)
}
