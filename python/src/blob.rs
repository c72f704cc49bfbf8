//! `bc.Blob` and `bc.Engine`.

use crate::args::{as_named_dim, axis_pair, udims, uidx};
use crate::arrays;
use crate::engine::{engine_of, PyEngine};
use crate::gil::run;
use crate::handle::PyBlob;
use crate::buffers::{BufferContext, Held, Mode};
use crate::indexing::{self, Entries};
use crate::dtypes;
use crate::npyapi;
use crate::errors::{core, raise};
use crate::exports::{self, Foreign};
use blobcore::{Blob, DType, Engine, Shape};
use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use std::ffi::c_int;
use std::ptr::NonNull;

/// A sequence of non-negative indices (Caffe's `vector<int>` index), or
/// None for anything else (an integer).
fn index_list(obj: &Bound<'_, PyAny>) -> PyResult<Option<Vec<usize>>> {
    if obj.is_instance_of::<pyo3::types::PyInt>() || obj.extract::<i64>().is_ok() {
        return Ok(None);
    }
    let v: Vec<i64> = obj.extract()?;
    Ok(Some(v.iter().map(|&i| uidx(i, "index")).collect::<PyResult<Vec<_>>>()?))
}

/// `value` packed for the element at `at` as NumPy's `a[at] = value`
/// converts it. NumPy checks the index before the value, so when both are
/// bad the index's IndexError is the one raised.
fn pack_at(py: Python<'_>, b: &Blob, at: &[i64], value: &Bound<'_, PyAny>) -> PyResult<Option<blobcore::Scalar>> {
    match converted(py, b.dtype(), value) {
        Err(e) => {
            core(b.check_writable())?;
            match b.get_element(at) {
                Err(bad @ blobcore::Error::OutOfRange(_)) => core(Err(bad)),
                _ => Err(e),
            }
        }
        packed => packed,
    }
}

/// `value` as one element of `b`'s dtype ([`element_of`]); a value that
/// does not convert into a read-only blob is that blob's ReadOnlyError, as
/// NumPy judges writability first (checked only then: the store checks it
/// on the way in).
fn element_for(py: Python<'_>, b: &Blob, value: &Bound<'_, PyAny>) -> PyResult<blobcore::Scalar> {
    element_of(py, b.dtype(), value).or_else(|e| {
        core(b.check_writable())?;
        Err(e)
    })
}

/// `value` as one `dtype` element, converted as NumPy's `a[...] = value`
/// converts it (its errors included); where NumPy has no such dtype
/// (float8 and bfloat16 without ml_dtypes), as the core converts a double.
fn element_of(py: Python<'_>, dtype: DType, value: &Bound<'_, PyAny>) -> PyResult<blobcore::Scalar> {
    if let Some(s) = rounded_once(dtype, value)? {
        return Ok(s);
    }
    // A Python number into an ml_dtypes dtype before ml_dtypes is loaded:
    // one rounding from the double, as ml_dtypes rounds it, without
    // importing it (most of a second).
    if dtypes::ml_dtype(dtype).is_some() && indexing::is_plain_scalar(value) && !dtypes::ml_reachable(py)? {
        return core(blobcore::Scalar::from_f64(dtype, value.extract::<f64>()?));
    }
    match npyapi::pack(py, dtype, value)? {
        Some(s) => Ok(s),
        None => core(blobcore::Scalar::from_f64(dtype, value.extract::<f64>()?)),
    }
}

/// `value` as one `dtype` element as NumPy's `a[i] = value` converts it
/// ([`rounded_once`] first); None without NumPy's API or dtype.
fn converted(py: Python<'_>, dtype: DType, value: &Bound<'_, PyAny>) -> PyResult<Option<blobcore::Scalar>> {
    match rounded_once(dtype, value)? {
        Some(s) => Ok(Some(s)),
        None => npyapi::pack(py, dtype, value),
    }
}

/// A Python float (`numpy.float64` too) or integer (NumPy's integer
/// scalars too; not bool) into a float dtype, rounded once by the core
/// from the value itself. NumPy converts an integer through a double,
/// which rounds twice past 2^53 (`2**60 + 2**36 + 1` became float32 2^60,
/// not 2^60 + 2^37), and ml_dtypes before 0.7 converts a float through
/// float32 (bfloat16 `1 + 2**-8 + 2**-40` became 1.0, not 1.0078125).
/// None for anything else, and for integers of 2^128 or more into
/// float64 (NumPy's double, rounded once).
fn rounded_once(dtype: DType, value: &Bound<'_, PyAny>) -> PyResult<Option<blobcore::Scalar>> {
    if !dtype.is_float() {
        return Ok(None);
    }
    if let Ok(f) = value.cast::<pyo3::types::PyFloat>() {
        return core(blobcore::Scalar::from_f64(dtype, f.value())).map(Some);
    }
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Ok(None);
    }
    let int = value.is_instance_of::<pyo3::types::PyInt>() || npyapi::is_numpy_integer(value.py(), value)?;
    if !int {
        return Ok(None);
    }
    let (negative, magnitude) = match value.extract::<i128>() {
        Ok(v) => (v < 0, v.unsigned_abs()),
        Err(_) => match value.extract::<u128>() {
            Ok(v) => (false, v),
            Err(_) => match value.neg().and_then(|n| n.extract::<u128>()) {
                Ok(v) => (true, v),
                // 2^128 or more: float64 takes it as NumPy does (a double,
                // rounded once, or OverflowError past its range); every
                // other float dtype overflows as from u128::MAX, which is
                // past each one's largest value by more than half an ulp.
                Err(_) if dtype == DType::F64 => return Ok(None),
                Err(_) => (value.lt(0)?, u128::MAX),
            },
        },
    };
    core(blobcore::Scalar::from_integer(dtype, negative, magnitude)).map(Some)
}

/// Caffe's (n, c, h, w), each non-negative.
fn legacy_index(n: i64, c: i64, h: i64, w: i64) -> PyResult<[usize; 4]> {
    Ok([uidx(n, "n")?, uidx(c, "c")?, uidx(h, "h")?, uidx(w, "w")?])
}

/// A lazy blob of these dims (rank 0..=32), as `Blob.tensor` makes it;
/// `vector` and `matrix` pass their dims on the stack, not in a `Vec`.
fn of_dims(dims: &[i64], dtype: Option<&Bound<'_, PyAny>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<PyBlob> {
    Ok(PyBlob::new(core(Blob::new(&engine_of(engine)?, dtypes::from_py(dtype)?, core(Shape::from_i64(dims))?))?))
}

/// The iterator of `iter(blob)`: row `i` is made when it is asked for.
#[pyclass(name = "_BlobIter", module = "blobcore", frozen)]
pub struct BlobIter {
    blob: Py<PyBlob>,
    next: std::sync::atomic::AtomicUsize,
    len: usize,
}

#[pymethods]
impl BlobIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if i >= self.len {
            self.next.store(self.len, std::sync::atomic::Ordering::Relaxed);
            return Ok(None);
        }
        let key = (i as i64).into_pyobject(py)?.into_any();
        PyBlob::__getitem__(self.blob.bind(py), &key).map(Some)
    }
}

/// What `__reduce__` returns: `Blob._from_state` and its arguments.
type Reduced<'py> = (Bound<'py, PyAny>, (Vec<i64>, &'static str, Bound<'py, PyBytes>));

fn i64s(v: &[usize]) -> Vec<i64> {
    v.iter().map(|&d| d as i64).collect()
}

