//! dtypes: blobcore's `DType` <-> the Python dtype objects exported as
//! `bc.float32` ... (NumPy dtypes; `bc.bfloat16` is ml_dtypes' bfloat16
//! when that package is installed, else a marker object), plus the
//! buffer-protocol format characters.

use crate::errors::raise;
use blobcore::DType;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

static OBJECTS: PyOnceLock<Vec<Py<PyAny>>> = PyOnceLock::new();

/// The Python object for `d` (`numpy.dtype("float32")` ...).
pub fn to_py(py: Python<'_>, d: DType) -> PyResult<Bound<'_, PyAny>> {
    let v = OBJECTS.get_or_try_init(py, || -> PyResult<Vec<Py<PyAny>>> {
        let m = py.import("blobcore._dtypes")?;
        DType::ALL.iter().map(|d| m.getattr(d.name()).map(Bound::unbind)).collect()
    })?;
    let i = DType::ALL.iter().position(|x| *x == d).unwrap_or(0);
    Ok(v[i].bind(py).clone())
}

/// Parses a dtype argument: `None` (float32), a name, a NumPy dtype or
/// scalar type, or `bc.bfloat16`.
pub fn from_py(obj: Option<&Bound<'_, PyAny>>) -> PyResult<DType> {
    let Some(obj) = obj else { return Ok(DType::F32) };
    if obj.is_none() {
        return Ok(DType::F32);
    }
    let py = obj.py();
    let name: String = if let Ok(s) = obj.cast::<PyString>() {
        s.to_str()?.to_owned()
    } else if obj.hasattr("name")? && obj.getattr("name")?.extract::<String>().is_ok_and(|n| n == "bfloat16") {
        "bfloat16".to_owned()
    } else {
        let np = py.import("numpy")?;
        match np.getattr("dtype")?.call1((obj,)) {
            Ok(d) => d.getattr("name")?.extract()?,
            Err(_) => return Err(raise("DTypeError", format!("{} is not a dtype", obj.repr()?))),
        }
    };
    let name = if name == "bfloat16" { name } else {
        // Let NumPy canonicalise names ("f4", "float", "<i8" ...).
        match py.import("numpy")?.getattr("dtype")?.call1((name.as_str(),)) {
            Ok(d) => d.getattr("name")?.extract()?,
            Err(_) => name,
        }
    };
    DType::ALL
        .iter()
        .copied()
        .find(|d| d.name() == name)
        .ok_or_else(|| raise("DTypeError", format!("dtype {name} is not supported (blobcore has float32, int32, float64, int64, uint8, int8, float16, bfloat16)")))
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
        DType::BF16 => return None,
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
        "i" | "l" | "q" | "n" if itemsize == 4 => DType::I32,
        "i" | "l" | "q" | "n" if itemsize == 8 => DType::I64,
        _ => return None,
    };
    (d.size() == itemsize).then_some(d)
}
