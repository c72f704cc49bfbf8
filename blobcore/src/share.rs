//! Blobs in shared memory, across processes (as `torch.multiprocessing`
//! shares tensors).
//!
//! [`Blob::share_memory`] moves a blob's memory into a memory file
//! (`blobcore::shared`, a private module) in place; views, windows and regions of it are in
//! shared memory too. [`Blob::shared_handle`] describes a blob as another
//! process can rebuild it: a new descriptor of the file, the byte offset
//! of the blob's base in it and its layout. [`Blob::from_shared_handle`]
//! (or [`Blob::from_shared_fd`] for dense blobs) maps the file and gives a
//! blob over the same memory: writes on either side are seen on the other.
//! Descriptors travel between processes the usual way (`SCM_RIGHTS` over a
//! Unix socket, inheritance, Python's `multiprocessing.reduction`).
//!
//! One map per file per process: a file that is already mapped here (a
//! blob sent to a worker and back) is not mapped again; the new blob uses
//! the same storage, so the borrow rules and overlap checks see that both
//! reach the same bytes.
//!
//! Shared memory cannot be reallocated: growing a shared blob beyond its
//! capacity is `Busy` (other processes would keep the old memory).

use crate::placement::Placement;
use crate::blob::{needs_dense, Blob, State};
use crate::dtype::DType;
use crate::engine::Engine;
use crate::error::{err, Result};
use crate::layout::{BlockingDesc, Layout, TensorDesc};
use crate::shape::{Shape, MAX_RANK};
use crate::storage::Storage;
use std::sync::Arc;

#[cfg(unix)]
use crate::shared::{FileInfo, SharedMem};
#[cfg(unix)]
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

/// A blob as another process can rebuild it over the same memory.
#[cfg(unix)]
#[derive(Debug)]
pub struct SharedHandle {
    /// A descriptor of the memory file, owned by the handle.
    pub fd: OwnedFd,
    /// Byte offset in the file of the blob's base: element 0 of dense
    /// data, the desc's base otherwise (for views with reversed axes, the
    /// lowest element).
    pub offset: u64,
    /// dtype, dims and layout (strides, blocking, padding).
    pub desc: TensorDesc,
    /// The blob was read-only: the rebuilt one is too.
    pub read_only: bool,
}

const MAGIC: &[u8; 5] = b"BCSH\x01";

#[cfg(unix)]
impl SharedHandle {
    /// Everything but the descriptor, as bytes (for a pickle): read back by
    /// [`SharedHandle::from_layout_bytes`].
    pub fn layout_bytes(&self) -> Vec<u8> {
        encode(self.offset, &self.desc, self.read_only)
    }

    /// A handle from a descriptor and [`SharedHandle::layout_bytes`];
    /// malformed bytes are a Format error.
    pub fn from_layout_bytes(fd: OwnedFd, bytes: &[u8]) -> Result<SharedHandle> {
        let (offset, desc, read_only) = decode(bytes)?;
        Ok(SharedHandle { fd, offset, desc, read_only })
    }
}

fn encode(offset: u64, desc: &TensorDesc, read_only: bool) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    let dense = desc.is_dense();
    out.push(u8::from(read_only) | (u8::from(!dense) << 1));
    out.extend_from_slice(&desc.dtype().code().to_le_bytes());
    out.extend_from_slice(&offset.to_le_bytes());
    let words = |out: &mut Vec<u8>, v: &[usize]| v.iter().for_each(|&x| out.extend_from_slice(&(x as u64).to_le_bytes()));
    out.push(desc.dims().len() as u8);
    words(&mut out, desc.dims());
    if !dense {
        let b = desc.blocking();
        out.extend_from_slice(&desc.layout().code().to_le_bytes());
        out.push(b.blk_dims().len() as u8);
        words(&mut out, b.blk_dims());
        words(&mut out, b.order());
        out.extend_from_slice(&(b.offset_padding() as u64).to_le_bytes());
        words(&mut out, b.offsets_to_data());
        b.strides().iter().for_each(|&s| out.extend_from_slice(&(s as i64).to_le_bytes()));
    }
    out
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>().ok_or_else(|| err!(Format, "shared blob handle: cut short"))?;
        self.0 = rest;
        Ok(*head)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take::<1>()?[0])
    }

    fn usize(&mut self) -> Result<usize> {
        let v = u64::from_le_bytes(self.take()?);
        usize::try_from(v).ok().filter(|&v| i64::try_from(v).is_ok()).ok_or_else(|| err!(Format, "shared blob handle: value {v} is too large"))
    }

    fn usizes(&mut self, n: usize) -> Result<Vec<usize>> {
        (0..n).map(|_| self.usize()).collect()
    }
}