#[pymethods]
impl PyBlob {
    // ------------------------------------------------------------ constructors

    /// NeoML ``CreateDataBlob``: dims (BatchLength, BatchWidth, 1, 1, 1, 1, Channels).
    #[staticmethod]
    #[pyo3(signature = (batch_length, batch_width, channels, dtype=None, engine=None))]
    fn data(batch_length: i64, batch_width: i64, channels: i64, dtype: Option<&Bound<'_, PyAny>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Self> {
        let d = udims(&[batch_length, batch_width, channels])?;
        Ok(Self::new(core(Blob::data(&engine_of(engine)?, dtypes::from_py(dtype)?, d[0], d[1], d[2]))?))
    }

    /// NeoML ``CreateListBlob``: (BatchLength, BatchWidth, ListSize, 1, 1, 1, Channels).
    #[staticmethod]
    #[pyo3(signature = (batch_length, batch_width, list_size, channels, dtype=None, engine=None))]
    fn list(batch_length: i64, batch_width: i64, list_size: i64, channels: i64, dtype: Option<&Bound<'_, PyAny>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Self> {
        let d = udims(&[batch_length, batch_width, list_size, channels])?;
        Ok(Self::new(core(Blob::list(&engine_of(engine)?, dtypes::from_py(dtype)?, d[0], d[1], d[2], d[3]))?))
    }

    /// NeoML ``Create2DImageBlob``: (BatchLength, BatchWidth, 1, Height, Width, 1, Channels).
    #[staticmethod]
    #[pyo3(signature = (batch_length, batch_width, height, width, channels, dtype=None, engine=None))]
    #[allow(clippy::too_many_arguments)]
    fn image2d(batch_length: i64, batch_width: i64, height: i64, width: i64, channels: i64, dtype: Option<&Bound<'_, PyAny>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Self> {
        let d = udims(&[batch_length, batch_width, height, width, channels])?;
        Ok(Self::new(core(Blob::image2d(&engine_of(engine)?, dtypes::from_py(dtype)?, d[0], d[1], d[2], d[3], d[4]))?))
    }

    /// NeoML ``Create3DImageBlob``: (BatchLength, BatchWidth, 1, Height, Width, Depth, Channels).
    #[staticmethod]
    #[pyo3(signature = (batch_length, batch_width, height, width, depth, channels, dtype=None, engine=None))]
    #[allow(clippy::too_many_arguments)]
    fn image3d(batch_length: i64, batch_width: i64, height: i64, width: i64, depth: i64, channels: i64, dtype: Option<&Bound<'_, PyAny>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Self> {
        let d = udims(&[batch_length, batch_width, height, width, depth, channels])?;
        Ok(Self::new(core(Blob::image3d(&engine_of(engine)?, dtypes::from_py(dtype)?, d[0], d[1], d[2], d[3], d[4], d[5]))?))
    }

    /// A blob with these dims (rank 0..=32). Reads as zeros; nothing is
    /// allocated until touched.
    #[staticmethod]
    #[pyo3(signature = (dims, dtype=None, engine=None))]
    fn tensor(dims: Vec<i64>, dtype: Option<&Bound<'_, PyAny>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Self> {
        of_dims(&dims, dtype, engine)
    }

    /// A rank-1 blob of ``n`` elements.
    #[staticmethod]
    #[pyo3(signature = (n, dtype=None, engine=None))]
    fn vector(n: i64, dtype: Option<&Bound<'_, PyAny>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Self> {
        of_dims(&[n], dtype, engine)
    }

    /// A rank-2 blob.
    #[staticmethod]
    #[pyo3(signature = (height, width, dtype=None, engine=None))]
    fn matrix(height: i64, width: i64, dtype: Option<&Bound<'_, PyAny>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Self> {
        of_dims(&[height, width], dtype, engine)
    }

    /// A blob from a NumPy array (or anything with the buffer protocol).
    /// ``copy=True`` copies (any layout; array-likes are converted by
    /// NumPy); ``copy=False`` shares the array's memory and keeps the array
    /// alive — it must be C-contiguous and aligned (read-only arrays give
    /// read-only blobs). An array over a blob's own memory
    /// (``np.asarray(x)`` and NumPy's views of it) gives a blob on that
    /// blob's storage, as a view of it would be, holding nothing of NumPy's.
    ///
    /// ``dtype`` (Serrano's typed construction) converts as
    /// ``numpy.asarray(array, dtype)`` does, so a nested list becomes a
    /// blob of that dtype; with ``copy=False`` the array must already have
    /// it (a conversion cannot share memory).
    #[staticmethod]
    #[pyo3(signature = (array, copy=true, engine=None, dtype=None))]
    fn from_numpy(py: Python<'_>, array: &Bound<'_, PyAny>, copy: bool, engine: Option<PyRef<'_, PyEngine>>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let engine = engine_of(engine)?;
        let dtype = match dtype {
            Some(d) if !d.is_none() => Some(dtypes::from_py(Some(d))?),
            _ => None,
        };
        // The common call first, `from_numpy(ndarray)`: copied as it is.
        if copy && dtype.is_none() && arrays::is_ndarray(py, array)? {
            return Ok(Self::new(arrays::copy_array(py, array, &engine)?));
        }
        if let Ok(b) = array.cast::<PyBlob>() {
            let b = &b.get().b;
            if !copy {
                return Err(raise("InvalidArgumentError", "from_numpy(copy=False) of a Blob: use the blob itself, or a view"));
            }
            return Ok(Self::new(core(match dtype {
                Some(d) if d != b.dtype() => b.cast(d),
                _ => b.copy(),
            })?));
        }
        let array = match dtype {
            Some(d) => arrays::as_dtype(py, array, d, copy)?,
            None => array.clone(),
        };
        if copy {
            return Ok(Self::new(arrays::copy_array(py, &array, &engine)?));
        }
        Ok(Self::new(arrays::wrap_array(&array, &engine)?))
    }

    /// Serrano's ``Tensor(repeatingValue:tensorShape:)``, ``numpy.full``:
    /// a blob of ``dims`` with every element ``value`` (default dtype
    /// float32), converted as ``ndarray.fill`` converts it: exactly for
    /// Python ints (int64 and uint64 past 2**53 included), floats rounded
    /// to nearest even, integers truncated toward zero; OverflowError for
    /// a value an integer dtype cannot hold, ValueError for NaN.
    #[staticmethod]
    #[pyo3(signature = (dims, value, dtype=None, engine=None))]
    fn full(py: Python<'_>, dims: Vec<i64>, value: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Self> {
        let shape = core(Shape::from_i64(&dims))?;
        let value = element_of(py, dtypes::from_py(dtype)?, value)?;
        Ok(Self::new(core(Blob::full_element(&engine_of(engine)?, shape.dims(), &value))?))
    }

    /// Serrano's shape equality: the same shape (exactly, as NumPy's
    /// ``shape ==``) and, with ``dtype=True`` (the default), the same dtype.
    #[pyo3(signature = (other, dtype=true))]
    fn same_shape(&self, other: PyRef<'_, PyBlob>, dtype: bool) -> bool {
        self.b.same_shape(&other.b, dtype)
    }

