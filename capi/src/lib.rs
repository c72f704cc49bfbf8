//! # libblob — the C ABI of blobcore
//!
//! A thin translation layer: every function converts its arguments, calls
//! `blobcore`, and maps the result to an `int32_t` status (`BLOB_OK` = 0).
//! Conventions:
//! - results go through out-pointers, which are left untouched on error;
//! - `blob_last_error()` gives the calling thread's last message (empty
//!   after a success);
//! - handles that are NULL, freed or never issued are reported as
//!   `BLOB_ERR_NULL_POINTER` / `BLOB_ERR_INVALID_HANDLE`, never dereferenced;
//! - an array or out-pointer not aligned for its type is
//!   `BLOB_ERR_INVALID_ARGUMENT`, never read or written through;
//!   handles are sparse per-process random tokens, never reused, so a
//!   garbage value (uninitialised, off by some bytes, from another run)
//!   gets `BLOB_ERR_INVALID_HANDLE` rather than naming a live blob;
//! - every function catches panics and returns `BLOB_ERR_INTERNAL`;
//! - a NULL `BlobEngine*` means the default engine (see
//!   `blob_set_default_engine`);
//! - every handle a function hands out must be freed with its `_free`
//!   function; views keep their memory alive on their own.
//!
//! Thread safety: all functions may be called from any thread. Operations on
//! different blobs run concurrently; an operation that would write memory
//! that another thread is using fails with `BLOB_ERR_BUSY` rather than racing.
//! Raw buffers from `blob_get_buffer` are plain memory: synchronising their
//! use is the caller's job.

#![recursion_limit = "256"]
#![allow(clippy::missing_safety_doc)]

mod buffers;
mod byte_buffers;
mod create;
mod data;
mod dlpack;
mod engine;
mod formats;
mod handles;
mod layout;
mod merge;
mod ops;
mod query;
mod shared;
mod status;
mod tokens;
mod views;
mod weights;

pub use handles::{Blob, BlobEngine};
// The functions are C ABI first; re-exported so Rust callers (the fuzz
// targets, tests) can call them as `blob::blob_fill(...)`.
pub use buffers::*;
pub use create::*;
pub use data::*;
pub use dlpack::*;
pub use engine::*;
pub use formats::*;
pub use layout::*;
pub use merge::*;
pub use ops::*;
pub use query::*;
pub use shared::*;
pub use views::*;
pub use weights::*;

/// Success.
pub const BLOB_OK: i32 = 0;
/// A required pointer argument was NULL.
pub const BLOB_ERR_NULL_POINTER: i32 = 1;
/// A handle was freed, never issued, or is a garbage value.
pub const BLOB_ERR_INVALID_HANDLE: i32 = 2;
/// An argument is malformed.
pub const BLOB_ERR_INVALID_ARGUMENT: i32 = 3;
/// Dims are negative, overflow, exceed rank 32 or do not match.
pub const BLOB_ERR_SHAPE: i32 = 4;
/// Wrong or mismatched dtype.
pub const BLOB_ERR_DTYPE: i32 = 5;
/// Index, axis, position or range outside the blob.
pub const BLOB_ERR_OUT_OF_RANGE: i32 = 6;
/// A buffer was released out of LIFO order.
pub const BLOB_ERR_LIFO: i32 = 7;
/// The memory is in use by views, buffers or exports.
pub const BLOB_ERR_BUSY: i32 = 8;
/// Memory could not be allocated.
pub const BLOB_ERR_OUT_OF_MEMORY: i32 = 9;
/// A compute device failed or is missing.
pub const BLOB_ERR_DEVICE: i32 = 10;
/// File I/O failed.
pub const BLOB_ERR_IO: i32 = 11;
/// A file or byte stream is malformed.
pub const BLOB_ERR_FORMAT: i32 = 12;
/// Valid but unsupported request.
pub const BLOB_ERR_UNSUPPORTED: i32 = 13;
/// A bug in blobcore (a caught panic or broken invariant).
pub const BLOB_ERR_INTERNAL: i32 = 14;
/// A write to a read-only blob (memory lent read-only).
pub const BLOB_ERR_READ_ONLY: i32 = 15;

/// 32-bit float.
pub const BLOB_F32: i32 = 1;
/// 32-bit signed integer.
pub const BLOB_I32: i32 = 2;
/// 64-bit float.
pub const BLOB_F64: i32 = 3;
/// 64-bit signed integer.
pub const BLOB_I64: i32 = 4;
/// 8-bit unsigned integer.
pub const BLOB_U8: i32 = 5;
/// 8-bit signed integer.
pub const BLOB_I8: i32 = 6;
/// 16-bit IEEE half float.
pub const BLOB_F16: i32 = 7;
/// 16-bit brain float.
pub const BLOB_BF16: i32 = 8;
/// Boolean: one byte, 0 or 1 (nonzero bytes read as true).
pub const BLOB_BOOL: i32 = 9;
/// 16-bit signed integer.
pub const BLOB_I16: i32 = 10;
/// 16-bit unsigned integer.
pub const BLOB_U16: i32 = 11;
/// 32-bit unsigned integer.
pub const BLOB_U32: i32 = 12;
/// 64-bit unsigned integer.
pub const BLOB_U64: i32 = 13;
/// float8_e4m3fn: 8-bit float, 4 exponent and 3 mantissa bits, no infinities (largest 448).
pub const BLOB_F8_E4M3FN: i32 = 14;
/// float8_e5m2: 8-bit IEEE-style float, 5 exponent and 2 mantissa bits.
pub const BLOB_F8_E5M2: i32 = 15;
/// float8_e8m0fnu: an unsigned power-of-two scale, 2^(byte - 127); 0xff is NaN.
pub const BLOB_F8_E8M0FNU: i32 = 16;

