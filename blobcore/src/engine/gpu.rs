//! The device side of an engine: a GPU reached through wgpu (Vulkan,
//! Metal, DX12 — Mesa's lavapipe on machines without a GPU;
//! `wgpu_device.rs`) or an NVIDIA GPU through the CUDA driver API
//! (`cuda/`). Both offer the same small set of device operations —
//! buffers, transfers, device copies, element-wise kernels, row copies,
//! tiled transposes, strided copies and reductions — which `ops/gpu.rs`
//! and the storage's SyncedMemory heads use without knowing which it is.
//!
//! A blob on a GPU engine keeps a device buffer next to its host memory,
//! both lazily allocated, with Caffe's heads deciding which side is
//! current (see `storage.rs`). Every device error is reported as
//! `Error::Device` (or `OutOfMemory`), never as a panic.

use super::cuda::{Cuda, CudaMem};
use super::wgpu_device::Wgpu;
use crate::error::{err, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub use super::adapter::{AdapterInfo, AdapterKind};
pub use super::wgpu_device::adapters;

/// A GPU device with its queue (or stream) and compiled kernels.
///
/// A device belongs to the process that opened it: a child made by
/// `fork` inherits the engine's objects but not a working driver
/// connection (CUDA refuses it; Vulkan drivers may crash or hang). So in
/// such a child every device operation is `Error::Device` before the
/// driver is called, and the device and its buffers are left as they are
/// when dropped there (the parent's driver state is not the child's to
/// free). Host memory, including host copies of GPU blobs that are
/// current, stays usable in the child.
pub struct Gpu {
    /// Dropped only in the process that opened it (see [`Drop`] below).
    backend: std::mem::ManuallyDrop<Backend>,
    /// The process that opened the device.
    pid: u32,
}

enum Backend {
    Wgpu(Box<Wgpu>),
    Cuda(Box<Cuda>),
}

/// A device buffer of either backend; clones share the allocation.
#[derive(Clone, Debug)]
pub(crate) enum DevBuf {
    Wgpu(wgpu::Buffer),
    Cuda(Arc<CudaMem>),
}

impl PartialEq for DevBuf {
    fn eq(&self, other: &DevBuf) -> bool {
        match (self, other) {
            (DevBuf::Wgpu(a), DevBuf::Wgpu(b)) => a == b,
            (DevBuf::Cuda(a), DevBuf::Cuda(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl DevBuf {
    /// The CUDA allocation behind the buffer, if it is one.
    pub(crate) fn cuda(&self) -> Option<&Arc<CudaMem>> {
        match self {
            DevBuf::Cuda(m) => Some(m),
            DevBuf::Wgpu(_) => None,
        }
    }
}

impl std::fmt::Debug for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.backend {
            Backend::Wgpu(w) => w.fmt(f),
            Backend::Cuda(c) => c.fmt(f),
        }
    }
}

/// Monotonic counters of blob data moved and device work queued.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) bytes_uploaded: AtomicU64,
    pub(crate) bytes_downloaded: AtomicU64,
    pub(crate) uploads: AtomicU64,
    pub(crate) downloads: AtomicU64,
    pub(crate) kernels: AtomicU64,
}

/// One strided N-d copy: for every index of `dims`,
/// `dst[dst_off + idx . dst_strides] = src[src_off + idx . src_strides]`
/// (in elements, or in words for the kernel). Strides may be negative
/// (reversed views); offsets are those of index 0.
#[derive(Debug, Clone)]
pub(crate) struct Strided {
    pub dims: Vec<usize>,
    pub dst_off: usize,
    pub dst_strides: Vec<isize>,
    pub src_off: usize,
    pub src_strides: Vec<isize>,
}

/// Element-wise kernel operations (the `OP` constant of `elementwise` in
/// kernels.wgsl: one pipeline each).
#[derive(Debug, Clone, Copy)]
#[repr(u32)]
pub(crate) enum Elementwise {
    Fill1 = 0,
    Fill2 = 1,
    ScaleF32 = 2,
    AddF32 = 3,
    SubF32 = 4,
    AddI32 = 5,
    SubI32 = 6,
}

impl Elementwise {
    pub(crate) const COUNT: u32 = 7;
}

/// Reductions (`op` of `reduce`).
#[derive(Debug, Clone, Copy)]
#[repr(u32)]
pub(crate) enum Reduction {
    AsumF32 = 0,
    SumsqF32 = 1,
    AsumI32 = 2,
    SumsqI32 = 3,
}

impl Counters {
    /// The counters' values now.
    pub(crate) fn snapshot(&self) -> crate::engine::EngineStats {
        crate::engine::EngineStats {
            bytes_uploaded: self.bytes_uploaded.load(Ordering::Relaxed),
            bytes_downloaded: self.bytes_downloaded.load(Ordering::Relaxed),
            uploads: self.uploads.load(Ordering::Relaxed),
            downloads: self.downloads.load(Ordering::Relaxed),
            kernels: self.kernels.load(Ordering::Relaxed),
        }
    }

    /// Sets every counter back to zero.
    pub(crate) fn reset(&self) {
        for a in [&self.bytes_uploaded, &self.bytes_downloaded, &self.uploads, &self.downloads, &self.kernels] {
            a.store(0, Ordering::Relaxed);
        }
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        if !self.forked() {
            // Closing the device reaches the driver's process-wide state
            // (a fork meanwhile left children that hung opening their own).
            let _counted = super::in_driver::close();
            // SAFETY: the backend is dropped here only, once, and never
            // used again. In a forked child it is left as it is: its
            // driver state is the parent's.
            unsafe { std::mem::ManuallyDrop::drop(&mut self.backend) }
        }
    }
}

/// Buffers of the other backend reaching a device: a bug, never input.
fn mismatch() -> crate::Error {
    err!(Internal, "a device buffer of another backend reached this GPU")
}

/// Runs the wgpu or CUDA arm with the buffers of that backend.
macro_rules! on {
    ($self:ident, $w:ident => $we:expr, $c:ident => $ce:expr) => {
        match &*$self.backend {
            Backend::Wgpu($w) => $we,
            Backend::Cuda($c) => $ce,
        }
    };
}

/// As [`on!`], for the operations that reach the driver: refused in a
/// process forked from the one that opened the device.
macro_rules! on_device {
    ($self:ident, $w:ident => $we:expr, $c:ident => $ce:expr) => {{
        $self.usable()?;
        on!($self, $w => $we, $c => $ce)
    }};
}

fn wbuf(b: &DevBuf) -> Result<&wgpu::Buffer> {
    match b {
        DevBuf::Wgpu(b) => Ok(b),
        DevBuf::Cuda(_) => Err(mismatch()),
    }
}

fn cbuf(b: &DevBuf) -> Result<&CudaMem> {
    match b {
        DevBuf::Cuda(b) => Ok(b),
        DevBuf::Wgpu(_) => Err(mismatch()),
    }
}

impl Gpu {
    /// Opens a wgpu adapter (see [`crate::Engine::gpu`]).
    pub(crate) fn open(hint: Option<&str>) -> Result<Gpu> {
        let _counted = super::in_driver::enter("open a GPU engine")?;
        Ok(Gpu::of(Backend::Wgpu(Box::new(Wgpu::open(hint)?))))
    }

    /// Opens CUDA device `ordinal` (see [`crate::Engine::cuda`]).
    pub(crate) fn open_cuda(ordinal: usize) -> Result<Gpu> {
        let _counted = super::in_driver::enter("open a CUDA engine")?;
        Ok(Gpu::of(Backend::Cuda(Box::new(Cuda::open(ordinal)?))))
    }

    fn of(backend: Backend) -> Gpu {
        Gpu { backend: std::mem::ManuallyDrop::new(backend), pid: std::process::id() }
    }

    /// True in a process forked from the one that opened the device
    /// (see [`Gpu`]): its operations are refused there and its buffers
    /// are not freed.
    pub(crate) fn forked(&self) -> bool {
        std::process::id() != self.pid
    }

    /// `Error::Device` in a forked child (see [`Gpu`]).
    pub(crate) fn usable(&self) -> Result<()> {
        if self.forked() {
            return Err(err!(
                Device,
                "this GPU engine ({}) was opened by process {} and this is a child forked from it (process {}): a GPU cannot be used across fork; open a new engine in the child if its driver allows it, or start workers with the spawn or forkserver method",
                self.adapter_name(),
                self.pid,
                std::process::id()
            ));
        }
        Ok(())
    }

    /// The CUDA device behind this GPU, if it is one.
    pub fn cuda(&self) -> Option<&Cuda> {
        match &*self.backend {
            Backend::Cuda(c) => Some(c),
            Backend::Wgpu(_) => None,
        }
    }

    /// The counters since the engine was created (or last reset).
    pub(crate) fn stats(&self) -> crate::engine::EngineStats {
        on!(self, w => w.stats(), c => c.counters().snapshot())
    }

    /// Sets every counter back to zero.
    pub(crate) fn reset_stats(&self) {
        on!(self, w => w.reset_stats(), c => c.counters().reset())
    }

    /// The adapter's name (e.g. "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)").
    pub fn adapter_name(&self) -> &str {
        on!(self, w => w.adapter_name(), c => c.name())
    }

    /// Whether the adapter is a discrete, integrated, … or software
    /// device (a CUDA device is discrete).
    pub fn adapter_kind(&self) -> AdapterKind {
        on!(self, w => w.adapter_kind(), _c => AdapterKind::Discrete)
    }

    /// The backend in use ("Vulkan", "Metal", "Dx12" or "CUDA").
    pub fn backend(&self) -> String {
        on!(self, w => w.backend(), _c => "CUDA".to_string())
    }

    /// Waits until every queued kernel and copy has finished.
    pub(crate) fn wait(&self) -> Result<()> {
        on_device!(self, w => w.wait(), c => c.wait())
    }

    /// Seconds one device buffer-to-buffer copy of `bytes` takes (the
    /// median of `runs`): the baseline GPU benchmarks report against.
    pub fn copy_seconds(&self, bytes: usize, runs: usize) -> Result<f64> {
        on_device!(self, w => w.copy_seconds(bytes, runs), c => c.copy_seconds(bytes, runs))
    }

    /// Runs `f` with this thread's kernels recorded into one submission
    /// (wgpu); CUDA queues each launch on the engine's stream as it comes.
    pub(crate) fn batch<R>(&self, what: &str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        on_device!(self, w => w.batch(what, f), _c => f())
    }

    /// The largest buffer (in bytes) one blob's device copy may take.
    pub fn max_buffer(&self) -> u64 {
        on!(self, w => w.max_buffer(), c => c.total_memory() as u64)
    }

    /// True when one device buffer can hold `len` bytes; bigger blobs on
    /// this engine run their operations on the host.
    pub fn fits(&self, len: usize) -> bool {
        on!(self, w => w.fits(len), c => c.fits(len))
    }

    /// A zero-filled device buffer holding at least `len` bytes.
    pub(crate) fn alloc(&self, len: usize) -> Result<DevBuf> {
        on_device!(self, w => w.alloc(len).map(DevBuf::Wgpu), c => c.alloc(len).map(DevBuf::Cuda))
    }

    /// Copies host bytes into the buffer at byte `at` (a multiple of 4).
    pub(crate) fn upload(&self, buf: &DevBuf, at: usize, bytes: &[u8]) -> Result<()> {
        on_device!(self, w => w.upload(wbuf(buf)?, at, bytes), c => c.upload(cbuf(buf)?, at, bytes))
    }

    /// Copies bytes `[start, start + out.len())` of the buffer into `out`,
    /// after every queued kernel.
    pub(crate) fn download(&self, buf: &DevBuf, start: usize, out: &mut [u8]) -> Result<()> {
        on_device!(self, w => w.download(wbuf(buf)?, start, out), c => c.download(cbuf(buf)?, start, out))
    }

    /// Copies `len` bytes between buffers (offsets and length multiples of 4).
    pub(crate) fn copy(&self, src: &DevBuf, src_off: usize, dst: &DevBuf, dst_off: usize, len: usize) -> Result<()> {
        on_device!(self, w => w.copy(wbuf(src)?, src_off, wbuf(dst)?, dst_off, len), c => c.copy(cbuf(src)?, src_off, cbuf(dst)?, dst_off, len))
    }

    /// A temporary copy of words `[off, off + n)` of `buf`, for kernels
    /// whose source and destination are the same buffer.
    pub(crate) fn temp_copy(&self, buf: &DevBuf, off_words: usize, n_words: usize) -> Result<DevBuf> {
        let t = self.alloc(n_words * 4)?;
        self.copy(buf, off_words * 4, &t, 0, n_words * 4)?;
        Ok(t)
    }

    /// The element-wise kernel over `n` words at `dst_off` (and `src_off`).
    pub(crate) fn elementwise(&self, op: Elementwise, dst: &DevBuf, dst_off: usize, src: Option<(&DevBuf, usize)>, n: usize, v: [u32; 2]) -> Result<()> {
        on_device!(self,
            w => {
                let s = match src { Some((b, o)) => Some((wbuf(b)?, o)), None => None };
                w.elementwise(op, wbuf(dst)?, dst_off, s, n, v)
            },
            c => {
                let s = match src { Some((b, o)) => Some((cbuf(b)?, o)), None => None };
                c.elementwise(op as u32, cbuf(dst)?, dst_off, s, n, v)
            })
    }

    /// Copies `planes` x `rows` runs of `run` words (offsets, row and
    /// plane strides in words: `d` and `s` are (offset, row, plane)).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn copy_rows(&self, dst: &DevBuf, src: &DevBuf, planes: usize, rows: usize, run: usize, d: (usize, usize, usize), s: (usize, usize, usize)) -> Result<()> {
        on_device!(self, w => w.copy_rows(wbuf(dst)?, wbuf(src)?, planes, rows, run, d, s), c => c.copy_rows(cbuf(dst)?, cbuf(src)?, planes, rows, run, d, s))
    }

    /// A tiled 2-D transpose of words, batched over `planes`: `dst[d.0 +
    /// q*d.2 + c*d.1 + r] = src[s.0 + q*s.2 + r*s.1 + c]` for r < rows,
    /// c < cols.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn transpose(&self, dst: &DevBuf, src: &DevBuf, planes: usize, rows: usize, cols: usize, d: (usize, usize, usize), s: (usize, usize, usize)) -> Result<()> {
        on_device!(self,
            w => {
                if rows < 8 || cols < 8 {
                    // Tiles of a short side would be mostly empty: wgpu's
                    // strided kernel takes it (CUDA has narrow kernels).
                    let c = Strided {
                        dims: vec![planes, cols, rows],
                        dst_off: d.0,
                        dst_strides: vec![d.2 as isize, d.1 as isize, 1],
                        src_off: s.0,
                        src_strides: vec![s.2 as isize, 1, s.1 as isize],
                    };
                    return w.strided_copy(wbuf(dst)?, wbuf(src)?, &c);
                }
                w.transpose(wbuf(dst)?, wbuf(src)?, planes, rows, cols, d, s)
            },
            c => c.transpose(cbuf(dst)?, cbuf(src)?, planes, rows, cols, d, s))
    }

    /// The strided-copy kernel; `c` is in words.
    pub(crate) fn strided_copy(&self, dst: &DevBuf, src: &DevBuf, c: &Strided) -> Result<()> {
        on_device!(self, w => w.strided_copy(wbuf(dst)?, wbuf(src)?, c), g => g.strided_copy(cbuf(dst)?, cbuf(src)?, c))
    }

    /// Sum of |x| or x^2 over `n` words at `src_off` (f32 through f32
    /// partials added in f64; i32 exactly).
    pub(crate) fn reduce(&self, op: Reduction, src: &DevBuf, src_off: usize, n: usize) -> Result<f64> {
        on_device!(self, w => w.reduce(op, wbuf(src)?, src_off, n), c => c.reduce(op as u32, cbuf(src)?, src_off, n))
    }
}