    /// Rebuilds a blob pickled with protocol 5 (used by ``__reduce_ex__``):
    /// wraps ``buffer`` without copying (read-only when it is), or copies
    /// it when it is not aligned for the dtype.
    #[staticmethod]
    fn _from_buffer(py: Python<'_>, dims: Vec<i64>, dtype: &Bound<'_, PyAny>, buffer: &Bound<'_, PyAny>) -> PyResult<Self> {
        let dtype = dtypes::from_py(Some(dtype))?;
        let shape = core(Shape::from_i64(&dims))?;
        let need = core(shape.byte_size(dtype))?;
        let buf = Foreign::get(buffer, false)?;
        if buf.len() != need || !buf.is_c_contiguous() {
            return Err(raise("FormatError", format!("pickled blob: {} bytes received for {need}", buf.len())));
        }
        let engine = Engine::cpu();
        let aligned = (buf.ptr() as usize).is_multiple_of(dtype.size());
        match NonNull::new(buf.ptr()) {
            Some(ptr) if aligned && need > 0 => {
                let read_only = buf.readonly();
                let release: blobcore::ReleaseFn = Box::new(move || drop(buf));
                // SAFETY: the buffer's exporter keeps `need` bytes valid
                // (writable unless read-only) until `release` gives it back.
                Ok(Self::new(core(unsafe { Blob::wrap_lent(&engine, dtype, shape, ptr, need, Some(release), read_only) })?))
            }
            _ => {
                let b = core(Blob::new(&engine, dtype, shape))?;
                let bytes = buf.bytes();
                let dst = b.clone();
                run(py, b.is_small(), || dst.copy_from_bytes(bytes))?;
                Ok(Self::new(b))
            }
        }
    }

    /// Rebuilds a pickled blob (used by ``__reduce__``).
    #[staticmethod]
    fn _from_state(dims: Vec<i64>, dtype: &Bound<'_, PyAny>, data: &Bound<'_, PyBytes>) -> PyResult<Self> {
        let (dtype, shape) = (dtypes::from_py(Some(dtype))?, core(Shape::from_i64(&dims))?);
        // The length is checked before anything is allocated.
        let need = core(shape.byte_size(dtype))?;
        if data.as_bytes().len() != need {
            return Err(raise("FormatError", format!("pickled blob: {} bytes received for {need}", data.as_bytes().len())));
        }
        let b = core(Blob::new(&Engine::cpu(), dtype, shape))?;
        core(b.copy_from_bytes(data.as_bytes()))?;
        Ok(Self::new(b))
    }

    // ----------------------------------------------------------------- queries

