//! Status codes, the per-thread last error, the panic boundary and the
//! argument converters every exported function uses.

use blobcore::Error;
use std::cell::RefCell;
use std::ffi::{c_char, CStr, CString};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(msg: &str) {
    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|l| *l.borrow_mut() = c);
}

/// The calling thread's last error message (empty after a success).
pub fn last_error_ptr() -> *const c_char {
    LAST_ERROR.with(|l| l.borrow().as_ptr())
}

/// The highest status code (`BLOB_ERR_READ_ONLY`).
const LAST_CODE: i32 = 15;

/// Status names as NUL-terminated strings, built once from the core's table.
pub fn status_name(code: i32) -> *const c_char {
    // Built on first use, never waited for (see `blobcore::first_use`).
    static NAMES: blobcore::first_use::FirstUse<Vec<CString>> = blobcore::first_use::FirstUse::new();
    let names = NAMES.get_or_make(|| {
        // Codes 0..=LAST_CODE, then the name of an unknown code.
        // The names of the macros in blob.h: BLOB_OK, BLOB_ERR_*.
        (0..=LAST_CODE + 1)
            .map(|c| {
                let name = match c {
                    0 => "BLOB_OK".to_string(),
                    c if c <= LAST_CODE => format!("BLOB_ERR_{}", Error::code_name(c)),
                    _ => "BLOB_UNKNOWN".to_string(),
                };
                CString::new(name).unwrap_or_default()
            })
            .collect()
    });
    let i = if (0..=LAST_CODE).contains(&code) { code as usize } else { LAST_CODE as usize + 1 };
    names[i].as_ptr()
}

/// Converts the outcome of an exported function's body into its status,
/// recording the message. Panics are caught by `ffi!` and arrive here as
/// `Err(payload)`.
pub fn finish(r: std::thread::Result<Result<(), Error>>) -> i32 {
    match r {
        Ok(Ok(())) => {
            // The success path must stay cheap: clear without allocating.
            LAST_ERROR.with(|l| {
                if !l.borrow().is_empty() {
                    *l.borrow_mut() = CString::default();
                }
            });
            0
        }
        Ok(Err(e)) => {
            set_last_error(&e.to_string());
            e.code()
        }
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("internal error: caught a panic: {what}"));
            14
        }
    }
}

/// The panic boundary: runs the body (returning `Result<(), Error>`),
/// catches any panic, and returns the status code.
macro_rules! ffi {
    ($body:block) => {{
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> Result<(), blobcore::Error> { $body }));
        $crate::status::finish(r)
    }};
}
pub(crate) use ffi;

/// Checks an out-pointer up front, so nothing is computed for a NULL or
/// misaligned one.
pub fn out<T>(p: *mut T, what: &str) -> Result<*mut T, Error> {
    if p.is_null() {
        return Err(Error::NullPointer(format!("out-pointer {what} is NULL")));
    }
    if !p.is_aligned() {
        // The message is built only on failure: `out` is on every call's path.
        aligned(p, &format!("out-pointer {what}"))?;
    }
    Ok(p)
}

/// Refuses a pointer that is not aligned for `T`. C code cannot make one
/// without a cast (from a byte buffer, say), but Rust may not read or
/// write a `T` through it at all: the compiler assumes the alignment.
pub fn aligned<T>(p: *const T, what: &str) -> Result<(), Error> {
    if p.is_aligned() {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!("{what} ({p:p}) is not aligned to {} bytes", std::mem::align_of::<T>())))
}

/// Writes a result through a checked out-pointer.
pub fn put<T>(p: *mut T, v: T) {
    // SAFETY: `p` was checked non-NULL by `out`; the caller promises it
    // points at writable storage for a T (the C contract of every out-pointer).
    unsafe { p.write(v) }
}

/// Checks a caller's array pointer and length before a slice is formed:
/// NULL is allowed only when `n == 0`, and `max` bounds `n`.
fn array_ok<T>(p: *const T, n: usize, max: usize, what: &str) -> Result<(), Error> {
    if n > 0 && p.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL but its length is {n}")));
    }
    if n > max {
        return Err(Error::InvalidArgument(format!("{what} has {n} entries; at most {max} are allowed")));
    }
    if n > 0 {
        aligned(p, what)?;
    }
    Ok(())
}

/// A caller's array of `n` elements; NULL is allowed only when `n == 0`.
/// `max` bounds `n` before any slice is formed.
pub fn array<'a, T>(p: *const T, n: usize, max: usize, what: &str) -> Result<&'a [T], Error> {
    array_ok(p, n, max, what)?;
    if n == 0 {
        return Ok(&[]);
    }
    // SAFETY: p is non-NULL and the caller promises n readable elements;
    // n is bounded so the byte size fits isize.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// A caller's writable array of `n` elements (as [`array`], for results).
pub fn array_mut<'a, T>(p: *mut T, n: usize, max: usize, what: &str) -> Result<&'a mut [T], Error> {
    array_ok(p, n, max, what)?;
    if n == 0 {
        return Ok(&mut []);
    }
    // SAFETY: p is non-NULL and the caller promises n writable elements;
    // n is bounded so the byte size fits isize.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// Indices or counts from C: `n` (at most `max`) values, each >= 0
/// (OutOfRange otherwise).
pub fn indices(p: *const i64, n: usize, max: usize, what: &str) -> Result<Vec<usize>, Error> {
    array(p, n, max, what)?.iter().map(|&v| index(v, what)).collect()
}

/// Dims from C: at most 32 of them (Shape error otherwise), each >= 0.
pub fn dims(p: *const i64, rank: usize) -> Result<Vec<usize>, Error> {
    if rank > blobcore::MAX_RANK {
        return Err(Error::Shape(format!("rank {rank} exceeds the maximum of {}", blobcore::MAX_RANK)));
    }
    let d = array(p, rank, blobcore::MAX_RANK, "dims")?;
    blobcore::Shape::from_i64(d).map(|s| s.dims().to_vec())
}

/// A dimension size from C (negative is a Shape error).
pub fn dim(v: i64, what: &str) -> Result<usize, Error> {
    usize::try_from(v).map_err(|_| Error::Shape(format!("{what} {v} is negative")))
}

/// An index or count from C (negative is OutOfRange).
pub fn index(v: i64, what: &str) -> Result<usize, Error> {
    usize::try_from(v).map_err(|_| Error::OutOfRange(format!("{what} {v} is negative")))
}

/// A UTF-8 string from C (non-NULL); `what` names it in errors.
pub fn text<'a>(p: *const c_char, what: &str) -> Result<&'a str, Error> {
    if p.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::InvalidArgument(format!("{what} is not valid UTF-8")))
}

/// A path from C: non-NULL and non-empty; any bytes on Unix (as the OS
/// takes them), UTF-8 elsewhere.
pub fn path<'a>(p: *const c_char) -> Result<&'a std::path::Path, Error> {
    if p.is_null() {
        return Err(Error::NullPointer("path is NULL".into()));
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string.
    let bytes = unsafe { CStr::from_ptr(p) }.to_bytes();
    if bytes.is_empty() {
        return Err(Error::InvalidArgument("path is empty".into()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        Ok(std::path::Path::new(std::ffi::OsStr::from_bytes(bytes)))
    }
    #[cfg(not(unix))]
    {
        std::str::from_utf8(bytes)
            .map(std::path::Path::new)
            .map_err(|_| Error::InvalidArgument("path is not valid UTF-8".into()))
    }
}
