//! File-backed storage: blobs that live on a memory map of a file.
//!
//! [`FileMap::open`] maps a whole file in O(1) (no resident memory until
//! pages are touched) in one of NumPy's `mmap_mode`s: read-only (`"r"`:
//! the blobs are read-only, writes are `ReadOnly` errors), read-write
//! (`"r+"`: `MAP_SHARED`, writes go to the file) or copy-on-write (`"c"`:
//! `MAP_PRIVATE`, writes stay private to this process). [`FileMap::blob`]
//! makes a blob over a byte range of it; the map stays alive while any
//! blob, view, export or DLPack tensor uses it, and a mapped blob's memory
//! cannot be reallocated (growing it is `Busy`). Bytes at an offset that
//! is not a multiple of the element size are copied into fresh memory
//! instead (a map cannot be viewed misaligned).
//!
//! A file mapped twice is one memory to overlap checks
//! (`file_alias.rs`): `shares_memory` and the copies' aliasing
//! checks see a write through one map reach the other.
//!
//! If the file is truncated or replaced underneath a map, the operating
//! system decides: pages beyond a truncation raise SIGBUS on access
//! (as with NumPy's memmap); replacing the file by a rename keeps the old
//! contents mapped. Keep mapped files unchanged while blobs use them.

use crate::blob::Blob;
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::shape::Shape;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

/// How a file is mapped (NumPy's `mmap_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapMode {
    /// `"r"`: read-only; blobs are read-only.
    ReadOnly,
    /// `"r+"`: shared; writes go to the file.
    ReadWrite,
    /// `"c"`: copy-on-write; writes stay private.
    CopyOnWrite,
}

impl MapMode {
    /// The mode NumPy names `"r"`, `"r+"` or `"c"` (InvalidArgument otherwise).
    pub fn from_name(name: &str) -> Result<MapMode> {
        match name {
            "r" => Ok(MapMode::ReadOnly),
            "r+" => Ok(MapMode::ReadWrite),
            "c" => Ok(MapMode::CopyOnWrite),
            other => Err(err!(InvalidArgument, "mmap_mode {other:?} is not \"r\", \"r+\" or \"c\"")),
        }
    }
}

enum Map {
    ReadOnly(memmap2::Mmap),
    Writable(memmap2::MmapMut),
    Empty,
}

/// A memory-mapped file that blobs can live on.
pub struct FileMap {
    map: Map,
    mode: MapMode,
}

// SAFETY: the map is plain memory owned by this object; blobs over it go
// through the storages' borrow tables like any other memory.
unsafe impl Send for FileMap {}
// SAFETY: as Send.
unsafe impl Sync for FileMap {}

impl FileMap {
    /// Maps the whole file at `path` in `mode` (an empty file maps to no
    /// memory). O(1): nothing is read until touched.
    pub fn open(path: impl AsRef<Path>, mode: MapMode) -> Result<Arc<FileMap>> {
        let path = path.as_ref();
        let io = |e: std::io::Error| err!(Io, "{}: {e}", path.display());
        let file = std::fs::OpenOptions::new().read(true).write(mode == MapMode::ReadWrite).open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let len = meta.len();
        if len == 0 {
            return Ok(Arc::new(FileMap { map: Map::Empty, mode }));
        }
        // SAFETY: mapping a file is unsafe because another process may
        // change it underneath; that is the documented contract of this
        // module (keep mapped files unchanged while blobs use them).
        let map = unsafe {
            match mode {
                MapMode::ReadOnly => Map::ReadOnly(memmap2::Mmap::map(&file).map_err(io)?),
                MapMode::ReadWrite => Map::Writable(memmap2::MmapMut::map_mut(&file).map_err(io)?),
                MapMode::CopyOnWrite => Map::Writable(memmap2::MmapOptions::new().map_copy(&file).map_err(io)?),
            }
        };
        let fm = FileMap { map, mode };
        // Another map of this file is the same memory for overlap checks.
        #[cfg(unix)]
        crate::file_alias::register(fm.bytes().as_ptr() as usize, fm.bytes().len(), {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        });
        Ok(Arc::new(fm))
    }

    /// The mode the file was mapped in.
    pub fn mode(&self) -> MapMode {
        self.mode
    }

    /// The mapped bytes.
    pub fn bytes(&self) -> &[u8] {
        match &self.map {
            Map::ReadOnly(m) => m,
            Map::Writable(m) => m,
            Map::Empty => &[],
        }
    }

