//! The one error type of blobcore, with a stable numeric code per variant.
//!
//! The codes are part of the public contract: the C API returns them as
//! `int32_t` status values (`BLOB_ERR_*` in `blob.h`) and Python maps each
//! to an exception class. Never renumber a variant.

/// Result alias used throughout blobcore.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every failure blobcore reports. Each variant carries a message that
/// names the problem; [`Error::code`] gives its stable numeric code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A required pointer was NULL (C API only). Code 1.
    #[error("null pointer: {0}")]
    NullPointer(String),
    /// A handle was freed, never issued or of the wrong kind (C API only). Code 2.
    #[error("invalid handle: {0}")]
    InvalidHandle(String),
    /// An argument is malformed in a way no other variant describes. Code 3.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Dimensions are negative, overflow, exceed the rank limit, or do not
    /// match what the operation needs. Code 4.
    #[error("shape error: {0}")]
    Shape(String),
    /// The data type is wrong for the operation or does not match. Code 5.
    #[error("dtype error: {0}")]
    DType(String),
    /// An index, axis, position or range lies outside the blob. Code 6.
    #[error("out of range: {0}")]
    OutOfRange(String),
    /// A buffer was released out of LIFO order. Code 7.
    #[error("LIFO violation: {0}")]
    Lifo(String),
    /// The memory is in use (views, held buffers, exports or borrows) and
    /// the operation would invalidate or alias it. Code 8.
    #[error("busy: {0}")]
    Busy(String),
    /// Memory could not be allocated. Code 9.
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    /// A compute device failed or is missing. Code 10.
    #[error("device error: {0}")]
    Device(String),
    /// Reading or writing a file failed. Code 11.
    #[error("I/O error: {0}")]
    Io(String),
    /// A file or byte stream is malformed. Code 12.
    #[error("format error: {0}")]
    Format(String),
    /// The operation is valid but not supported for these arguments. Code 13.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A bug in blobcore (an invariant was broken or a panic was caught). Code 14.
    #[error("internal error: {0}")]
    Internal(String),
    /// A write to a read-only blob (memory lent read-only). Code 15.
    #[error("read-only: {0}")]
    ReadOnly(String),
}

impl Error {
    /// The stable numeric code of this error (1..=15), as in `blob.h`.
    pub fn code(&self) -> i32 {
        match self {
            Error::NullPointer(_) => 1,
            Error::InvalidHandle(_) => 2,
            Error::InvalidArgument(_) => 3,
            Error::Shape(_) => 4,
            Error::DType(_) => 5,
            Error::OutOfRange(_) => 6,
            Error::Lifo(_) => 7,
            Error::Busy(_) => 8,
            Error::OutOfMemory(_) => 9,
            Error::Device(_) => 10,
            Error::Io(_) => 11,
            Error::Format(_) => 12,
            Error::Unsupported(_) => 13,
            Error::Internal(_) => 14,
            Error::ReadOnly(_) => 15,
        }
    }

    /// The short name of a status code (`"OK"` for 0), as `blob_status_str` returns it.
    pub fn code_name(code: i32) -> &'static str {
        match code {
            0 => "OK",
            1 => "NULL_POINTER",
            2 => "INVALID_HANDLE",
            3 => "INVALID_ARGUMENT",
            4 => "SHAPE",
            5 => "DTYPE",
            6 => "OUT_OF_RANGE",
            7 => "LIFO",
            8 => "BUSY",
            9 => "OUT_OF_MEMORY",
            10 => "DEVICE",
            11 => "IO",
            12 => "FORMAT",
            13 => "UNSUPPORTED",
            14 => "INTERNAL",
            15 => "READ_ONLY",
            _ => "UNKNOWN",
        }
    }

    /// The message without the variant prefix.
    pub fn message(&self) -> &str {
        match self {
            Error::NullPointer(m)
            | Error::InvalidHandle(m)
            | Error::InvalidArgument(m)
            | Error::Shape(m)
            | Error::DType(m)
            | Error::OutOfRange(m)
            | Error::Lifo(m)
            | Error::Busy(m)
            | Error::OutOfMemory(m)
            | Error::Device(m)
            | Error::Io(m)
            | Error::Format(m)
            | Error::Unsupported(m)
            | Error::Internal(m)
            | Error::ReadOnly(m) => m,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

/// Shorthand constructors used inside the crate: `shape_err!("...", args)`.
macro_rules! err {
    ($variant:ident, $($arg:tt)*) => {
        $crate::error::Error::$variant(format!($($arg)*))
    };
}
pub(crate) use err;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        let all = [
            Error::NullPointer(String::new()),
            Error::InvalidHandle(String::new()),
            Error::InvalidArgument(String::new()),
            Error::Shape(String::new()),
            Error::DType(String::new()),
            Error::OutOfRange(String::new()),
            Error::Lifo(String::new()),
            Error::Busy(String::new()),
            Error::OutOfMemory(String::new()),
            Error::Device(String::new()),
            Error::Io(String::new()),
            Error::Format(String::new()),
            Error::Unsupported(String::new()),
            Error::Internal(String::new()),
            Error::ReadOnly(String::new()),
        ];
        for (i, e) in all.iter().enumerate() {
            assert_eq!(e.code(), i as i32 + 1);
            assert_ne!(Error::code_name(e.code()), "UNKNOWN");
        }
        assert_eq!(Error::code_name(0), "OK");
        assert_eq!(Error::code_name(99), "UNKNOWN");
    }

    #[test]
    fn message_is_kept() {
        let e = err!(Shape, "dim {} is negative", -3);
        assert_eq!(e.message(), "dim -3 is negative");
        assert_eq!(e.to_string(), "shape error: dim -3 is negative");
    }
}