fn decode(bytes: &[u8]) -> Result<(u64, TensorDesc, bool)> {
    let mut r = Reader(bytes);
    if r.take::<5>()? != *MAGIC {
        return Err(err!(Format, "shared blob handle: not a blobcore handle (or of another version)"));
    }
    let flags = r.u8()?;
    if flags > 3 {
        return Err(err!(Format, "shared blob handle: unknown flags {flags:#x}"));
    }
    let dtype = DType::from_code(i32::from_le_bytes(r.take()?)).map_err(|e| err!(Format, "shared blob handle: {e}"))?;
    let offset = u64::from_le_bytes(r.take()?);
    let rank = usize::from(r.u8()?);
    if rank > MAX_RANK {
        return Err(err!(Format, "shared blob handle: rank {rank} exceeds {MAX_RANK}"));
    }
    let dims = r.usizes(rank)?;
    let bad = |e: crate::Error| err!(Format, "shared blob handle: {e}");
    let desc = if flags & 2 == 0 {
        TensorDesc::dense(dtype, &dims).map_err(bad)?
    } else {
        let layout = Layout::from_code(i64::from(i32::from_le_bytes(r.take()?))).map_err(bad)?;
        let n = usize::from(r.u8()?);
        if n > 2 * MAX_RANK {
            return Err(err!(Format, "shared blob handle: {n} blocked dims"));
        }
        let blk = r.usizes(n)?;
        let order = r.usizes(n)?;
        let padding = r.usize()?;
        let offsets = r.usizes(n)?;
        let strides = (0..n).map(|_| Ok(i64::from_le_bytes(r.take()?) as isize)).collect::<Result<Vec<isize>>>()?;
        let b = BlockingDesc::from_parts(&blk, &order, padding, &offsets, &strides).map_err(bad)?;
        TensorDesc::from_parts(dtype, &dims, layout, b).map_err(bad)?
    };
    if !r.0.is_empty() {
        return Err(err!(Format, "shared blob handle: {} bytes past its end", r.0.len()));
    }
    Ok((offset, desc, flags & 1 != 0))
}

/// The storages over shared memory files in this process, by file: one
/// map per file, and one storage per (engine, read-only) over it.
#[cfg(unix)]
// A plain vector (few files are shared at a time): its allocation is
// reachable from its start, so leak checkers see it as in use at exit.
type Registry = Vec<((u64, u64), std::sync::Weak<Storage>)>;

/// The registry of this process, held across `fork` (see
/// [`crate::fork_locks`]): a child inherits the maps, so the entries too.
#[cfg(unix)]
static REGISTRY: crate::fork_locks::HeldAcrossFork<std::sync::Mutex<Registry>> =
    crate::fork_locks::HeldAcrossFork::new(crate::fork_locks::CORE_RANK + 2, std::sync::Mutex::new(Vec::new()));

#[cfg(unix)]
fn registry() -> std::sync::MutexGuard<'static, Registry> {
    // Every critical section leaves the map consistent: a poisoned lock is taken over.
    REGISTRY.get().lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(unix)]