    /// A blob of `dtype` and `shape` over bytes `[offset, offset + size)`
    /// of the map, sharing them (read-only in mode `"r"`). The range must
    /// lie inside the file (Format error otherwise). An offset that is not
    /// a multiple of the element size gives a copy in fresh memory (itself
    /// read-only in mode `"r"`, so every blob of a read-only map is).
    pub fn blob(self: &Arc<Self>, engine: &Engine, dtype: DType, shape: Shape, offset: usize) -> Result<Blob> {
        let need = shape.byte_size(dtype)?;
        let bytes = self.bytes();
        let end = offset.checked_add(need).filter(|&e| e <= bytes.len()).ok_or_else(|| {
            err!(Format, "mapped file: {need} bytes at offset {offset} run past its end ({} bytes)", bytes.len())
        })?;
        let data = &bytes[offset..end];
        if need == 0 || !(data.as_ptr() as usize).is_multiple_of(dtype.size()) {
            if self.mode == MapMode::ReadOnly {
                return read_only_copy(engine, dtype, shape, data);
            }
            let b = Blob::new(engine, dtype, shape)?;
            b.copy_from_bytes(data)?;
            return Ok(b);
        }
        let ptr = NonNull::new(data.as_ptr() as *mut u8).ok_or_else(|| err!(Internal, "mapped file: NULL map"))?;
        let keep = Arc::clone(self);
        let release: crate::ReleaseFn = Box::new(move || drop(keep));
        // SAFETY: the range lies inside the map (checked), is aligned for
        // the dtype (checked), and the map lives until `release` runs after
        // the blob's last user; it is written only in the writable modes.
        Ok(unsafe { Blob::wrap_file(engine, dtype, shape, ptr, need, release, self.mode == MapMode::ReadOnly) })
    }

    /// Drops the pages of bytes `[offset, offset + len)` from this
    /// process's resident memory (`MADV_DONTNEED`) after a one-pass reader
    /// has copied them out; they stay in the page cache and read back from
    /// the file if touched again. Only for read-only maps (no effect
    /// otherwise, where the pages may hold writes).
    pub fn release_pages(&self, offset: usize, len: usize) {
        if let Map::ReadOnly(m) = &self.map {
            let len = len.min(m.len().saturating_sub(offset));
            // SAFETY: on a read-only shared file map, DONTNEED only unmaps
            // the pages; any later read faults them back in from the file
            // with the same contents, so no reference into the map sees a
            // change. Failure is harmless (the pages stay resident).
            #[cfg(unix)]
            let _ = unsafe { m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, len) };
        }
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        #[cfg(unix)]
        if !self.bytes().is_empty() {
            crate::file_alias::unregister(self.bytes().as_ptr() as usize);
        }
    }
}