    /// The dims, outermost first.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.shape_tuple(py)
    }

    /// The dtype (a NumPy dtype: ``b.dtype == numpy.float32``).
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        dtypes::to_py(py, self.b.dtype())
    }

    /// Number of axes.
    #[getter]
    fn ndim(&self) -> usize {
        self.b.rank()
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.b.count()
    }

    /// Size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.b.byte_size()
    }

    /// Elements the memory holds without reallocating (Caffe's capacity).
    #[getter]
    fn capacity(&self) -> usize {
        self.b.capacity()
    }

    /// BatchLength * BatchWidth * ListSize (rank <= 7).
    #[getter]
    fn object_count(&self) -> PyResult<usize> {
        core(self.b.object_count())
    }

    /// Height * Width * Depth * Channels (rank <= 7).
    #[getter]
    fn object_size(&self) -> PyResult<usize> {
        core(self.b.object_size())
    }

    /// Height * Width * Depth (rank <= 7).
    #[getter]
    fn geometrical_size(&self) -> PyResult<usize> {
        core(self.b.geometrical_size())
    }

    /// The size of an axis (int, negative from the end) or of a named dim (``bc.Dim``).
    fn dim(&self, axis: &Bound<'_, PyAny>) -> PyResult<usize> {
        match as_named_dim(axis)? {
            Some(d) => core(self.b.named_dim(d)),
            None => core(self.b.dim(axis.extract::<isize>()?)),
        }
    }

    /// Caffe ``count(start, end)``: the product of dims in [start, end).
    #[pyo3(signature = (start=0, end=None))]
    fn count(&self, start: i64, end: Option<i64>) -> PyResult<usize> {
        let end = match end {
            Some(e) => uidx(e, "end axis")?,
            None => self.b.rank(),
        };
        core(self.b.count_range(uidx(start, "start axis")?, end))
    }

    /// Caffe ``LegacyShape(index)`` (rank <= 4): ``index`` in -4..4;
    /// axes before the blob's first (or past its last) read as 1.
    fn legacy_shape(&self, index: isize) -> PyResult<usize> {
        core(self.b.legacy_shape(index))
    }

    /// Caffe ``offset(n, c=0, h=0, w=0)`` over the legacy shape (rank <= 4).
    #[pyo3(signature = (n, c = 0, h = 0, w = 0))]
    fn legacy_offset(&self, n: i64, c: i64, h: i64, w: i64) -> PyResult<usize> {
        let [n, c, h, w] = legacy_index(n, c, h, w)?;
        core(self.b.legacy_offset(n, c, h, w))
    }

    /// Caffe ``data_at``: ``data_at(index)`` with a sequence of leading
    /// indices, or ``data_at(n, c=0, h=0, w=0)`` on the legacy shape; the
    /// element as a float.
    #[pyo3(signature = (n, c = 0, h = 0, w = 0))]
    fn data_at(&self, n: &Bound<'_, PyAny>, c: i64, h: i64, w: i64) -> PyResult<f64> {
        if let Some(idx) = index_list(n)? {
            return core(self.b.data_at_index(&idx));
        }
        let [n, c, h, w] = legacy_index(n.extract()?, c, h, w)?;
        core(self.b.data_at(n, c, h, w))
    }

    /// Caffe ``diff_at``: as ``data_at``, for the diff (0 before it exists).
    #[pyo3(signature = (n, c = 0, h = 0, w = 0))]
    fn diff_at(&self, n: &Bound<'_, PyAny>, c: i64, h: i64, w: i64) -> PyResult<f64> {
        if let Some(idx) = index_list(n)? {
            return core(self.b.diff_at_index(&idx));
        }
        let [n, c, h, w] = legacy_index(n.extract()?, c, h, w)?;
        core(self.b.diff_at(n, c, h, w))
    }

    /// Caffe ``ShapeEquals(proto)``: whether serialized ``BlobProto``
    /// bytes describe this blob's shape (legacy fields compare the legacy
    /// shape). Malformed bytes raise FormatError.
    fn shape_equals(&self, proto: &[u8]) -> PyResult<bool> {
        core(self.b.shape_equals_caffe(proto))
    }

    /// Caffe ``shape_string()``: ``"64 3 28 28 (150528)"``.
    fn shape_string(&self) -> String {
        self.b.shape_string()
    }

    /// Caffe ``ShareData``: this blob uses ``other``'s data memory from now
    /// on (equal counts and dtypes; BusyError while something shares this
    /// blob's current memory).
    fn share_data(&self, other: PyRef<'_, PyBlob>) -> PyResult<()> {
        core(self.b.share_data(&other.b))
    }

    /// Caffe ``ShareDiff``: this blob's diff uses ``other``'s diff memory.
    fn share_diff(&self, other: PyRef<'_, PyBlob>) -> PyResult<()> {
        core(self.b.share_diff(&other.b))
    }

    /// Caffe ``CanonicalAxisIndex``: a negative axis counted from the end.
    fn canonical_axis(&self, axis: isize) -> PyResult<usize> {
        core(self.b.canonical_axis(axis))
    }

    /// Caffe ``offset``: the row-major offset of leading indices.
    fn offset(&self, index: Vec<i64>) -> PyResult<usize> {
        let idx = index.iter().map(|&i| uidx(i, "index")).collect::<PyResult<Vec<_>>>()?;
        core(self.b.offset(&idx))
    }

    /// Caffe legacy ``num`` (axis 0; rank <= 4).
    #[getter]
    fn num(&self) -> PyResult<usize> {
        core(self.b.num())
    }

    /// Caffe legacy ``channels`` (axis 1; rank <= 4).
    #[getter]
    fn channels(&self) -> PyResult<usize> {
        core(self.b.channels())
    }

    /// Caffe legacy ``height`` (axis 2; rank <= 4).
    #[getter]
    fn height(&self) -> PyResult<usize> {
        core(self.b.height())
    }

    /// Caffe legacy ``width`` (axis 3; rank <= 4).
    #[getter]
    fn width(&self) -> PyResult<usize> {
        core(self.b.width())
    }

    /// Where the current data lives: "uninitialized", "cpu", "gpu" or "synced".
    #[getter]
    fn head(&self) -> &'static str {
        self.b.head().name()
    }

    /// The engine the blob lives on.
    #[getter]
    fn engine(&self) -> PyEngine {
        PyEngine { e: self.b.engine().clone() }
    }

    /// ``numpy.shares_memory``: True when some byte of memory is an
    /// element of both blobs, however each reaches it (views, or the same
    /// memory through NumPy, DLPack, pickle buffers or ``blob_wrap``).
    /// Exact for strided views.
    fn shares_memory(&self, other: PyRef<'_, PyBlob>) -> bool {
        self.b.shares_memory(&other.b)
    }

    /// ``numpy.may_share_memory``: True when the bounds of the two blobs'
    /// memory meet (constant time; may be True for interleaved views that
    /// share nothing).
    fn may_share_memory(&self, other: PyRef<'_, PyBlob>) -> bool {
        self.b.may_share_memory(&other.b)
    }

    // ----------------------------------------------------------------- layouts

    /// A blob laid out as ``desc`` says (its memory sized by the blocked
    /// dims and strides, padding included).
    #[staticmethod]
    #[pyo3(signature = (desc, engine=None))]
    fn with_desc(desc: PyRef<'_, crate::layout::PyTensorDesc>, engine: Option<PyRef<'_, PyEngine>>) -> PyResult<Self> {
        Ok(Self::new(core(Blob::with_desc(&engine_of(engine)?, &desc.d))?))
    }

    /// The blob's TensorDesc (dense row-major by default).
    #[getter]
    fn desc(&self) -> crate::layout::PyTensorDesc {
        crate::layout::PyTensorDesc { d: self.b.desc() }
    }

    /// The blob's layout (``bc.Layout``).
    #[getter]
    fn layout<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::layout::layout_to_py(py, self.b.layout())
    }

    /// True for dense row-major data.
    #[getter]
    fn is_dense(&self) -> bool {
        self.b.is_dense()
    }

    /// A region (ROI) view of ``[begin, end)`` per dim: shares memory and
    /// keeps the strides (``numpy.asarray`` of it is a strided view).
    fn region(&self, begin: Vec<i64>, end: Vec<i64>) -> PyResult<Self> {
        let bg = begin.iter().map(|&v| uidx(v, "begin")).collect::<PyResult<Vec<_>>>()?;
        let en = end.iter().map(|&v| uidx(v, "end")).collect::<PyResult<Vec<_>>>()?;
        Ok(Self::new(core(self.b.region(&bg, &en))?))
    }

    /// Copies ``src`` into this blob converting between layouts (same dims
    /// and dtype): NCHW, NHWC, blocked, strided regions.
    fn reorder_from(&self, py: Python<'_>, src: PyRef<'_, PyBlob>) -> PyResult<()> {
        let (b, s) = (self.b.clone(), src.b.clone());
        run(py, b.is_small(), move || b.reorder_from(&s))
    }

    // ------------------------------------------------------------------- views

    /// A window of ``size`` rows (default 1, as NeoML) along axis 0 at
    /// parent position 0 (NeoML ``CreateWindowBlob``): shares memory and
    /// keeps it alive.
    #[pyo3(signature = (size = 1))]
    fn window(&self, size: i64) -> PyResult<Self> {
        Ok(Self::new(core(self.b.window(uidx(size, "window size")?))?))
    }

    /// Serrano slice: the sub-blob at these leading indices, sharing memory.
    fn slice(&self, index: Vec<i64>) -> PyResult<Self> {
        let idx = index.iter().map(|&i| uidx(i, "slice index")).collect::<PyResult<Vec<_>>>()?;
        Ok(Self::new(core(self.b.slice(&idx))?))
    }

    /// A window's position along its parent's axis 0.
    #[getter]
    fn parent_pos(&self) -> PyResult<usize> {
        core(self.b.parent_pos())
    }

    /// Moves a window (bounds-checked).
    fn set_parent_pos(&self, pos: i64) -> PyResult<()> {
        core(self.b.set_parent_pos(pos))
    }

    /// Moves a window by ``shift`` rows (bounds-checked).
    fn shift_parent_pos(&self, shift: i64) -> PyResult<()> {
        core(self.b.shift_parent_pos(shift))
    }

    /// The blob a view was made from (None for a blob that is not a view).
    #[getter]
    fn parent(&self) -> Option<Self> {
        self.b.parent().map(Self::new)
    }

    /// The blob that owns the memory (itself when not a view).
    #[getter]
    fn owner(&self) -> Self {
        Self::new(self.b.owner())
    }

    /// True for windows and slices.
    #[getter]
    fn is_view(&self) -> bool {
        self.b.is_view()
    }

    // ----------------------------------------------------------- shared memory

    /// True when the memory is a shared memory file other processes can
    /// map: after :meth:`share_memory`, for views of such a blob, and for
    /// blobs received through ``multiprocessing`` or :func:`from_shared_fd`.
    #[getter]
    fn is_shared(&self) -> bool {
        self.b.is_shared()
    }

    /// Moves the memory into shared memory in place (PyTorch's
    /// ``share_memory_()``) and returns the blob: values, shape and layout
    /// stay. A no-op when it already is. Raises ``BusyError`` while views,
    /// exports (arrays, memoryviews, DLPack capsules) or buffers use the
    /// current memory, and for writable memory the blob does not own
    /// (``asblob`` of an array, ``from_dlpack``: its owner would stop
    /// seeing the blob's writes; share a ``copy()``). A read-only blob
    /// stays read-only, in a file no
    /// process can write. Shared blobs cross ``multiprocessing`` (queues,
    /// pipes, pools, executors) as a file descriptor, in constant time,
    /// and both sides see each other's writes; plain ``pickle`` still
    /// copies the data.
    fn share_memory(slf: &Bound<'_, Self>) -> PyResult<Py<Self>> {
        let b = slf.get().b.clone();
        run(slf.py(), b.is_small(), || b.share_memory())?;
        Ok(slf.clone().unbind())
    }

    /// ``(fd, offset)``: a new descriptor of a dense shared blob's memory
    /// file (close-on-exec; close it when done) and the byte offset of its
    /// first element, for :func:`from_shared_fd` in another process (send
    /// the descriptor with ``socket.send_fds``). ``InvalidArgumentError``
    /// when the blob is not shared.
    fn shared_fd(&self) -> PyResult<(i32, u64)> {
        let (fd, offset) = core(self.b.shared_fd())?;
        Ok((std::os::fd::IntoRawFd::into_raw_fd(fd), offset))
    }

    /// ``(fd, layout)``: a new descriptor of the shared memory file (the
    /// caller closes it) and the bytes :meth:`_from_shared_handle` rebuilds
    /// the blob from (used by the ``multiprocessing`` reducer).
    fn _shared_handle<'py>(&self, py: Python<'py>) -> PyResult<(i32, Bound<'py, PyBytes>)> {
        let h = core(self.b.shared_handle())?;
        let layout = PyBytes::new(py, &h.layout_bytes());
        Ok((std::os::fd::IntoRawFd::into_raw_fd(h.fd), layout))
    }

    /// Rebuilds a blob from :meth:`_shared_handle`'s descriptor (duplicated:
    /// the caller closes its own) and layout bytes.
    #[staticmethod]
    fn _from_shared_handle(py: Python<'_>, fd: i32, layout: &[u8]) -> PyResult<Self> {
        let owned = crate::share::dup_fd(fd)?;
        let h = core(blobcore::SharedHandle::from_layout_bytes(owned, layout))?;
        Ok(Self::new(run(py, false, || Blob::from_shared_handle(&Engine::cpu(), &h))?))
    }

    // ------------------------------------------------------------- shape edits

    /// Caffe ``Reshape``: keeps the memory when the new count fits the
    /// capacity; growing past it reallocates, which raises ``BusyError``
    /// while views, buffers or exports (arrays, memoryviews) share it, and
    /// for writable memory the blob does not own (``asblob`` of an array,
    /// ``from_dlpack``: the owner would stop seeing the blob).
    fn reshape(&self, dims: Vec<i64>) -> PyResult<()> {
        core(self.b.reshape(&udims(&dims)?))
    }

    /// NeoML ``ReinterpretDimensions``: new dims, same count, same data.
    fn reinterpret(&self, dims: Vec<i64>) -> PyResult<()> {
        core(self.b.reinterpret(&udims(&dims)?))
    }

    // ------------------------------------------------------------------ copies

    /// An independent copy (NeoML ``GetCopy``).
    fn copy(&self, py: Python<'_>) -> PyResult<Self> {
        // Borrowed, not cloned, into the closure: two atomic reference
        // count updates less on `s.copy()` of a few elements.
        let b = &self.b;
        Ok(Self::new(run(py, b.is_small(), || b.copy())?))
    }

    /// A new blob of the same dims reading as zeros (NeoML ``GetClone``),
    /// optionally of another dtype.
    #[pyo3(signature = (dtype=None))]
    fn clone(&self, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let d = match dtype {
            Some(d) if !d.is_none() => dtypes::from_py(Some(d))?,
            _ => self.b.dtype(),
        };
        Ok(Self::new(core(self.b.clone_as(d))?))
    }

    /// ``numpy.swapaxes(b, d1, d2)`` as a new dense blob. With two
    /// ``bc.Dim`` members, NeoML's ``GetTransposed`` on the blob padded to
    /// 7 named dims (the result keeps the rank while the padding stays 1,
    /// else has rank 7).
    fn transposed(&self, py: Python<'_>, d1: &Bound<'_, PyAny>, d2: &Bound<'_, PyAny>) -> PyResult<Self> {
        let b = self.b.clone();
        let out = match axis_pair(d1, d2)? {
            Ok((x, y)) => run(py, b.is_small(), move || b.transposed(x, y))?,
            Err((x, y)) => run(py, b.is_small(), move || b.transposed_dims(x, y))?,
        };
        Ok(Self::new(out))
    }

    /// Writes ``swapaxes(src, d1, d2)`` into this blob (two ``bc.Dim``
    /// members: on the 7 padded named dims).
    fn transpose_from(&self, py: Python<'_>, src: PyRef<'_, PyBlob>, d1: &Bound<'_, PyAny>, d2: &Bound<'_, PyAny>) -> PyResult<()> {
        let (b, s) = (self.b.clone(), src.b.clone());
        match axis_pair(d1, d2)? {
            Ok((x, y)) => run(py, b.is_small(), move || b.transpose_from(&s, x, y)),
            Err((x, y)) => run(py, b.is_small(), move || b.transpose_from_dims(&s, x, y)),
        }
    }

    /// NeoML ``HasEqualDimensions``: True when the 7 padded named dims are
    /// equal (``[2, 3]`` and ``[2, 3, 1]`` are); blobs of rank > 7 compare
    /// their dims exactly. ``b.shape == other.shape`` is NumPy's equality.
    fn has_equal_dims(&self, other: PyRef<'_, PyBlob>) -> bool {
        self.b.has_equal_dims(&other.b)
    }

    /// ``numpy.transpose(b, axes)`` as a new dense blob (a copy; ``b.T``
    /// and ``b.transpose`` give views). Negative axes count from the end.
    fn permuted(&self, py: Python<'_>, axes: Vec<isize>) -> PyResult<Self> {
        let b = self.b.clone();
        Ok(Self::new(run(py, b.is_small(), move || b.permuted(&axes))?))
    }

    /// Writes ``numpy.transpose(src, axes)`` into this blob (any layout).
    fn permute_from(&self, py: Python<'_>, src: PyRef<'_, PyBlob>, axes: Vec<isize>) -> PyResult<()> {
        let (b, s) = (self.b.clone(), src.b.clone());
        run(py, b.is_small(), move || b.permute_from(&s, &axes))
    }

    /// Copies a blob (same dims and dtype) or an array-like into this blob:
    /// the array-like must have the blob's dims, or be a flat sequence of
    /// its element count (NeoML ``CopyFrom``); NumPy converts it to this
    /// blob's dtype. Other shapes are a ShapeError (broadcasting:
    /// ``b[...] = value``).
    ///
    /// With ``copy_diff`` or ``reshape`` (a blob source only) this is
    /// Caffe's ``CopyFrom(source, copy_diff, reshape)``: ``copy_diff``
    /// copies the diff into this blob's diff; ``reshape`` reshapes this
    /// blob like the source when the dims differ (else a ShapeError).
    #[pyo3(signature = (src, copy_diff = false, reshape = false))]
    fn copy_from(&self, py: Python<'_>, src: &Bound<'_, PyAny>, copy_diff: bool, reshape: bool) -> PyResult<()> {
        if let Ok(s) = src.cast::<PyBlob>() {
            let (b, s) = (self.b.clone(), s.get().b.clone());
            if copy_diff || reshape {
                return run(py, b.is_small(), move || b.copy_from_caffe(&s, copy_diff, reshape));
            }
            return run(py, b.is_small(), move || b.copy_from(&s));
        }
        if copy_diff || reshape {
            return Err(PyTypeError::new_err("copy_diff and reshape need a blob source (Caffe's CopyFrom)"));
        }
        let np = py.import("numpy")?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("order", "C")?;
        let arr = np.getattr("asarray")?.call((arrays::asarray_as(py, src, self.b.dtype())?,), Some(&kwargs))?;
        if !self.b.is_dense() {
            // Strided, windowed or laid-out destinations: the values as a
            // fresh dense blob (read before anything is written), then the
            // core's copy into any layout.
            let tmp = arrays::copy_array(py, &arr, self.b.engine())?;
            core(self.b.check_source_dims(&tmp.dims()))?;
            core(tmp.reinterpret(&self.b.dims()))?;
            let b = self.b.clone();
            return run(py, b.is_small(), move || b.copy_from(&tmp));
        }
        // bfloat16 and float8 have no buffer-protocol code: their bits go
        // as uint16 / uint8.
        let (arr, _) = crate::arrays::carried(&arr)?;
        let buf = Foreign::get(&arr, false)?;
        core(self.b.check_source_dims(&buf.shape()))?;
        let b = self.b.clone();
        let (ptr, len) = (buf.ptr() as usize, buf.len());
        // SAFETY: the exporter lent `len` readable bytes at `ptr`, held by
        // `buf` until this call returns; they may be this blob's own memory
        // (numpy.asarray(b)), which the core copies first.
        run(py, b.is_small(), move || unsafe { b.copy_from_host_ptr(ptr as *const u8, len) })?;
        drop(buf);
        Ok(())
    }

    /// NeoML ``CopyTo(dst, size)``: copies the first ``out.size`` elements
    /// (row-major) into ``out``, a writable C-contiguous buffer (a NumPy
    /// array, any shape) of exactly this blob's dtype; no conversion
    /// (DTypeError), and no more elements than the blob has
    /// (InvalidArgumentError).
    fn copy_to(&self, py: Python<'_>, out: &Bound<'_, PyAny>) -> PyResult<()> {
        let (target, ml) = crate::arrays::carried(out)?;
        if target.is_none() {
            return Err(PyTypeError::new_err("copy_to needs a destination buffer, not None"));
        }
        let buf = Foreign::get(&target, true).map_err(|e| raise("ReadOnlyError", format!("copy_to needs a writable destination ({e})")))?;
        if !buf.is_c_contiguous() {
            return Err(raise("InvalidArgumentError", "copy_to needs a C-contiguous destination"));
        }
        let dtype = match ml { Some(d) => d, None => buf.dtype()? };
        let b = self.b.clone();
        let (ptr, len) = (buf.ptr() as usize, buf.len());
        // SAFETY: the exporter lent `len` writable bytes at `ptr`
        // (PyBUF_WRITABLE), held by `buf` until this call returns; they
        // may be this blob's own memory (the core copies with memmove).
        run(py, b.is_small(), move || unsafe { b.copy_to_prefix_ptr(dtype, ptr as *mut u8, len) })?;
        drop(buf);
        Ok(())
    }

    /// ``numpy.ndarray.tolist()``: the data as nested Python lists of
    /// Python scalars (a scalar for rank 0).
    fn tolist<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        arrays::read_only_array(slf)?.call_method0("tolist")
    }

    /// A NumPy array of the data: shares memory when ``copy=False`` (the
    /// default), else an independent copy.
    #[pyo3(signature = (copy=false))]
    fn numpy<'py>(slf: &Bound<'py, Self>, copy: bool) -> PyResult<Bound<'py, PyAny>> {
        if copy {
            // A copy only reads: the GPU head may stay Synced.
            return arrays::read_only_array(slf)?.call_method0("copy");
        }
        slf.py().import("numpy")?.getattr("asarray")?.call1((slf,))
    }

    // -------------------------------------------------------------- operations

    /// ``b += other`` (same dims and dtype; integers wrap). ``other`` may
    /// share memory with ``b`` in any way (``b.add(b)`` doubles): the
    /// result is NumPy's ``a += other.copy()``.
    fn add(&self, py: Python<'_>, other: PyRef<'_, PyBlob>) -> PyResult<()> {
        let (b, o) = (self.b.clone(), other.b.clone());
        run(py, b.is_small(), move || b.add(&o))
    }

    /// Sets every element to zero.
    fn clear(&self, py: Python<'_>) -> PyResult<()> {
        run(py, self.b.is_small(), || self.b.clear())
    }

    /// Sets object ``n`` to zero.
    fn clear_object(&self, n: i64) -> PyResult<()> {
        core(self.b.clear_object(n))
    }

    /// ``ndarray.fill``: sets every element to ``value``, converted as
    /// NumPy converts it (exactly for Python ints, int64 and uint64 past
    /// 2**53 included; floats round to nearest even; integers truncate
    /// toward zero; OverflowError for a value an integer dtype cannot
    /// hold, ValueError for NaN; nothing changes on error).
    fn fill(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = element_for(py, &self.b, value)?;
        run(py, self.b.is_small(), || self.b.fill_element(&value))
    }

    /// Sets every element of object ``n`` to ``value`` (converted as
    /// ``fill`` converts it).
    fn fill_object(&self, py: Python<'_>, n: i64, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let value = element_for(py, &self.b, value)?;
        core(self.b.fill_object_element(n, &value))
    }

    /// Multiplies every element by ``factor``: floats in their own
    /// precision; integers in float64 (NumPy's ``trunc(x * factor)``) where
    /// float64 holds them (|x| <= 2**53), exactly beyond (int64 and uint64
    /// keep their low bits), then truncated toward zero and saturated to
    /// the dtype's range.
    fn scale(&self, py: Python<'_>, factor: f64) -> PyResult<()> {
        run(py, self.b.is_small(), || self.b.scale(factor))
    }

    /// Sum of absolute values, accumulated in float64.
    fn asum(&self, py: Python<'_>) -> PyResult<f64> {
        run(py, self.b.is_small(), || self.b.asum())
    }

    /// Sum of squares, accumulated in float64.
    fn sumsq(&self, py: Python<'_>) -> PyResult<f64> {
        run(py, self.b.is_small(), || self.b.sumsq())
    }

    /// The diff blob (Caffe), created on first use with the same dims.
    #[getter]
    fn diff(&self) -> PyResult<Self> {
        Ok(Self::new(core(self.b.diff())?))
    }

    /// Caffe ``Update``: data -= diff.
    fn update(&self, py: Python<'_>) -> PyResult<()> {
        run(py, self.b.is_small(), || self.b.update())
    }

    // ----------------------------------------------------------------- buffers

    /// ``with b.buffer(pos, size, mode) as arr:`` — an ndarray view of
    /// elements [pos, pos + size) (the whole blob, shaped like it, by
    /// default), read-only for mode "r". Nested contexts release in LIFO
    /// order. For a blob with a layout (NHWC, blocked, padded) positions
    /// index its raw memory in memory order, padding included, and the
    /// default is the whole 1-D span (``raw_count`` elements).
    #[pyo3(signature = (pos=0, size=None, mode="rw"))]
    fn buffer(&self, pos: i64, size: Option<i64>, mode: &str) -> PyResult<BufferContext> {
        let mode = Mode::parse(mode)?;
        Ok(BufferContext::new(self.b.clone(), pos, size, mode))
    }

    /// NeoML ``GetBuffer``: a writable ndarray view of [pos, pos + size)
    /// (raw memory order for blobs with a layout; read-only only when the
    /// blob is), pushed on the blob's buffer stack; give it back with
    /// ``release_buffer``. ``exchange``: the buffer holds current data;
    /// on release, that what was written lands.
    fn get_buffer<'py>(&self, py: Python<'py>, pos: i64, size: i64, exchange: bool) -> PyResult<Bound<'py, PyAny>> {
        // NeoML: with exchange the holder reads current data and what it
        // writes lands when released with exchange (the head moves then);
        // without, it will overwrite the data (the head moves now).
        let export = core(self.b.export_buffer(pos, size, exchange))?;
        core(self.b.get_buffer(pos, size, exchange))?;
        Held::array(py, export, false)
    }

    /// NeoML ``ReleaseBuffer``: ``buf`` must be the newest held buffer,
    /// else ``LifoError`` and nothing changes.
    fn release_buffer(&self, buf: &Bound<'_, PyAny>, exchange: bool) -> PyResult<()> {
        let view = Foreign::get(buf, false)?;
        let ptr = view.ptr();
        drop(view);
        core(self.b.release_buffer(ptr, exchange))
    }

    /// The blob's raw memory in memory order as a 1-D blob sharing it
    /// (OpenVINO's ``buffer()``): for blobs with a layout, every element
    /// of memory the layout reaches, padding included; ``numpy.asarray``
    /// of it is how a blocked blob's memory reaches NumPy. Strided views
    /// of another blob raise UnsupportedError.
    fn raw(&self) -> PyResult<Self> {
        Ok(Self::new(core(self.b.raw())?))
    }

    /// Elements of the raw memory span (the element count for dense blobs).
    #[getter]
    fn raw_count(&self) -> PyResult<usize> {
        core(self.b.raw_count())
    }

    /// Number of buffers held through ``get_buffer`` / ``buffer``.
    #[getter]
    fn held_buffers(&self) -> usize {
        self.b.held_buffers()
    }

    // ------------------------------------------------------------------- files

    /// Saves as a Caffe BlobProto file (shape form; float32 blobs write
    /// ``data``, float64 ``double_data``), with the diff when
    /// ``write_diff``. The file is replaced atomically.
    #[pyo3(signature = (path, write_diff=false))]
    fn save_caffe(&self, py: Python<'_>, path: std::path::PathBuf, write_diff: bool) -> PyResult<()> {
        crate::formats::file_op(py, &self.b, move |b| b.save_caffe(&path, write_diff))
    }

    /// The blob serialized as a Caffe BlobProto (``bytes``).
    #[pyo3(signature = (write_diff=false))]
    fn to_caffe_bytes<'py>(&self, py: Python<'py>, write_diff: bool) -> PyResult<Bound<'py, PyBytes>> {
        crate::formats::to_bytes(py, &self.b, move |b| b.to_caffe_bytes(write_diff))
    }

    /// Caffe ``FromProto(proto, reshape)``: reads a BlobProto file into this
    /// float32/float64 blob, taking the file's shape when ``reshape``, else
    /// requiring equal shapes (``ShapeError``, blob unchanged).
    #[pyo3(signature = (path, reshape=true))]
    fn load_caffe_into(&self, py: Python<'_>, path: std::path::PathBuf, reshape: bool) -> PyResult<()> {
        crate::formats::file_op(py, &self.b, move |b| b.load_caffe_into(&path, reshape))
    }

    /// Saves as a NeoML blob archive (float32 or int32, rank <= 7).
    /// ``form="blob"`` writes ``SerializeBlob``'s form (a leading isNull
    /// byte); ``form="serialize"`` writes ``CDnnBlob::Serialize``'s, which
    /// the ``neoml`` package's ``Blob.load`` reads. ``bc.load_neoml`` reads
    /// both.
    #[pyo3(signature = (path, form="blob"))]
    fn save_neoml(&self, py: Python<'_>, path: std::path::PathBuf, form: &str) -> PyResult<()> {
        let form = core(blobcore::NeomlForm::from_name(form))?;
        crate::formats::file_op(py, &self.b, move |b| b.save_neoml_as(&path, form))
    }

    /// The blob serialized as a NeoML blob archive (``bytes``) in ``form``
    /// ("blob" or "serialize", as ``save_neoml``).
    #[pyo3(signature = (form="blob"))]
    fn to_neoml_bytes<'py>(&self, py: Python<'py>, form: &str) -> PyResult<Bound<'py, PyBytes>> {
        let form = core(blobcore::NeomlForm::from_name(form))?;
        crate::formats::to_bytes(py, &self.b, move |b| b.to_neoml_bytes_as(form))
    }

    /// Saves as a C-order NumPy ``.npy`` file (``numpy.load`` reads it).
    fn save_npy(&self, py: Python<'_>, path: std::path::PathBuf) -> PyResult<()> {
        crate::formats::file_op(py, &self.b, move |b| b.save_npy(&path))
    }

    /// The blob serialized as a ``.npy`` file (``bytes``).
    fn to_npy_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        crate::formats::to_bytes(py, &self.b, Blob::to_npy_bytes)
    }

    // ----------------------------------------------------------- Python protocols

    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let export = core(slf.get().b.export())?;
        // SAFETY: forwarded from CPython's call of __getbuffer__.
        unsafe { exports::fill_view(view, flags, exports::Kept::Moved(export), false, false, slf.into_any()) }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: CPython passes back the view our __getbuffer__ filled.
        unsafe { exports::release_view(view) }
    }

    // `__dlpack__` is installed on the type by `dlpack_call::install`
    // (a vectorcall method with its own keyword parsing).

    /// DLPack 1.3's C exchange API: a capsule named
    /// ``"dlpack_exchange_api"`` holding a ``DLPackExchangeAPI`` table
    /// (exports and imports as ``__dlpack__`` / ``bc.from_dlpack`` do,
    /// without the Python round trip). Looked up on the type.
    #[classattr]
    fn __dlpack_c_exchange_api__(py: Python<'_>) -> PyResult<Py<PyAny>> {
        crate::exchange::capsule(py)
    }

    /// NumPy 2's array protocol: an ndarray sharing the blob's memory
    /// (read-only when the blob is; bfloat16 through ml_dtypes), converted
    /// to ``dtype`` if given; ``copy=True`` always copies, ``copy=False``
    /// raises ValueError when a copy would be needed.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(slf: &Bound<'py, Self>, dtype: Option<&Bound<'py, PyAny>>, copy: Option<bool>) -> PyResult<Bound<'py, PyAny>> {
        arrays::array_of(slf, dtype, copy)
    }

    // --------------------------------------------------------------- indexing

    /// NumPy basic indexing (ints, slices with any step, ``...``, ``None``)
    /// gives a view sharing memory; a key that selects one
    /// element gives a NumPy scalar; integer or boolean arrays give a copy
    /// (advanced indexing, done by NumPy on a view of the blob).
    fn __getitem__<'py>(slf: &Bound<'py, Self>, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let b = &slf.get().b;
        let rank = b.rank();
        // One element by plain ints: read it in place as NumPy's scalar.
        if let Some(at) = indexing::exact_element(key, rank) {
            if let Some(v) = npyapi::scalar(py, &core(b.get_element(&at))?)? {
                return Ok(v);
            }
        }
        let mut k = Entries::new();
        match indexing::parse(key, &mut k)? {
            true => {
                if let Some(at) = indexing::element_of(&k, rank) {
                    if let Some(v) = npyapi::scalar(py, &core(b.get_element(&at))?)? {
                        return Ok(v);
                    }
                    let v = Bound::new(py, Self::new(core(b.index(&k))?))?;
                    return arrays::array_of(&v, None, None)?.get_item(PyTuple::empty(py));
                }
                Ok(Bound::new(py, Self::new(core(b.index(&k))?))?.into_any())
            }
            false => {
                let picked = arrays::array_of(slf, None, None)?.get_item(key)?;
                // NumPy may hand back Fortran order; the copy is ours, so
                // make it C order (a no-op when it is) and wrap it.
                let kwargs = pyo3::types::PyDict::new(py);
                kwargs.set_item("order", "C")?;
                let picked = py.import("numpy")?.getattr("asarray")?.call((picked,), Some(&kwargs))?;
                Ok(Bound::new(py, Self::new(arrays::wrap_array(&picked, b.engine())?))?.into_any())
            }
        }
    }

    /// ``b[key] = value``: ``value`` (a scalar, a blob or anything NumPy
    /// converts) is cast to the blob's dtype and broadcast as NumPy does.
    /// Read-only blobs raise ReadOnlyError; nothing changes on error.
    fn __setitem__(slf: &Bound<'_, Self>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = slf.py();
        let b = &slf.get().b;
        // One value NumPy's own conversion (PyArray_Pack) takes (a Python
        // float, int or bool, or a NumPy scalar): converted once as NumPy
        // converts it, then stored in place (one element) or filled (a
        // view of any size).
        let plain = indexing::is_plain_scalar(value) || npyapi::is_numpy_scalar(py, value)?;
        if plain {
            if let Some(at) = indexing::exact_element(key, b.rank()) {
                // set_element and pack_at refuse a read-only blob before
                // anything else (one state lock for the whole store).
                if let Some(s) = pack_at(py, b, &at, value)? {
                    return core(b.set_element(&at, &s));
                }
            }
        }
        core(b.check_writable())?;
        let mut k = Entries::new();
        match indexing::parse(key, &mut k)? {
            true => {
                if let Some(at) = indexing::element_of(&k, b.rank()).filter(|_| plain) {
                    if let Some(s) = pack_at(py, b, &at, value)? {
                        return core(b.set_element(&at, &s));
                    }
                }
                let view = match b.index(&k) {
                    Ok(v) => v,
                    // No layout describes the view (inside the blocks of
                    // a blocked dim): the core assigns through a dense copy.
                    Err(blobcore::Error::Unsupported(_)) if !b.is_dense() => {
                        if plain {
                            if let Some(s) = converted(py, b.dtype(), value)? {
                                let b = b.clone();
                                return run(py, b.is_small(), move || b.fill_index(&k, &s));
                            }
                        }
                        let dims = core(b.index_dims(&k))?;
                        let src = arrays::assigned_value_as(py, value, b.dtype(), &dims, b.engine())?;
                        let b = b.clone();
                        return run(py, b.is_small(), move || b.copy_index_from(&k, &src));
                    }
                    Err(e) => return core(Err(e)),
                };
                if plain {
                    // One conversion, then a fill in place (without the
                    // GIL when the view is large).
                    if let Some(s) = converted(py, b.dtype(), value)? {
                        return run(py, view.is_small(), move || view.fill_element(&s));
                    }
                }
                let src = arrays::assigned_value(py, value, &view)?;
                run(py, view.is_small(), move || view.copy_from(&src))
            }
            false => arrays::array_of(slf, None, None)?.set_item(key, value),
        }
    }

    /// Iterates over axis 0 (``b[0]``, ``b[1]`` ...), as NumPy does:
    /// lazily, one row at a time (the length is taken when iteration starts).
    fn __iter__(slf: &Bound<'_, Self>) -> PyResult<BlobIter> {
        let b = &slf.get().b;
        if b.rank() == 0 {
            return Err(PyTypeError::new_err("iteration over a 0-d blob"));
        }
        let len = core(b.dim(0))?;
        Ok(BlobIter { blob: slf.clone().unbind(), next: std::sync::atomic::AtomicUsize::new(0), len })
    }

    /// The reversed axes, as a view (``numpy.ndarray.T``).
    #[getter(T)]
    fn t(&self) -> PyResult<Self> {
        Ok(Self::new(core(self.b.reversed_view())?))
    }

    /// ``numpy.transpose``: a view with axes permuted (reversed when none
    /// are given); ``b.transpose(1, 0, 2)`` or ``b.transpose((1, 0, 2))``.
    #[pyo3(signature = (*axes))]
    fn transpose(&self, axes: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let rank = self.b.rank() as i64;
        let list: Vec<i64> = match axes.len() {
            0 => (0..rank).rev().collect(),
            1 if !axes.get_item(0)?.is_none() && axes.get_item(0)?.extract::<i64>().is_err() => axes.get_item(0)?.extract()?,
            1 if axes.get_item(0)?.is_none() => (0..rank).rev().collect(),
            _ => axes.extract()?,
        };
        let list: Vec<isize> = list.into_iter().map(|a| a as isize).collect();
        let out = core(self.b.shape().canonical_axes(&list))?;
        Ok(Self::new(core(self.b.permuted_view(&out))?))
    }

    /// NumPy's ``writeable``: False for blobs over memory lent read-only
    /// (read-only arrays, DLPack tensors flagged read-only, pickle buffers).
    #[getter]
    fn writeable(&self) -> bool {
        self.b.is_writable()
    }

    /// ``ndarray.astype``: a new dense blob with every element converted
    /// (integers wrap, floats round to nearest even, float to integer
    /// truncates toward zero; out of range and NaN saturate, NaN to 0).
    fn astype(&self, py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<Self> {
        let d = dtypes::from_py(Some(dtype))?;
        let b = &self.b;
        Ok(Self::new(run(py, b.is_small(), || b.cast(d))?))
    }

    /// ``copy.copy(b)``: an independent copy, as for ndarrays.
    fn __copy__(&self, py: Python<'_>) -> PyResult<Self> {
        self.copy(py)
    }

    /// ``copy.deepcopy(b)``: an independent copy.
    fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.copy(py)
    }

    /// The DLPack device: ``(1, 0)`` (CPU).
    fn __dlpack_device__(&self) -> (i32, i32) {
        self.b.dlpack_device()
    }

    fn __len__(&self) -> PyResult<usize> {
        if self.b.rank() == 0 {
            return Err(PyTypeError::new_err("len() of a rank-0 blob"));
        }
        core(self.b.dim(0))
    }

    fn __repr__(&self) -> String {
        let dims = self.b.dims();
        let shape = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")) };
        let view = if self.b.is_window() { ", window" } else if self.b.is_view() { ", view" } else { "" };
        format!("blobcore.Blob(dtype={}, shape={shape}, engine={}{view})", self.b.dtype().name(), self.b.engine().name())
    }

    /// Pickling. Protocol 5 hands the data over as a ``pickle.PickleBuffer``
    /// (out-of-band, zero-copy, with a ``buffer_callback``; the unpickled
    /// blob wraps the received buffer); older protocols copy the bytes.
    /// Non-dense blobs (regions, strided views, NHWC, blocked) pickle as
    /// dense copies of their logical data: they unpickle row-major.
    fn __reduce_ex__<'py>(slf: &Bound<'py, Self>, protocol: i64) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        if protocol < 5 {
            return Self::__reduce__(slf)?.into_pyobject(py);
        }
        let b = &slf.get().b;
        let dense = if b.is_dense() { b.clone() } else { core(b.copy())? };
        let held = Held::raw(py, core(dense.export())?)?;
        let pb = py.import("pickle")?.getattr("PickleBuffer")?.call1((held,))?;
        let ctor = slf.get_type().getattr("_from_buffer")?;
        (ctor, (i64s(&dense.dims()), dense.dtype().name(), pb)).into_pyobject(py)
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let py = slf.py();
        let b = &slf.get().b;
        let b = if b.is_dense() { b.clone() } else { core(b.copy())? };
        let mut bytes = vec![0u8; b.byte_size()];
        core(b.copy_to_bytes(&mut bytes))?;
        let ctor = slf.get_type().getattr("_from_state")?;
        Ok((ctor, (i64s(&b.dims()), b.dtype().name(), PyBytes::new(py, &bytes))))
    }
}