fn same_gpu(a: Option<&Arc<crate::engine::gpu::Gpu>>, b: Option<&Arc<crate::engine::gpu::Gpu>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

/// A storage over the file behind `fd` for `engine`: the one this process
/// already has when it has one, else over the existing map, else a new map.
#[cfg(unix)]
fn storage_for(engine: &Engine, fd: BorrowedFd<'_>, info: FileInfo, read_only: bool) -> Result<Arc<Storage>> {
    let gpu = engine.gpu_device();
    let mut reg = registry();
    reg.retain(|(_, w)| w.strong_count() > 0);
    let live: Vec<Arc<Storage>> = reg.iter().filter(|(k, _)| *k == info.key).filter_map(|(_, w)| w.upgrade()).collect();
    let mem = match live.iter().find_map(|s| s.shared_mem()) {
        Some(m) => m,
        None => Arc::new(SharedMem::open(fd, info)?),
    };
    let want_writable = !(read_only || mem.read_only());
    let found = live.iter().find(|s| same_gpu(s.gpu(), gpu) && s.is_writable() == want_writable).cloned();
    let storage = match found {
        Some(s) => s,
        None => {
            let s = Storage::shared_on(mem, gpu.cloned(), read_only);
            reg.push((info.key, Arc::downgrade(&s)));
            s
        }
    };
    drop(reg);
    // The other storages go after the lock: dropping the last user of one unmaps it.
    drop(live);
    Ok(storage)
}

#[cfg(unix)]
fn register(storage: &Arc<Storage>) {
    if let Some(mem) = storage.shared_mem() {
        let mut reg = registry();
        reg.retain(|(_, w)| w.strong_count() > 0);
        reg.push((mem.info().key, Arc::downgrade(storage)));
    }
}

impl Blob {
    /// True when the blob's memory is a shared memory file other processes
    /// can map ([`Blob::share_memory`], or a blob rebuilt from a handle).
    pub fn is_shared(&self) -> bool {
        self.state().storage.is_shared()
    }

    /// Moves the blob's memory into shared memory in place (PyTorch's
    /// `share_memory_()`): values, dims, layout and handle stay; a no-op
    /// when it already is. `Busy` while anything else uses the current
    /// memory (views, held buffers, guards, exports), for blobs on
    /// memory-mapped files, and for writable memory the blob does not own
    /// (wrapped with `blob_wrap`, or shared with NumPy or DLPack: its owner
    /// would no longer see the blob's writes). Memory lent read-only is
    /// copied into the file (its owner's later writes are not seen). A read-only blob moves into a file sealed
    /// against writes. Memory never touched stays untouched (it reads as
    /// zeros). The diff companion, if any, stays where it is.
    #[cfg(unix)]
    pub fn share_memory(&self) -> Result<()> {
        let mut st = self.state_mut();
        if st.storage.is_shared() {
            return Ok(());
        }
        if let Some(why) = self.busy_reason(&st) {
            return Err(err!(Busy, "cannot move the blob into shared memory: {why}"));
        }
        if st.storage.is_external() && st.storage.is_writable() {
            return Err(err!(Busy, "cannot move the blob into shared memory: {}; share a copy() instead", Blob::LENT));
        }
        let old = &st.storage;
        let (len, read_only) = (old.len(), !old.is_writable());
        let mem = if old.is_host_allocated() || old.head() != crate::storage::Head::Uninitialized {
            let p = old.host_read()?;
            // SAFETY: the storage holds `len` bytes at `p` (a device copy
            // was brought back by host_read), and nothing else reaches it:
            // this state lock is held for writing and the storage has no
            // other user (busy_reason checked the reference count).
            let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), len) };
            SharedMem::create(len, Some(bytes), read_only)?
        } else {
            SharedMem::create(len, None, read_only)?
        };
        let fresh = Storage::shared_on(Arc::new(mem), old.gpu().cloned(), read_only);
        register(&fresh);
        let old = std::mem::replace(&mut st.storage, fresh);
        drop(st);
        // After the lock: the old memory's release may run foreign code.
        drop(old);
        Ok(())
    }

    /// Not available off Unix: `Unsupported`.
    #[cfg(not(unix))]
    pub fn share_memory(&self) -> Result<()> {
        Err(err!(Unsupported, "shared memory needs a Unix system"))
    }

    /// The blob as another process can rebuild it ([`SharedHandle`]): a new
    /// descriptor of its memory file (close-on-exec; the handle owns it),
    /// where its base lies and its layout. `InvalidArgument` when the blob
    /// is not in shared memory.
    #[cfg(unix)]
    pub fn shared_handle(&self) -> Result<SharedHandle> {
        let (storage, offset, desc) = {
            let st = self.state();
            let desc = match st.desc() {
                Some(d) => d.clone(),
                None => TensorDesc::dense(self.dtype(), st.shape.dims())?,
            };
            (Arc::clone(&st.storage), st.offset, desc)
        };
        let mem = storage
            .shared_mem()
            .ok_or_else(|| err!(InvalidArgument, "the blob is not in shared memory; call share_memory() first"))?;
        let offset = (offset as u64) * self.dtype().size() as u64;
        Ok(SharedHandle { fd: mem.dup_fd()?, offset, desc, read_only: !storage.is_writable() })
    }

    /// A blob over the memory a [`SharedHandle`] describes (the descriptor
    /// is duplicated; the handle keeps its own). The descriptor must be a
    /// shared memory file (see [`Blob::from_shared_fd`]) holding every
    /// element the layout reaches; the blob is read-only when the handle
    /// or the file says so. It is not a view: it owns its place in the
    /// memory, and its capacity is its element count.
    #[cfg(unix)]
    pub fn from_shared_handle(engine: &Engine, handle: &SharedHandle) -> Result<Blob> {
        Blob::on_shared_fd(engine, &handle.desc, handle.fd.as_fd(), handle.offset, handle.read_only)
    }

    /// A dense blob of `dtype` and `shape` over the shared memory file
    /// behind `fd` (duplicated: the caller keeps and closes its own),
    /// starting `offset` bytes in. The descriptor must be an open regular
    /// file in memory (a `memfd_create` file or tmpfs) sealed against
    /// shrinking (`F_SEAL_SHRINK`, as blobcore's files are: a file that can
    /// shrink under a map crashes its readers); the offset a multiple of
    /// the element size; and the file long enough. `InvalidArgument`
    /// otherwise, before anything is mapped. A write-sealed file or a
    /// descriptor opened read-only gives a read-only blob.
    #[cfg(unix)]
    pub fn from_shared_fd(engine: &Engine, dtype: DType, shape: Shape, fd: BorrowedFd<'_>, offset: u64) -> Result<Blob> {
        let desc = TensorDesc::dense(dtype, shape.dims())?;
        Blob::on_shared_fd(engine, &desc, fd, offset, false)
    }

    /// A descriptor of a dense blob's shared memory file (close-on-exec,
    /// the caller's to close) and the byte offset of its element 0: what
    /// [`Blob::from_shared_fd`] takes in another process. Strided, padded
    /// and blocked blobs need [`Blob::shared_handle`].
    #[cfg(unix)]
    pub fn shared_fd(&self) -> Result<(OwnedFd, u64)> {
        if !self.is_dense() {
            return Err(needs_dense());
        }
        let h = self.shared_handle()?;
        Ok((h.fd, h.offset))
    }

    #[cfg(unix)]
    fn on_shared_fd(engine: &Engine, desc: &TensorDesc, fd: BorrowedFd<'_>, offset: u64, read_only: bool) -> Result<Blob> {
        let info = FileInfo::inspect(fd)?;
        let dtype = desc.dtype();
        let es = dtype.size() as u64;
        if !offset.is_multiple_of(es) {
            return Err(err!(InvalidArgument, "offset {offset} is not a multiple of the {dtype} element size ({es} bytes)"));
        }
        let span = desc.span()? as u64;
        let end = (offset / es).checked_add(span).and_then(|e| e.checked_mul(es));
        match end {
            Some(end) if end <= info.size as u64 || span == 0 && offset <= info.size as u64 => {}
            _ => {
                return Err(err!(
                    InvalidArgument,
                    "the shared memory file holds {} bytes; a {dtype} blob of {:?} at offset {offset} needs {} bytes",
                    info.size,
                    desc.dims(),
                    end.map_or_else(|| "more than 2^64".to_string(), |e| e.to_string())
                ))
            }
        }
        let storage = storage_for(engine, fd, info, read_only)?;
        if storage.len() != info.size {
            return Err(err!(Internal, "shared storage of {} bytes for a file of {}", storage.len(), info.size));
        }
        let shape = Shape::new(desc.dims())?;
        let count = shape.count();
        let state = State {
            shape,
            storage,
            offset: (offset / es) as usize,
            capacity: count,
            view: None,
            placement: if desc.is_dense() { Placement::Dense } else { Placement::Desc(Box::new(desc.clone())) },
        };
        Ok(Blob::from_state(engine, dtype, state))
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::index::Index;

    fn iota(dims: &[usize]) -> Blob {
        let n: usize = dims.iter().product();
        let v: Vec<f32> = (0..n).map(|i| i as f32).collect();
        Blob::from_slice(&Engine::cpu(), dims, &v).unwrap()
    }

    fn rebuilt(b: &Blob) -> Blob {
        let h = b.shared_handle().unwrap();
        // Through the bytes a pickle carries and a new descriptor.
        let h2 = SharedHandle::from_layout_bytes(h.fd.try_clone().unwrap(), &h.layout_bytes()).unwrap();
        Blob::from_shared_handle(&Engine::cpu(), &h2).unwrap()
    }

    #[test]
    fn share_memory_keeps_values_in_place_and_views_follow() {
        let b = iota(&[3, 4]);
        assert!(!b.is_shared());
        b.share_memory().unwrap();
        assert!(b.is_shared());
        b.share_memory().unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap(), (0..12).map(|i| i as f32).collect::<Vec<_>>());
        let w = b.window(1).unwrap();
        assert!(w.is_shared());
        assert!(b.index(&[Index::Range { start: None, stop: None, step: Some(-2) }]).unwrap().is_shared());
        assert!(!b.copy().unwrap().is_shared());
        // Never-touched memory stays untouched and reads as zeros.
        let z = Blob::tensor(&Engine::cpu(), DType::F64, &[1000]).unwrap();
        z.share_memory().unwrap();
        assert!(z.to_vec::<f64>().unwrap().iter().all(|&x| x == 0.0));
    }

    #[test]
    fn busy_while_the_old_memory_is_used() {
        let b = iota(&[4]);
        let w = b.window(1).unwrap();
        assert_eq!(b.share_memory().unwrap_err().code(), 8);
        assert_eq!(w.share_memory().unwrap_err().code(), 8);
        drop(w);
        let e = b.export().unwrap();
        assert_eq!(b.share_memory().unwrap_err().code(), 8);
        drop(e);
        b.share_memory().unwrap();
        // Shared memory cannot be reallocated; shrinking and regrowing within capacity can.
        assert_eq!(b.reshape(&[5]).unwrap_err().code(), 8);
        b.reshape(&[2]).unwrap();
        b.reshape(&[4]).unwrap();
        assert!(b.is_shared());
    }

    #[test]
    fn a_handle_rebuilds_the_same_memory() {
        let b = iota(&[6, 5]);
        b.share_memory().unwrap();
        let w = b.window(2).unwrap();
        w.set_parent_pos(3).unwrap();
        let (fd, off) = w.shared_fd().unwrap();
        assert_eq!(off, 3 * 5 * 4);
        let r = Blob::from_shared_fd(&Engine::cpu(), DType::F32, Shape::new(&[2, 5]).unwrap(), fd.as_fd(), off).unwrap();
        drop(fd);
        assert_eq!(r.to_vec::<f32>().unwrap(), w.to_vec::<f32>().unwrap());
        r.fill(-1.0).unwrap();
        assert_eq!(b.to_vec::<f32>().unwrap()[15..25], [-1.0; 10]);
        // One storage per file: the same borrow rules cover both.
        assert!(Arc::ptr_eq(&r.snapshot().storage, &b.snapshot().storage));
        let g = b.write::<f32>().unwrap();
        assert_eq!(r.fill(0.0).unwrap_err().code(), 8);
        drop(g);
        // Not shared, not dense.
        assert_eq!(iota(&[2]).shared_fd().unwrap_err().code(), 3);
        let t = b.permuted_view(&[1, 0]).unwrap();
        assert!(t.shared_fd().is_err());
        assert_eq!(rebuilt(&t).to_vec::<f32>().unwrap(), t.to_vec::<f32>().unwrap());
    }

    #[test]
    fn read_only_blobs_share_read_only() {
        let data: &'static mut [f32] = Box::leak(vec![1.5f32; 8].into_boxed_slice());
        let p = std::ptr::NonNull::new(data.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: leaked: valid for ever.
        let b = unsafe { Blob::wrap_read_only(&Engine::cpu(), DType::F32, Shape::new(&[8]).unwrap(), p, 32, None) }.unwrap();
        b.share_memory().unwrap();
        assert!(b.is_shared() && !b.is_writable());
        assert_eq!(b.to_vec::<f32>().unwrap(), [1.5; 8]);
        let r = rebuilt(&b);
        assert!(!r.is_writable());
        assert_eq!(r.fill(0.0).unwrap_err().code(), 15);
        // A writable blob rebuilt as read-only stays a separate, read-only storage.
        let w = iota(&[4]);
        w.share_memory().unwrap();
        let mut h = w.shared_handle().unwrap();
        h.read_only = true;
        let r = Blob::from_shared_handle(&Engine::cpu(), &h).unwrap();
        assert_eq!(r.fill(0.0).unwrap_err().code(), 15);
        w.fill(2.0).unwrap();
        assert_eq!(r.to_vec::<f32>().unwrap(), [2.0; 4]);
    }

    #[test]
    fn hostile_handles_are_errors() {
        let b = iota(&[4, 4]);
        b.share_memory().unwrap();
        let h = b.shared_handle().unwrap();
        let e = Engine::cpu();
        let dense = |dims: &[usize], off| Blob::from_shared_fd(&e, DType::F32, Shape::new(dims).unwrap(), h.fd.as_fd(), off);
        assert_eq!(dense(&[4, 4], 0).unwrap().count(), 16);
        assert!(dense(&[4, 4], 4).unwrap_err().to_string().contains("needs 68 bytes"));
        assert!(dense(&[17], 0).is_err());
        assert!(dense(&[1], 2).unwrap_err().to_string().contains("multiple"));
        assert!(dense(&[1], u64::MAX - 3).is_err());
        assert_eq!(dense(&[0], 64).unwrap().count(), 0);
        assert!(dense(&[0], 68).is_err());
        // Every cut of valid layout bytes, and every flipped byte, is an error or a blob inside the file.
        let v = b.permuted_view(&[1, 0]).unwrap().index(&[Index::Range { start: Some(3), stop: None, step: Some(-1) }]).unwrap();
        let bytes = v.shared_handle().unwrap().layout_bytes();
        for cut in 0..bytes.len() {
            assert_eq!(SharedHandle::from_layout_bytes(h.fd.try_clone().unwrap(), &bytes[..cut]).unwrap_err().code(), 12);
        }
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut m = bytes.clone();
                m[i] ^= 1 << bit;
                if let Ok(hh) = SharedHandle::from_layout_bytes(h.fd.try_clone().unwrap(), &m) {
                    if let Ok(r) = Blob::from_shared_handle(&e, &hh) {
                        r.to_vec::<f32>().map(|_| ()).or_else(|_| r.to_vec::<f64>().map(|_| ())).ok();
                        let _ = r.copy();
                    }
                }
            }
        }
    }

    #[test]
    fn handles_that_put_two_elements_in_one_place_are_errors() {
        // A writable blob whose elements share memory would race under
        // parallel writes: blobcore never writes such a handle, and refuses one.
        let b = iota(&[1000]);
        b.share_memory().unwrap();
        let v = b.index(&[Index::Range { start: None, stop: None, step: Some(-1) }]).unwrap();
        let h = v.shared_handle().unwrap();
        let bytes = h.layout_bytes();
        let n = bytes.len();
        // The reversed view's padding, offset and stride are its last 24 bytes.
        assert_eq!(bytes[n - 8..], (-1i64).to_le_bytes());
        assert_eq!(rebuilt(&v).to_vec::<f32>().unwrap(), v.to_vec::<f32>().unwrap());
        for (padding, stride) in [(0u64, 0i64), (999, -1), (0, 1)] {
            let mut m = bytes.clone();
            m[n - 24..n - 16].copy_from_slice(&padding.to_le_bytes());
            m[n - 8..].copy_from_slice(&stride.to_le_bytes());
            let r = SharedHandle::from_layout_bytes(h.fd.try_clone().unwrap(), &m);
            if stride == 0 {
                let e = r.unwrap_err();
                assert_eq!(e.code(), 12);
                assert!(e.to_string().contains("two elements in one place"), "{e}");
            } else {
                assert_eq!(Blob::from_shared_handle(&Engine::cpu(), &r.unwrap()).unwrap().count(), 1000);
            }
        }
        // Two axes of one stride, on a transposed view's handle.
        let t = iota(&[4, 4]);
        t.share_memory().unwrap();
        let tv = t.permuted_view(&[1, 0]).unwrap();
        let h = tv.shared_handle().unwrap();
        let mut m = h.layout_bytes();
        let n = m.len();
        m[n - 16..n - 8].copy_from_slice(&1i64.to_le_bytes());
        assert_eq!(SharedHandle::from_layout_bytes(h.fd.try_clone().unwrap(), &m).unwrap_err().code(), 12);
    }

    #[test]
    fn views_of_empty_handles_with_reversed_axes_are_empty() {
        // A [0, 2] layout whose second axis runs backwards (stride -1, from
        // padding 1): it addresses nothing, and so do its views, whatever
        // offset their keys would give element 0 (`[..., ::-2]` starts at
        // -1 elements; it was an Internal error).
        let b = iota(&[8]);
        b.share_memory().unwrap();
        let h = b.shared_handle().unwrap();
        let e = Engine::cpu();
        let bl = BlockingDesc::from_parts(&[0, 2], &[0, 1], 1, &[0, 0], &[2, -1]).unwrap();
        let desc = TensorDesc::from_parts(DType::F32, &[0, 2], Layout::Blocked, bl).unwrap();
        let hh = SharedHandle::from_layout_bytes(h.fd.try_clone().unwrap(), &encode(0, &desc, false)).unwrap();
        let v = Blob::from_shared_handle(&e, &hh).unwrap();
        assert_eq!((v.dims(), v.count()), (vec![0, 2], 0));
        let r = |start, step| Index::Range { start, stop: None, step: Some(step) };
        for key in [vec![Index::Ellipsis, r(None, -2)], vec![r(None, 1), r(Some(1), -1)], vec![r(None, -1), r(None, 3)], vec![Index::Ellipsis, Index::At(1)]] {
            let w = v.index(&key).unwrap();
            assert_eq!(w.count(), 0, "{key:?}");
            assert_eq!(w.export().unwrap().byte_span(), 0);
            assert!(w.copy().unwrap().to_vec::<f32>().unwrap().is_empty());
        }
        assert_eq!(v.transposed(0, 1).unwrap().dims(), [2, 0]);
        assert_eq!(b.to_vec::<f32>().unwrap(), iota(&[8]).to_vec::<f32>().unwrap());
    }

    fn key() -> impl proptest::strategy::Strategy<Value = (Vec<usize>, Vec<(i64, i64, i64)>, bool)> {
        use proptest::prelude::*;
        proptest::collection::vec(1usize..5, 1..4).prop_flat_map(|dims| {
            let n = dims.len();
            (Just(dims), proptest::collection::vec((-5i64..5, -5i64..5, prop_oneof![-2i64..0, 1i64..3]), n), any::<bool>())
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(31), ..Default::default() })]
        /// Any view of a shared blob rebuilt from its handle reads the
        /// view's values and writes the view's memory.
        #[test]
        fn rebuilt_views_are_the_views((dims, ranges, transpose) in key()) {
            let b = iota(&dims);
            b.share_memory().unwrap();
            let keys: Vec<Index> = ranges.iter().map(|&(s, e, st)| Index::Range { start: Some(s), stop: Some(e), step: Some(st) }).collect();
            let mut v = b.index(&keys).unwrap();
            if transpose {
                let axes: Vec<usize> = (0..v.rank()).rev().collect();
                v = v.permuted_view(&axes).unwrap();
            }
            let r = rebuilt(&v);
            proptest::prop_assert_eq!(r.dims(), v.dims());
            proptest::prop_assert_eq!(r.to_vec::<f32>().unwrap(), v.to_vec::<f32>().unwrap());
            r.fill(-7.0).unwrap();
            proptest::prop_assert!(v.to_vec::<f32>().unwrap().iter().all(|&x| x == -7.0));
            let minus = b.to_vec::<f32>().unwrap().iter().filter(|&&x| x == -7.0).count();
            proptest::prop_assert_eq!(minus, v.count());
        }
    }
}
