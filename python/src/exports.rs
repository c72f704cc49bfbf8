//! The buffer protocol: filling a `Py_buffer` from a core [`Export`], and
//! reading another object's buffer (NumPy arrays, bytes, memoryviews).

use crate::dtypes;
use crate::errors::raise;
use blobcore::{DType, Export};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_int, c_void, CStr};

/// What a `Py_buffer` we filled points into; freed by `__releasebuffer__`.
struct ViewHolder {
    /// The export itself when no one else keeps it (a blob's own buffer);
    /// None when `view.obj` owns it (a `_Held`, alive until the release).
    export: Option<Export>,
    /// Inline up to rank 8 (the Box does not move, so pointers into it
    /// stay valid): no allocation of its own per export. The shape is the
    /// export's own (`usize` dims below `i64::MAX`, laid out as `Py_ssize_t`).
    strides: smallvec::SmallVec<[ffi::Py_ssize_t; 8]>,
}

/// Fills `view` from `export` for `__getbuffer__` (`owner` becomes
/// `view.obj`). The export lives as long as the view: moved into the view
/// (`Kept::Moved`, one allocation per export) or owned by `owner`
/// (`Kept::ByOwner`). Read-only requests (`readonly`, or an export of a
/// read-only blob) refuse writable requests. `raw` describes the
/// elements of the ml_dtypes types as unsigned integers of their size (how
/// bfloat16 and float8 reach NumPy: a uint16 / uint8 array that ml_dtypes
/// views as its type).
///
/// # Safety
/// `view` must be the pointer CPython passed to `__getbuffer__`.
pub unsafe fn fill_view(
    view: *mut ffi::Py_buffer,
    flags: c_int,
    kept: Kept<'_>,
    readonly: bool,
    raw: bool,
    owner: Bound<'_, PyAny>,
) -> PyResult<()> {
    let export: &Export = match &kept {
        Kept::Moved(e) => e,
        Kept::ByOwner(e) => e,
    };
    let readonly = readonly || !export.is_writable();
    if view.is_null() {
        return Err(raise("BusyError", "NULL Py_buffer"));
    }
    if readonly && (flags & ffi::PyBUF_WRITABLE) == ffi::PyBUF_WRITABLE {
        return Err(pyo3::exceptions::PyBufferError::new_err("this buffer is read-only"));
    }
    let carrier = |size| if size == 2 { c"H" } else { c"B" };
    let d = export.dtype();
    let format: &'static CStr = if raw && dtypes::ml_dtype(d).is_some() { Some(carrier(d.size())) } else { dtypes::format(d) }.ok_or_else(|| {
        pyo3::exceptions::PyBufferError::new_err(format!(
            "{d} has no buffer-protocol format; use numpy.asarray(blob) with ml_dtypes installed, DLPack, or blob.astype(numpy.float32)",
        ))
    })?;
    if !export.is_contiguous() && (flags & ffi::PyBUF_STRIDES) != ffi::PyBUF_STRIDES {
        return Err(pyo3::exceptions::PyBufferError::new_err(
            "this blob is strided (a region or a non-default layout); the consumer must accept strides",
        ));
    }
    let (buf, len, itemsize) = (export.as_ptr() as *mut c_void, export.byte_len() as ffi::Py_ssize_t, export.dtype().size() as ffi::Py_ssize_t);
    let ndim = export.shape().len() as c_int;
    // The holder is allocated first and filled where it lies: the strides
    // are written straight into its inline array, and a moved export is
    // moved once, into it. (Built on the stack and then boxed, the holder
    // and the strides had been copied whole once more each: with the
    // export's move, a quarter of `__getbuffer__` in profiles. Making the
    // export itself in the holder measured no faster.) The holder is
    // leaked at once, so that the pointers into it are derived from the
    // leaked allocation rather than from a `Box` moved afterwards (which
    // Rust's aliasing rules let invalidate them). From here on nothing
    // returns early: `release_view` frees it.
    let holder = Box::into_raw(Box::<ViewHolder>::new_uninit()).cast::<ViewHolder>();
    // SAFETY: `holder` is a live, unaliased allocation for a ViewHolder;
    // both its fields are written before the `&mut` to the whole is made.
    let h = unsafe {
        std::ptr::addr_of_mut!((*holder).export).write(None);
        std::ptr::addr_of_mut!((*holder).strides).write(smallvec::SmallVec::new());
        &mut *holder
    };
    // `Py_ssize_t` is `isize`: the byte strides go in as they are.
    export.byte_strides_into(&mut h.strides);
    let shape: *const usize = match kept {
        Kept::ByOwner(e) => e.shape().as_ptr(),
        Kept::Moved(e) => h.export.insert(e).shape().as_ptr(),
    };
    let strides = h.strides.as_ptr();
    // SAFETY: `view` is valid (checked non-NULL, provided by CPython); the
    // pointers stored in it live in `holder`, which is released only by
    // `release_view` when the consumer lets go of the view.
    unsafe {
        (*view).buf = buf;
        (*view).len = len;
        (*view).readonly = c_int::from(readonly);
        (*view).itemsize = itemsize;
        (*view).format = if flags & ffi::PyBUF_FORMAT == ffi::PyBUF_FORMAT {
            format.as_ptr() as *mut _
        } else {
            std::ptr::null_mut()
        };
        (*view).ndim = ndim;
        (*view).shape = if flags & ffi::PyBUF_ND == ffi::PyBUF_ND {
            // usize and Py_ssize_t have one size and alignment; every dim
            // is below i64::MAX (a Shape's product fits i64).
            shape as *mut ffi::Py_ssize_t
        } else {
            std::ptr::null_mut()
        };
        (*view).strides = if flags & ffi::PyBUF_STRIDES == ffi::PyBUF_STRIDES {
            strides as *mut _
        } else {
            std::ptr::null_mut()
        };
        (*view).suboffsets = std::ptr::null_mut();
        (*view).internal = holder as *mut c_void;
        (*view).obj = owner.into_ptr();
    }
    Ok(())
}