/// A read-only blob holding a copy of `data` (misaligned bytes of a
/// read-only map), in fresh 8-byte-aligned memory.
fn read_only_copy(engine: &Engine, dtype: DType, shape: Shape, data: &[u8]) -> Result<Blob> {
    let words = data.len().div_ceil(8);
    let mut v: Vec<u64> = Vec::new();
    v.try_reserve_exact(words)
        .map_err(|_| err!(OutOfMemory, "cannot allocate {} bytes for a copy of a mapped tensor", data.len()))?;
    v.resize(words, 0);
    // SAFETY: v holds words * 8 >= data.len() initialised bytes; u64 has
    // no invalid bit patterns as bytes.
    let dst = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), data.len()) };
    dst.copy_from_slice(data);
    let ptr = NonNull::new(v.as_mut_ptr().cast::<u8>()).ok_or_else(|| err!(Internal, "NULL vector"))?;
    let release: crate::ReleaseFn = Box::new(move || drop(v));
    // SAFETY: ptr is the vector's heap buffer (dangling but aligned when
    // empty, where no byte is read), 8-aligned (enough for any dtype),
    // data.len() == shape's byte size bytes long (the caller checked), and
    // it lives until `release` drops the vector after the blob's last user.
    Ok(unsafe { Blob::wrap_file(engine, dtype, shape, ptr, data.len(), release, true) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("blobcore-mapped-{}-{name}", std::process::id()))
    }

    #[test]
    fn the_three_modes_and_lifetimes() {
        let e = Engine::cpu();
        let p = tmp("modes.npy");
        Blob::from_slice(&e, &[2, 3], &[0f32, 1., 2., 3., 4., 5.]).unwrap().save_npy(&p).unwrap();
        let r = Blob::load_npy_mapped(&e, &p, MapMode::ReadOnly).unwrap();
        assert!(!r.is_writable());
        assert_eq!(r.fill(1.0).unwrap_err().code(), 15);
        assert_eq!(r.reshape(&[100]).unwrap_err().code(), 15);
        let c = Blob::load_npy_mapped(&e, &p, MapMode::CopyOnWrite).unwrap();
        c.fill(7.0).unwrap();
        assert_eq!(Blob::load_npy(&e, &p).unwrap().to_vec::<f32>().unwrap()[0], 0.0); // private
        assert_eq!(c.reshape(&[100]).unwrap_err().code(), 8); // never reallocated
        let w = Blob::load_npy_mapped(&e, &p, MapMode::ReadWrite).unwrap();
        w.fill(9.0).unwrap();
        let view = w.window(1).unwrap();
        drop((w, r, c));
        assert_eq!(view.to_vec::<f32>().unwrap(), [9.0; 3]); // the map outlives the blob
        assert_eq!(Blob::load_npy(&e, &p).unwrap().to_vec::<f32>().unwrap(), [9.0; 6]); // in the file
        drop(view);
        std::fs::remove_file(&p).unwrap();
    }

    /// Two maps of one file are one memory: `shares_memory` says so, a
    /// write through one is read through the other, and a copy between
    /// overlapping parts of the two gives the values a copy within one
    /// map gives (NumPy's result: the source as it was before).
    #[test]
    fn two_maps_of_one_file_share_memory() {
        use crate::Index;
        // Large enough for the parallel, vectorised copy kernels.
        const N: usize = 1 << 18;
        let e = Engine::cpu();
        let p = tmp("twice.npy");
        let values: Vec<f32> = (0..N as i32).map(|i| i as f32).collect();
        Blob::from_slice(&e, &[N], &values).unwrap().save_npy(&p).unwrap();
        let a = Blob::load_npy_mapped(&e, &p, MapMode::ReadWrite).unwrap();
        let b = Blob::load_npy_mapped(&e, &p, MapMode::ReadWrite).unwrap();
        let r = Blob::load_npy_mapped(&e, &p, MapMode::ReadOnly).unwrap();
        let other = Blob::from_slice(&e, &[N], &values).unwrap();
        assert!(a.shares_memory(&b) && b.shares_memory(&a) && a.shares_memory(&r));
        assert!(a.may_share_memory(&b) && !a.shares_memory(&other));
        let range = |start: i64, stop: i64| [Index::Range { start: Some(start), stop: Some(stop), step: None }];
        assert!(!a.index(&range(0, N as i64 / 2)).unwrap().shares_memory(&b.index(&range(N as i64 / 2, N as i64)).unwrap()));
        assert!(a.index(&range(0, N as i64 / 2 + 1)).unwrap().shares_memory(&b.index(&range(N as i64 / 2, N as i64)).unwrap()));
        a.set_element(&[5], &crate::Scalar::of(-1f32)).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap()[5], -1.0);
        assert_eq!(r.to_vec::<f32>().unwrap()[5], -1.0);
        a.set_element(&[5], &crate::Scalar::of(5f32)).unwrap();
        // a[1:] = b[:-1] through two maps, as within one array.
        a.index(&range(1, N as i64)).unwrap().copy_from(&b.index(&range(0, N as i64 - 1)).unwrap()).unwrap();
        let mut want = values.clone();
        want.copy_within(0..N - 1, 1);
        assert_eq!(a.to_vec::<f32>().unwrap(), want);
        b.index(&range(0, N as i64 - 1)).unwrap().add(&a.index(&range(1, N as i64)).unwrap()).unwrap();
        let mut want2 = want.clone();
        for i in 0..N - 1 {
            want2[i] = want[i] + want[i + 1];
        }
        assert_eq!(b.to_vec::<f32>().unwrap(), want2);
        drop((a, b, r));
        assert!(!Blob::load_npy(&e, &p).unwrap().shares_memory(&other));
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn bad_maps_are_errors() {
        let e = Engine::cpu();
        assert_eq!(MapMode::from_name("w").unwrap_err().code(), 3);
        assert_eq!(Blob::load_npy_mapped(&e, tmp("missing.npy"), MapMode::ReadOnly).unwrap_err().code(), 11);
        let p = tmp("short.npy");
        let mut bytes = Blob::from_slice(&e, &[4], &[1f32; 4]).unwrap().to_npy_bytes().unwrap();
        bytes.truncate(bytes.len() - 2);
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(Blob::load_npy_mapped(&e, &p, MapMode::ReadOnly).unwrap_err().code(), 12);
        let m = FileMap::open(&p, MapMode::ReadOnly).unwrap();
        assert_eq!(m.blob(&e, DType::F32, Shape::new(&[1000]).unwrap(), 0).unwrap_err().code(), 12);
        // A misaligned offset copies: read-only in mode "r", writable in "c".
        let b = m.blob(&e, DType::F32, Shape::new(&[2]).unwrap(), 1).unwrap();
        assert!(!b.is_writable());
        assert_eq!(b.to_vec::<f32>().unwrap().len(), 2);
        assert_eq!(b.reshape(&[4]).unwrap_err().code(), 15);
        let c = FileMap::open(&p, MapMode::CopyOnWrite).unwrap();
        assert!(c.blob(&e, DType::F32, Shape::new(&[2]).unwrap(), 1).unwrap().is_writable());
        std::fs::remove_file(&p).unwrap();
    }
}
