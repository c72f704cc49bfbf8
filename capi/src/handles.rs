//! The registry of live handles. A handle is an opaque, never-reused token
//! shaped like a pointer (see [`crate::tokens`]: sparse and keyed per
//! process, so garbage values do not name live blobs); it is looked up,
//! never dereferenced, so NULL, freed, double-freed or made-up handles are
//! reported as errors instead of being undefined behaviour.

use blobcore::{Engine, Error};
use crate::tokens;
use std::collections::BTreeMap;
use blobcore::fork_locks::HeldAcrossFork;
use std::sync::RwLock;

/// An n-dimensional blob (opaque; created by `blob_create_*`, freed by `blob_free`).
pub struct Blob {
    _opaque: [u8; 0],
}

/// An engine: where blobs live and run (opaque; NULL means the default CPU engine).
pub struct BlobEngine {
    _opaque: [u8; 0],
}

/// Live handles by token. (A BTreeMap rather than a HashMap: its static
/// allocations stay "still reachable" for valgrind instead of "possibly lost".)
/// Both are held across `fork` (see [`fork_rank`]).
static BLOBS: HeldAcrossFork<RwLock<BTreeMap<usize, blobcore::Blob>>> = HeldAcrossFork::new(fork_rank::BLOBS, RwLock::new(BTreeMap::new()));
static ENGINES: HeldAcrossFork<RwLock<BTreeMap<usize, Engine>>> = HeldAcrossFork::new(fork_rank::ENGINES, RwLock::new(BTreeMap::new()));

/// The C API's process-wide tables are held across `fork` (see
/// [`blobcore::fork_locks`]): a child forked while another thread held one
/// would otherwise wait for ever on its next call. They rank below the
/// core's tables ([`blobcore::fork_locks::CORE_RANK`]): the blob table is
/// held while the core works on a small blob. None of them is taken while
/// another of higher rank is held.
pub(crate) mod fork_rank {
    /// [`super::BLOBS`].
    pub(crate) const BLOBS: u32 = 10;
    /// [`super::ENGINES`].
    pub(crate) const ENGINES: u32 = 11;
    /// The table of `BlobMap` handles (weights.rs).
    pub(crate) const MAPS: u32 = 12;
    /// The table of byte buffers handed to C (byte_buffers.rs).
    pub(crate) const BYTE_BUFFERS: u32 = 13;
}

fn blobs() -> &'static RwLock<BTreeMap<usize, blobcore::Blob>> {
    BLOBS.get()
}

fn engines() -> &'static RwLock<BTreeMap<usize, Engine>> {
    ENGINES.get()
}

/// Issues a new handle for `b`.
pub fn issue_blob(b: blobcore::Blob) -> *mut Blob {
    let t = tokens::issue();
    blobs().write().unwrap_or_else(|e| e.into_inner()).insert(t, b);
    t as *mut Blob
}

/// The blob behind a handle.
pub fn blob(h: *const Blob, what: &str) -> Result<blobcore::Blob, Error> {
    if h.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL")));
    }
    blobs()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&(h as usize))
        .cloned()
        .ok_or_else(|| not_live(h, what))
}

/// Runs an O(1) query `f` on the blob behind a handle under the registry's
/// read lock (no reference-count traffic). The same rules as [`with_blob`]
/// apply to `f`.
pub fn peek_blob<R>(h: *const Blob, what: &str, f: impl FnOnce(&blobcore::Blob) -> Result<R, Error>) -> Result<R, Error> {
    if h.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL")));
    }
    let map = blobs().read().unwrap_or_else(|e| e.into_inner());
    match map.get(&(h as usize)) {
        Some(b) => f(b),
        None => Err(not_live(h, what)),
    }
}

fn not_live(h: *const Blob, what: &str) -> Error {
    Error::InvalidHandle(format!("{what} ({h:p}) is not a live blob handle (freed, or never issued)"))
}

/// Runs `f` on the blob behind a handle. For small blobs (see
/// [`blobcore::Blob::is_small`]) `f` runs under the registry's read lock,
/// which saves two reference-count updates per call; larger blobs are
/// cloned out so that no lock is held during long work.
///
/// `f` must not look up or free handles (that could wait on a writer
/// queued behind our read lock) and must not drop a blob's memory (a
/// release callback could call back into the API): use it for queries
/// and for in-place operations only.
pub fn with_blob<R>(h: *const Blob, what: &str, f: impl FnOnce(&blobcore::Blob) -> Result<R, Error>) -> Result<R, Error> {
    if h.is_null() {
        return Err(Error::NullPointer(format!("{what} is NULL")));
    }
    let map = blobs().read().unwrap_or_else(|e| e.into_inner());
    let Some(b) = map.get(&(h as usize)) else {
        return Err(not_live(h, what));
    };
    if b.is_small() {
        return f(b);
    }
    let b = b.clone();
    drop(map);
    f(&b)
}

/// Frees a blob handle (the blob lives on while views or other handles use it).
pub fn free_blob(h: *mut Blob) -> Result<(), Error> {
    if h.is_null() {
        return Err(Error::NullPointer("blob is NULL".into()));
    }
    let removed = blobs().write().unwrap_or_else(|e| e.into_inner()).remove(&(h as usize));
    match removed {
        Some(b) => {
            drop(b);
            Ok(())
        }
        None => Err(Error::InvalidHandle(format!("{h:p} is not a live blob handle (double free?)"))),
    }
}

/// Issues a new engine handle.
pub fn issue_engine(e: Engine) -> *mut BlobEngine {
    let t = tokens::issue();
    engines().write().unwrap_or_else(|e| e.into_inner()).insert(t, e);
    t as *mut BlobEngine
}

/// The engine behind a handle; NULL is the default CPU engine.
pub fn engine(h: *const BlobEngine) -> Result<Engine, Error> {
    if h.is_null() {
        // The default engine: the CPU unless blob_set_default_engine or
        // BLOBCORE_ENGINE chose another.
        return Engine::default_engine();
    }
    engines()
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&(h as usize))
        .cloned()
        .ok_or_else(|| Error::InvalidHandle(format!("engine {h:p} is not a live engine handle")))
}

/// Frees an engine handle.
pub fn free_engine(h: *mut BlobEngine) -> Result<(), Error> {
    if h.is_null() {
        return Err(Error::NullPointer("engine is NULL".into()));
    }
    let removed = engines().write().unwrap_or_else(|e| e.into_inner()).remove(&(h as usize));
    // Dropped after the lock: the last handle of a GPU engine tears it down.
    match removed {
        Some(e) => {
            drop(e);
            Ok(())
        }
        None => Err(Error::InvalidHandle(format!("{h:p} is not a live engine handle (double free?)"))),
    }
}

/// Handle arrays are bounded so that a garbage count cannot make a huge slice.
const MAX_LIST: usize = 1 << 20;

/// The blobs of a C array of `n` handles, each checked (`what[i]` names a
/// bad one).
pub fn blob_list(list: *const *const Blob, n: usize, what: &str) -> Result<Vec<blobcore::Blob>, Error> {
    crate::status::array(list, n, MAX_LIST, what)?
        .iter()
        .enumerate()
        .map(|(i, &h)| blob(h, &format!("{what}[{i}]")))
        .collect()
}