/// Who keeps an export alive while a `Py_buffer` points into it.
// Passed by value once per export and moved straight into the holder:
// boxing the export would add the allocation the holder exists to save.
#[allow(clippy::large_enum_variant)]
pub enum Kept<'a> {
    /// The view does: the export moves into it.
    Moved(Export),
    /// The view's owner does (it outlives the view: `view.obj` holds it).
    ByOwner(&'a Export),
}

/// Frees what [`fill_view`] stored in `view` (for `__releasebuffer__`).
///
/// # Safety
/// `view` must have been filled by [`fill_view`] and not released before.
pub unsafe fn release_view(view: *mut ffi::Py_buffer) {
    // SAFETY: `internal` holds the Box leaked by fill_view, released once.
    unsafe {
        let p = (*view).internal as *mut ViewHolder;
        if !p.is_null() {
            drop(Box::from_raw(p));
            (*view).internal = std::ptr::null_mut();
        }
    }
}

/// Another object's buffer, held until dropped (with the GIL taken for
/// the release, so it may be dropped on any thread).
pub struct Foreign {
    view: Box<ffi::Py_buffer>,
}

// SAFETY: the Py_buffer is only touched while holding the GIL (get under
// the caller's GIL, release in Drop under `Python::attach`).
unsafe impl Send for Foreign {}

