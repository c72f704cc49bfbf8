//! `bc.Layout`, `bc.layout_by_dims`, `bc.BlockingDesc`, `bc.TensorDesc`.

use crate::args::uidx;
use crate::dtypes;
use crate::errors::core;
use blobcore::{BlockingDesc, Layout, TensorDesc};
use pyo3::prelude::*;

/// The `bc.Layout` member for `l`.
pub fn layout_to_py(py: Python<'_>, l: Layout) -> PyResult<Bound<'_, PyAny>> {
    py.import("blobcore._enums")?.getattr("Layout")?.call1((l.code(),))
}

/// A layout from an int or `bc.Layout`.
pub fn layout_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Layout> {
    core(Layout::from_code(obj.extract::<i64>()?))
}

fn udims(v: &[i64], what: &str) -> PyResult<Vec<usize>> {
    v.iter().map(|&x| uidx(x, what)).collect()
}

/// OpenVINO ``getLayoutByDims``: SCALAR, C, NC, CHW, NCHW, NCDHW by rank, else BLOCKED.
#[pyfunction]
pub fn layout_by_dims(py: Python<'_>, rank: i64) -> PyResult<Bound<'_, PyAny>> {
    layout_to_py(py, blobcore::layout_by_dims(uidx(rank, "rank")?))
}

/// How blocked dims are laid out (OpenVINO ``BlockingDesc``): blocked dims
/// in ``order`` (a dim may appear twice: outer and inner block), dense
/// strides unless given (then checked to be at least dense).
#[pyclass(name = "BlockingDesc", module = "blobcore", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyBlockingDesc {
    pub(crate) b: BlockingDesc,
}

#[pymethods]
impl PyBlockingDesc {
    /// ``BlockingDesc(blk_dims, order, offset=0, dim_offsets=None,
    /// strides=None)``, or OpenVINO's ``BlockingDesc(dims, layout)``: the
    /// dense blocking a ``bc.Layout`` gives logical ``dims``.
    #[new]
    #[pyo3(signature = (blk_dims, order, offset=0, dim_offsets=None, strides=None))]
    fn new(blk_dims: Vec<i64>, order: &Bound<'_, PyAny>, offset: i64, dim_offsets: Option<Vec<i64>>, strides: Option<Vec<i64>>) -> PyResult<Self> {
        let blk = udims(&blk_dims, "blocked dim")?;
        let layout_cls = order.py().import("blobcore._enums")?.getattr("Layout")?;
        if order.is_instance(&layout_cls)? {
            if offset != 0 || dim_offsets.is_some() || strides.is_some() {
                return Err(crate::errors::raise("InvalidArgumentError", "BlockingDesc(dims, layout) takes no offset, dim_offsets or strides"));
            }
            return Ok(PyBlockingDesc { b: core(BlockingDesc::from_layout(&blk, layout_from_py(order)?))? });
        }
        let order: Vec<i64> = order.extract()?;
        let ord = udims(&order, "order entry")?;
        let off = uidx(offset, "offset")?;
        let dofs = udims(&dim_offsets.unwrap_or_default(), "dim offset")?;
        let b = match strides {
            Some(s) => BlockingDesc::with_strides(&blk, &ord, off, &dofs, &udims(&s, "stride")?),
            None => BlockingDesc::with_offsets(&blk, &ord, off, &dofs),
        };
        Ok(PyBlockingDesc { b: core(b)? })
    }

    /// The blocked dims, outermost first.
    #[getter]
    fn blk_dims(&self) -> Vec<usize> {
        self.b.blk_dims().to_vec()
    }

    /// The logical dim of each blocked dim.
    #[getter]
    fn order(&self) -> Vec<usize> {
        self.b.order().to_vec()
    }

    /// Strides of the blocked dims, in elements (negative for the reversed
    /// axes of views such as ``b[::-1]``).
    #[getter]
    fn strides(&self) -> Vec<isize> {
        self.b.strides().to_vec()
    }

    /// Elements before the data.
    #[getter]
    fn offset_padding(&self) -> usize {
        self.b.offset_padding()
    }

    /// Per-blocked-dim offsets to the data.
    #[getter]
    fn dim_offsets(&self) -> Vec<usize> {
        self.b.offsets_to_data().to_vec()
    }

    fn __repr__(&self) -> String {
        format!(
            "blobcore.BlockingDesc(blk_dims={:?}, order={:?}, offset={}, dim_offsets={:?}, strides={:?})",
            self.b.blk_dims(),
            self.b.order(),
            self.b.offset_padding(),
            self.b.offsets_to_data(),
            self.b.strides()
        )
    }
}

/// dtype + logical dims + layout + blocking (OpenVINO ``TensorDesc``).
/// ``layout_or_blocking`` is a ``bc.Layout`` or a ``bc.BlockingDesc``
/// (whose layout is then inferred, e.g. order (0, 2, 3, 1) is NHWC).
#[pyclass(name = "TensorDesc", module = "blobcore", eq)]
#[derive(Clone, PartialEq)]
pub struct PyTensorDesc {
    pub(crate) d: TensorDesc,
}

#[pymethods]
impl PyTensorDesc {
    #[new]
    #[pyo3(signature = (dtype, dims, layout_or_blocking=None))]
    fn new(dtype: &Bound<'_, PyAny>, dims: Vec<i64>, layout_or_blocking: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let dt = dtypes::from_py(Some(dtype))?;
        let dims = crate::args::udims(&dims)?;
        let d = match layout_or_blocking {
            Some(o) if o.cast::<PyBlockingDesc>().is_ok() => {
                let b = o.cast::<PyBlockingDesc>()?.get().b.clone();
                TensorDesc::with_blocking(dt, &dims, b)
            }
            Some(o) if !o.is_none() => TensorDesc::new(dt, &dims, layout_from_py(o)?),
            _ => TensorDesc::new(dt, &dims, blobcore::layout_by_dims(dims.len())),
        };
        Ok(PyTensorDesc { d: core(d)? })
    }

    /// The element dtype.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        dtypes::to_py(py, self.d.dtype())
    }

    /// The logical dims.
    #[getter]
    fn dims(&self) -> Vec<usize> {
        self.d.dims().to_vec()
    }

    /// The layout (``bc.Layout``).
    #[getter]
    fn layout<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        layout_to_py(py, self.d.layout())
    }

    /// The blocking (``bc.BlockingDesc``).
    #[getter]
    fn blocking(&self) -> PyBlockingDesc {
        PyBlockingDesc { b: self.d.blocking().clone() }
    }

    /// The memory offset (elements) of an element given by its row-major
    /// linear number or by its logical index (OpenVINO ``offset``).
    fn offset(&self, linear_or_index: &Bound<'_, PyAny>) -> PyResult<usize> {
        if let Ok(l) = linear_or_index.extract::<i64>() {
            return core(self.d.offset_linear(uidx(l, "element")?));
        }
        let idx: Vec<i64> = linear_or_index.extract()?;
        core(self.d.offset_index(&udims(&idx, "index")?))
    }

    /// A dense desc with other dims (same count); refused for padded,
    /// strided or blocked descs.
    #[pyo3(signature = (dims, layout=None))]
    fn reshape(&self, dims: Vec<i64>, layout: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let l = match layout {
            Some(l) if !l.is_none() => layout_from_py(l)?,
            _ => Layout::Any,
        };
        Ok(PyTensorDesc { d: core(self.d.reshape(&crate::args::udims(&dims)?, l))? })
    }

    /// Re-lays the same dims out in a named layout (the rank must fit).
    fn set_layout(&mut self, layout: &Bound<'_, PyAny>) -> PyResult<()> {
        core(self.d.set_layout(layout_from_py(layout)?))
    }

    fn __repr__(&self) -> String {
        format!("blobcore.{}", self.d)
    }
}
