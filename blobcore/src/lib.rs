//! # blobcore
//!
//! Tensor storage for neural networks, unifying NeoML's `CDnnBlob` (seven
//! named dims, windows, merge/split, LIFO buffers), Caffe's `Blob` +
//! `SyncedMemory` (data/diff, lazy allocation, capacity), OpenVINO's
//! layouts and Serrano's `Tensor` (aligned memory, shared slices) — without
//! their crashes: every bad input is an [`Error`], views never dangle, and
//! safe Rust can never hold two live mutable slices over the same memory.
//!
//! ```
//! use blobcore::{Blob, BlobDim, DType, Engine};
//! # fn main() -> blobcore::Result<()> {
//! let e = Engine::cpu();
//! let a = Blob::from_slice(&e, &[2, 3], &[1f32, 2., 3., 4., 5., 6.])?;
//! let b = Blob::from_slice(&e, &[2, 1], &[7f32, 8.])?;
//! let m = Blob::merged(&[&a, &b], 1)?;          // numpy.concatenate(axis=1)
//! assert_eq!(m.to_vec::<f32>()?, [1., 2., 3., 7., 4., 5., 6., 8.]);
//!
//! let w = m.window(1)?;                          // a view of row 0
//! w.set_parent_pos(1)?;                          // now row 1
//! w.fill(0.0)?;
//! assert_eq!(m.to_vec::<f32>()?, [1., 2., 3., 7., 0., 0., 0., 0.]);
//!
//! let img = Blob::image2d(&e, DType::F32, 1, 2, 4, 4, 3)?;
//! assert_eq!(img.named_dim(BlobDim::Channels)?, 3);
//! assert_eq!(img.object_count()?, 2);
//! # Ok(()) }
//! ```

//! ## Thread safety
//!
//! [`Blob`] and [`Engine`] are `Send + Sync`. Operations on different
//! blobs, or on disjoint memory of one blob, run concurrently; an operation
//! that would write memory another thread is reading or writing through a
//! guard or an operation returns [`Error::Busy`] instead of racing. Raw
//! memory handed out (`get_buffer` pointers, [`Export`]s) is outside these
//! checks: synchronising its use is the caller's job.

#![deny(missing_docs)]

pub(crate) mod axes;
pub mod blob;
pub mod blob_map;
pub mod boolean;
pub(crate) mod convert;
pub(crate) mod file_alias;
pub mod first_use;
#[cfg(all(test, unix))]
pub(crate) mod fork_child;
pub mod fork_locks;
pub mod buffer;
pub mod dtype;
pub mod engine;
pub mod dlpack;
pub mod dlpack_exchange;
pub mod element;
pub mod error;
pub mod export;
pub mod float8;
pub mod index;
pub(crate) mod integer_scale;
pub(crate) mod integer_scale_avx2;
pub(crate) mod integer_scale_avx512;
pub mod lent_back;
pub mod raw;
pub mod io;
pub(crate) mod machine_memory;
pub mod layout;
pub mod mapped;
pub mod ops;
pub(crate) mod overlap;
pub(crate) mod placement;
pub mod shape;
pub mod share;
#[cfg(unix)]
pub(crate) mod shared;
pub mod storage;
pub mod view;

pub use blob::{Blob, SMALL_BYTES};
pub use blob_map::{BlobMap, Entry};
pub use buffer::{ReadGuard, WriteGuard};
pub use boolean::Bool;
pub use dtype::{Arith, DType, Element};
pub use float8::{F8E4M3Fn, F8E5M2, F8E8M0Fnu};
pub use element::Scalar;
pub use engine::{Engine, EngineKind, EngineStats};
pub use error::{Error, Result};
pub use export::Export;
pub use index::Index;
pub use io::neoml::NeomlForm;
pub use layout::{is_row_major, layout_by_dims, row_major_strides, BlockingDesc, Layout, TensorDesc};
pub use shape::{BlobDim, Shape, MAX_RANK};
pub use storage::{Head, ReleaseFn};
#[cfg(unix)]
pub use share::SharedHandle;

/// The crate version, as `blob_version()` reports it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The README's Rust quick start, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