impl Foreign {
    /// Requests a buffer with strides and format; `writable` asks for a
    /// writable one.
    pub fn get(obj: &Bound<'_, PyAny>, writable: bool) -> PyResult<Foreign> {
        let mut flags = ffi::PyBUF_STRIDES | ffi::PyBUF_FORMAT;
        if writable {
            flags |= ffi::PyBUF_WRITABLE;
        }
        // Boxed: an exporter may point the buffer's own fields into it
        // (`shape = &view->len`). Zeroed by hand through an opaque
        // pointer, so that the allocation stays a plain `malloc` (a
        // zeroed Box becomes glibc's `calloc`, which bypasses the
        // per-thread cache that `free` fills: both took the slow paths).
        let mut view: Box<std::mem::MaybeUninit<ffi::Py_buffer>> = Box::new_uninit();
        let raw = std::hint::black_box(view.as_mut_ptr());
        // SAFETY: `raw` addresses the box's Py_buffer; all-zero bytes are
        // a valid Py_buffer (null pointers, zero lengths).
        let mut view: Box<ffi::Py_buffer> = unsafe {
            std::ptr::write_bytes(raw, 0, 1);
            view.assume_init()
        };
        // SAFETY: obj is a live object (we hold the GIL); view is writable.
        let rc = unsafe { ffi::PyObject_GetBuffer(obj.as_ptr(), &mut *view, flags) };
        if rc != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        Ok(Foreign { view })
    }

    /// Start of the memory.
    pub fn ptr(&self) -> *mut u8 {
        self.view.buf as *mut u8
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.view.len as usize
    }

    /// The dims.
    pub fn shape(&self) -> Vec<usize> {
        let n = self.view.ndim as usize;
        if n == 0 {
            return Vec::new();
        }
        if self.view.shape.is_null() {
            return vec![self.len() / self.itemsize().max(1)];
        }
        // SAFETY: CPython guarantees `shape` has `ndim` entries when non-NULL.
        unsafe { std::slice::from_raw_parts(self.view.shape, n) }.iter().map(|&d| d as usize).collect()
    }

    fn itemsize(&self) -> usize {
        self.view.itemsize as usize
    }

    /// The dtype, or a DTypeError naming the format.
    pub fn dtype(&self) -> PyResult<DType> {
        let fmt = if self.view.format.is_null() {
            std::borrow::Cow::Borrowed("B")
        } else {
            // SAFETY: a non-NULL format is a NUL-terminated string owned by the exporter.
            unsafe { CStr::from_ptr(self.view.format) }.to_string_lossy()
        };
        dtypes::from_format(&fmt, self.itemsize()).ok_or_else(|| {
            raise("DTypeError", format!("buffer format {fmt:?} (item size {}) has no blobcore dtype", self.itemsize()))
        })
    }

    /// True when the exporter lent the memory read-only.
    pub fn readonly(&self) -> bool {
        self.view.readonly != 0
    }

    /// True when the buffer is dense and row-major.
    pub fn is_c_contiguous(&self) -> bool {
        if self.view.strides.is_null() {
            return true;
        }
        let shape = self.shape();
        // SAFETY: `strides` has `ndim` entries when non-NULL.
        let strides = unsafe { std::slice::from_raw_parts(self.view.strides, shape.len()) };
        blobcore::is_row_major(&shape, strides, self.itemsize())
    }

    /// The bytes (only for C-contiguous buffers).
    pub fn bytes(&self) -> &[u8] {
        if self.len() == 0 || self.view.buf.is_null() {
            return &[];
        }
        // SAFETY: the exporter keeps `len` bytes at `buf` valid while we hold the view.
        unsafe { std::slice::from_raw_parts(self.ptr(), self.len()) }
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let view: *mut ffi::Py_buffer = &mut *self.view;
        with_gil_or_leak(|| {
            // SAFETY: the view was filled by PyObject_GetBuffer and is released once.
            unsafe { ffi::PyBuffer_Release(view) }
        });
    }
}

/// Runs `f` holding the GIL, from any thread. Once the interpreter has
/// begun shutting down (`Py_IsInitialized` is 0 while it destroys the
/// remaining objects) `f` is skipped: the process is exiting and the
/// memory goes with it, whereas taking the GIL then would be an error.
pub fn with_gil_or_leak(f: impl FnOnce()) {
    // SAFETY: Py_IsInitialized may be called at any time, with or without the GIL.
    if unsafe { ffi::Py_IsInitialized() } != 0 {
        Python::attach(|_py| f());
    }
}