/// Named dim: sequence length (axis 0).
pub const BLOB_DIM_BATCH_LENGTH: i32 = 0;
/// Named dim: batch (axis 1).
pub const BLOB_DIM_BATCH_WIDTH: i32 = 1;
/// Named dim: list size (axis 2).
pub const BLOB_DIM_LIST_SIZE: i32 = 2;
/// Named dim: height (axis 3).
pub const BLOB_DIM_HEIGHT: i32 = 3;
/// Named dim: width (axis 4).
pub const BLOB_DIM_WIDTH: i32 = 4;
/// Named dim: depth (axis 5).
pub const BLOB_DIM_DEPTH: i32 = 5;
/// Named dim: channels (axis 6).
pub const BLOB_DIM_CHANNELS: i32 = 6;

/// NeoML archive form: `SerializeBlob`'s (a leading isNull byte).
pub const BLOB_NEOML_BLOB: i32 = 0;
/// NeoML archive form: `CDnnBlob::Serialize`'s (no isNull byte; what
/// `neoml.Blob.store` writes and `neoml.Blob.load` reads).
pub const BLOB_NEOML_SERIALIZE: i32 = 1;

/// Where a blob's current data lives: nothing allocated yet.
pub const BLOB_HEAD_UNINITIALIZED: i32 = 0;
/// The host copy is current.
pub const BLOB_HEAD_CPU: i32 = 1;
/// The device copy is current.
pub const BLOB_HEAD_GPU: i32 = 2;
/// Host and device copies agree.
pub const BLOB_HEAD_SYNCED: i32 = 3;

/// Layout (OpenVINO's value): Any layout (dense row-major).
pub const BLOB_LAYOUT_ANY: i32 = 0;
/// Layout (OpenVINO's value): Batch, channels, height, width.
pub const BLOB_LAYOUT_NCHW: i32 = 1;
/// Layout (OpenVINO's value): Batch, height, width, channels.
pub const BLOB_LAYOUT_NHWC: i32 = 2;
/// Layout (OpenVINO's value): Batch, channels, depth, height, width.
pub const BLOB_LAYOUT_NCDHW: i32 = 3;
/// Layout (OpenVINO's value): Batch, depth, height, width, channels.
pub const BLOB_LAYOUT_NDHWC: i32 = 4;
/// Layout (OpenVINO's value): Weights.
pub const BLOB_LAYOUT_OIHW: i32 = 64;
/// Layout (OpenVINO's value): Grouped weights.
pub const BLOB_LAYOUT_GOIHW: i32 = 65;
/// Layout (OpenVINO's value): 3-D weights.
pub const BLOB_LAYOUT_OIDHW: i32 = 66;
/// Layout (OpenVINO's value): Grouped 3-D weights.
pub const BLOB_LAYOUT_GOIDHW: i32 = 67;
/// Layout (OpenVINO's value): Rank 0.
pub const BLOB_LAYOUT_SCALAR: i32 = 95;
/// Layout (OpenVINO's value): Rank 1.
pub const BLOB_LAYOUT_C: i32 = 96;
/// Layout (OpenVINO's value): Channels, height, width.
pub const BLOB_LAYOUT_CHW: i32 = 128;
/// Layout (OpenVINO's value): Height, width, channels.
pub const BLOB_LAYOUT_HWC: i32 = 129;
/// Layout (OpenVINO's value): Height, width.
pub const BLOB_LAYOUT_HW: i32 = 192;
/// Layout (OpenVINO's value): Batch, channels.
pub const BLOB_LAYOUT_NC: i32 = 193;
/// Layout (OpenVINO's value): Channels, batch.
pub const BLOB_LAYOUT_CN: i32 = 194;
/// Layout (OpenVINO's value): Described by its blocking (e.g. channels blocked by 8).
pub const BLOB_LAYOUT_BLOCKED: i32 = 200;

/// The calling thread's last error message; an empty string after a
/// success. Valid until the next blob call on this thread.
#[no_mangle]
pub extern "C" fn blob_last_error() -> *const std::ffi::c_char {
    status::last_error_ptr()
}

/// The name of the macro for a status code (`"BLOB_OK"`,
/// `"BLOB_ERR_LIFO"`, ...; `"BLOB_UNKNOWN"` for anything else). A static
/// string.
#[no_mangle]
pub extern "C" fn blob_status_str(status: i32) -> *const std::ffi::c_char {
    status::status_name(status)
}

/// The library version ("MAJOR.MINOR.PATCH"). A static string.
#[no_mangle]
pub extern "C" fn blob_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}
