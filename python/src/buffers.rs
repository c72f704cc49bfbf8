//! Buffers: `with b.buffer(pos, size, mode) as arr:` and the ndarray views
//! behind `get_buffer`, both on the core's LIFO buffer stack.

use crate::errors::{core, raise};
use crate::exports;
use blobcore::{Blob, Export};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::c_int;
use std::sync::Mutex;

/// Access mode of a buffer context.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
    ReadWrite,
}

impl Mode {
    pub fn parse(s: &str) -> PyResult<Mode> {
        match s {
            "r" => Ok(Mode::Read),
            "w" => Ok(Mode::Write),
            "rw" | "wr" | "r+" => Ok(Mode::ReadWrite),
            _ => Err(raise("InvalidArgumentError", format!("buffer mode {s:?} is not one of \"r\", \"w\", \"rw\""))),
        }
    }

    fn reads(self) -> bool {
        self != Mode::Write
    }

    fn writes(self) -> bool {
        self != Mode::Read
    }
}

/// Exposes an export through the buffer protocol (the base object of the
/// ndarrays that buffers hand out; it keeps the memory alive).
#[pyclass(name = "_Held", module = "blobcore", frozen)]
pub struct Held {
    export: Export,
    readonly: bool,
    raw: bool,
}

impl Held {
    /// The export whose memory this holder lends.
    pub fn export(&self) -> &Export {
        &self.export
    }

    /// An ndarray over `export` (read-only when asked, or when the blob is).
    pub fn array(py: Python<'_>, export: Export, readonly: bool) -> PyResult<Bound<'_, PyAny>> {
        let held = Bound::new(py, Held { export, readonly, raw: false })?;
        py.import("numpy")?.getattr("asarray")?.call1((held,))
    }

    /// An object whose buffer is `export` with the elements of the
    /// ml_dtypes types as unsigned integers of their size (bfloat16 as
    /// uint16, float8 as uint8, on their way to ml_dtypes).
    pub fn raw(py: Python<'_>, export: Export) -> PyResult<Bound<'_, Held>> {
        Bound::new(py, Held { export, readonly: false, raw: true })
    }
}

#[pymethods]
impl Held {
    unsafe fn __getbuffer__(slf: Bound<'_, Self>, view: *mut ffi::Py_buffer, flags: c_int) -> PyResult<()> {
        let held = slf.get();
        // SAFETY: forwarded from CPython's call of __getbuffer__; the view's
        // owner is this (frozen) object, so the export outlives the view.
        unsafe { exports::fill_view(view, flags, exports::Kept::ByOwner(&held.export), held.readonly, held.raw, slf.clone().into_any()) }
    }

    unsafe fn __releasebuffer__(&self, view: *mut ffi::Py_buffer) {
        // SAFETY: CPython passes back the view our __getbuffer__ filled.
        unsafe { exports::release_view(view) }
    }
}

/// The context manager returned by `Blob.buffer`.
#[pyclass(name = "_BufferContext", module = "blobcore", frozen)]
pub struct BufferContext {
    blob: Blob,
    pos: i64,
    size: Option<i64>,
    mode: Mode,
    held: Mutex<Option<usize>>,
}

impl BufferContext {
    pub fn new(blob: Blob, pos: i64, size: Option<i64>, mode: Mode) -> Self {
        BufferContext { blob, pos, size, mode, held: Mutex::new(None) }
    }
}

#[pymethods]
impl BufferContext {
    fn __enter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.is_some() {
            return Err(raise("LifoError", "this buffer context is already entered"));
        }
        let dense = self.blob.is_dense();
        let count = if dense { self.blob.count() as i64 } else { core(self.blob.raw_count())? as i64 };
        // A read-only context is Caffe's cpu_data(): the head may stay
        // Synced, so the next kernel needs no upload.
        let write = self.mode != Mode::Read;
        let (export, size) = match self.size {
            None if self.pos == 0 && dense => (core(self.blob.export_for(write))?, count),
            None => {
                let size = count.saturating_sub(self.pos).max(0);
                (core(self.blob.export_range_for(self.pos, size, write))?, size)
            }
            Some(size) => (core(self.blob.export_range_for(self.pos, size, write))?, size),
        };
        let ptr = core(self.blob.get_buffer(self.pos, size, self.mode.reads()))?;
        *held = Some(ptr.as_ptr() as usize);
        drop(held);
        Held::array(py, export, self.mode == Mode::Read)
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        let ptr = self.held.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(p) = ptr {
            if let Err(e) = self.blob.release_buffer(p as *const u8, self.mode.writes()) {
                // Put it back: the buffer is still held (nothing changed).
                *self.held.lock().unwrap_or_else(|e| e.into_inner()) = Some(p);
                return Err(crate::errors::BcError(e).into());
            }
        }
        Ok(false)
    }
}
