//! The CUDA engine's device: an NVIDIA GPU through the CUDA driver API
//! (`libcuda`, loaded at run time by `cudarc`, so building blobcore needs
//! no CUDA toolkit), with kernels compiled from `kernels.cu` by NVRTC when
//! `libnvrtc` is present and loaded from the precompiled `kernels.ptx`
//! otherwise.
//!
//! One primary context and one stream per engine. Every call makes the
//! context current on the calling thread first, so blobs can be used from
//! any thread. Kernels and device copies are queued on the engine's
//! stream; transfers to the host wait for it. Every driver error is
//! reported as `Error::Device` (`OutOfMemory` for allocations), never as a
//! panic; a machine without a driver gets `Error::Device` from
//! [`Cuda::open`].

use crate::error::{err, Result};
use cudarc::driver::{result as cu, sys};
use std::ffi::c_void;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Threads per block of the one-dimensional kernels.
const BLOCK: u32 = 256;
/// Dimensions of a strided copy the kernel takes (`MAX_RANK` in kernels.cu).
const KERNEL_RANK: usize = 32;
/// The kernels compiled from kernels.cu for compute capability 7.0 by
/// NVRTC 12.0 (`make cuda-ptx`); the driver JIT-compiles them for the
/// device when NVRTC is missing.
const PRECOMPILED_PTX: &str = include_str!("kernels.ptx");
/// The kernels' source, for NVRTC.
pub const KERNELS_CU: &str = include_str!("kernels.cu");

/// Words of the shape parameter of `strided_copy` (`StridedShape`).
#[repr(C)]
#[derive(Clone, Copy)]
struct StridedShape {
    rank: u64,
    dims: [u64; KERNEL_RANK],
    dst_strides: [i64; KERNEL_RANK],
    src_strides: [i64; KERNEL_RANK],
}

/// The engine's loaded kernels.
struct Kernels {
    elementwise: sys::CUfunction,
    elementwise4: sys::CUfunction,
    copy_rows: sys::CUfunction,
    copy_rows4: sys::CUfunction,
    transpose_tiles: sys::CUfunction,
    transpose_short_rows: sys::CUfunction,
    transpose_short_cols: sys::CUfunction,
    strided_rows: sys::CUfunction,
    strided_rows4: sys::CUfunction,
    strided_copy: sys::CUfunction,
    reduce_f32: sys::CUfunction,
    reduce_f32x4: sys::CUfunction,
    reduce_i32: sys::CUfunction,
}

/// What the engine's context and stream are; shared with every buffer so
/// a buffer can free itself after the engine handle is gone.
struct Context {
    dev: sys::CUdevice,
    ctx: sys::CUcontext,
    stream: sys::CUstream,
}

// SAFETY: CUDA contexts, streams and functions are process-wide handles
// the driver API documents as usable from any thread (a thread makes the
// context current before using them, which every method here does).
unsafe impl Send for Context {}
unsafe impl Sync for Context {}
unsafe impl Send for Kernels {}
unsafe impl Sync for Kernels {}

impl Context {
    /// Makes the context current on this thread.
    fn enter(&self) -> Result<()> {
        // SAFETY: `ctx` is the retained primary context, alive until Drop.
        unsafe { cu::ctx::set_current(self.ctx) }.map_err(|e| driver("making the CUDA context current", e))
    }

    fn sync(&self) -> Result<()> {
        self.enter()?;
        // SAFETY: the stream belongs to this context and lives until Drop.
        unsafe { cu::stream::synchronize(self.stream) }.map_err(|e| driver("waiting for the CUDA stream", e))
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // Releasing the context reaches the driver's process-wide state:
        // counted, so that a child forked meanwhile opens no device.
        let _counted = super::in_driver::close();
        // SAFETY: the last user of the context is gone (buffers hold an
        // Arc<Context>); errors at teardown have no one to report to.
        unsafe {
            let _ = cu::ctx::set_current(self.ctx);
            let _ = cu::stream::synchronize(self.stream);
            let _ = cu::stream::destroy(self.stream);
            let _ = cu::primary_ctx::release(self.dev);
        }
    }
}

/// A device allocation: owned by the engine (freed when the last handle
/// drops) or imported (DLPack), released through its owner's callback.
pub(crate) struct CudaMem {
    ptr: sys::CUdeviceptr,
    len: usize,
    ctx: Arc<Context>,
    /// The owner's release of imported memory (run once, in Drop).
    release: std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl CudaMem {
    /// The device address of byte 0.
    pub(crate) fn ptr(&self) -> u64 {
        self.ptr
    }
}

impl Drop for CudaMem {
    fn drop(&mut self) {
        match self.release.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            // An imported tensor: its owner frees it (the DLPack deleter),
            // once the kernels queued on it have finished (the owner may
            // reuse the memory at once). Runs with no blobcore lock held:
            // buffers are dropped outside the storage's lock.
            Some(release) => {
                let _ = self.ctx.sync();
                release()
            }
            None => {
                // SAFETY: `ptr` came from cuMemAlloc in this context and no
                // other handle to it exists (this is the last Arc).
                let _ = self.ctx.sync();
                let _ = unsafe { cu::free_sync(self.ptr) };
            }
        }
    }
}

impl std::fmt::Debug for CudaMem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaMem({:#x}, {} bytes)", self.ptr, self.len)
    }
}

/// Which compiler produced the loaded kernels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelSource {
    /// NVRTC compiled kernels.cu for the device's architecture.
    Nvrtc,
    /// The precompiled PTX, JIT-compiled by the driver; the text says why
    /// NVRTC was not used.
    Precompiled(String),
}

/// An NVIDIA GPU opened through the CUDA driver API.
pub struct Cuda {
    ctx: Arc<Context>,
    kernels: Kernels,
    #[allow(dead_code)]
    module: sys::CUmodule,
    ordinal: usize,
    name: String,
    compute: (i32, i32),
    multiprocessors: u32,
    total_mem: usize,
    driver_version: i32,
    source: KernelSource,
    counters: super::gpu::Counters,
}

// SAFETY: see `Context`; the module handle is only read.
unsafe impl Send for Cuda {}
unsafe impl Sync for Cuda {}

impl std::fmt::Debug for Cuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cuda({} #{})", self.name, self.ordinal)
    }
}

fn driver(what: &str, e: cu::DriverError) -> crate::Error {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    if e.0 == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        return err!(OutOfMemory, "{what}: {name}");
    }
    err!(Device, "{what}: {name}")
}

/// True when the CUDA driver library can be loaded on this machine.
pub fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the library and drops it.
    unsafe { sys::is_culib_present() }
}

/// True when NVRTC can be loaded on this machine.
pub fn nvrtc_present() -> bool {
    // SAFETY: as above.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Compiles kernels.cu to PTX for `arch` (e.g. "compute_90") with NVRTC.
pub fn compile_ptx(arch: &str) -> Result<String> {
    use cudarc::nvrtc::result as rtc;
    if !nvrtc_present() {
        return Err(err!(Device, "NVRTC (libnvrtc) is not installed"));
    }
    let src = std::ffi::CString::new(KERNELS_CU).map_err(|e| err!(Internal, "kernels.cu: {e}"))?;
    let name = c"blobcore_kernels.cu";
    let prog = rtc::create_program(&src, Some(name)).map_err(|e| err!(Device, "NVRTC: {e:?}"))?;
    let opts = [format!("--gpu-architecture={arch}"), "--std=c++11".to_string()];
    // SAFETY: `prog` was created above and is destroyed once below.
    let compiled = unsafe { rtc::compile_program(prog, &opts) };
    let out = match compiled {
        Ok(()) => unsafe { rtc::get_ptx(prog) }.map_err(|e| err!(Device, "NVRTC: {e:?}")).map(|v| {
            let bytes: Vec<u8> = v.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        }),
        Err(e) => {
            let log = unsafe { rtc::get_program_log(prog) }
                .map(|v| v.iter().take_while(|&&c| c != 0).map(|&c| c as u8 as char).collect::<String>())
                .unwrap_or_default();
            Err(err!(Device, "NVRTC cannot compile the kernels: {e:?}\n{log}"))
        }
    };
    // SAFETY: created above, not used after this.
    let _ = unsafe { rtc::destroy_program(prog) };
    out
}

impl Cuda {
    /// Opens GPU `ordinal` (0 is the first) and loads the kernels. No
    /// driver, no such device or a driver error is `Error::Device`.
    pub fn open(ordinal: usize) -> Result<Cuda> {
        if !driver_present() {
            return Err(err!(Device, "no CUDA driver (libcuda.so) on this machine"));
        }
        // The driver library is loaded by symbol at first use; a symbol an
        // old driver lacks makes cudarc panic, which becomes an error here.
        match std::panic::catch_unwind(|| Self::open_inner(ordinal)) {
            Ok(r) => r,
            Err(p) => {
                let what = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
                Err(err!(Device, "the CUDA driver cannot be used: {what}"))
            }
        }
    }

    fn open_inner(ordinal: usize) -> Result<Cuda> {
        cu::init().map_err(|e| driver("initialising CUDA", e))?;
        let count = cu::device::get_count().map_err(|e| driver("counting CUDA devices", e))?;
        if ordinal >= count.max(0) as usize {
            return Err(err!(Device, "no CUDA device {ordinal} ({count} found)"));
        }
        let dev = cu::device::get(ordinal as i32).map_err(|e| driver("opening the CUDA device", e))?;
        // SAFETY: `dev` is a valid device; the context is released in Drop.
        let ctx = unsafe { cu::primary_ctx::retain(dev) }.map_err(|e| driver("retaining the primary context", e))?;
        unsafe { cu::ctx::set_current(ctx) }.map_err(|e| driver("making the CUDA context current", e))?;
        let stream = match cu::stream::create(cu::stream::StreamKind::Default) {
            Ok(s) => s,
            Err(e) => {
                let _ = unsafe { cu::primary_ctx::release(dev) };
                return Err(driver("creating a CUDA stream", e));
            }
        };
        let ctx = Arc::new(Context { dev, ctx, stream });
        let attr = |a| unsafe { cu::device::get_attribute(dev, a) }.map_err(|e| driver("reading a device attribute", e));
        use sys::CUdevice_attribute as A;
        let compute = (attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?, attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?);
        let multiprocessors = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
        let name = cu::device::get_name(dev).map_err(|e| driver("reading the device name", e))?;
        let total_mem = unsafe { cu::device::total_mem(dev) }.map_err(|e| driver("reading the device memory", e))?;
        let mut driver_version = 0;
        unsafe { sys::cuDriverGetVersion(&mut driver_version) }.result().map_err(|e| driver("reading the driver version", e))?;
        let arch = format!("compute_{}{}", compute.0, compute.1);
        // BLOBCORE_CUDA_NVRTC=0 loads the precompiled PTX even where NVRTC
        // exists (to test that path).
        let nvrtc = std::env::var("BLOBCORE_CUDA_NVRTC").map_or(true, |v| v != "0");
        let compiled = if nvrtc { compile_ptx(&arch) } else { Err(err!(Device, "BLOBCORE_CUDA_NVRTC=0")) };
        let (ptx, source) = match compiled {
            Ok(p) => (p, KernelSource::Nvrtc),
            Err(e) => (PRECOMPILED_PTX.to_string(), KernelSource::Precompiled(e.to_string())),
        };
        let module = Self::load(&ptx)?;
        let get = |name: &str| -> Result<sys::CUfunction> {
            let c = std::ffi::CString::new(name).map_err(|e| err!(Internal, "{e}"))?;
            // SAFETY: `module` is loaded and lives as long as the engine.
            unsafe { cu::module::get_function(module, c) }.map_err(|e| driver(&format!("finding kernel {name}"), e))
        };
        let kernels = Kernels {
            elementwise: get("elementwise")?,
            elementwise4: get("elementwise4")?,
            copy_rows: get("copy_rows")?,
            copy_rows4: get("copy_rows4")?,
            transpose_tiles: get("transpose_tiles")?,
            transpose_short_rows: get("transpose_short_rows")?,
            transpose_short_cols: get("transpose_short_cols")?,
            strided_rows: get("strided_rows")?,
            strided_rows4: get("strided_rows4")?,
            strided_copy: get("strided_copy")?,
            reduce_f32: get("reduce_f32")?,
            reduce_f32x4: get("reduce_f32x4")?,
            reduce_i32: get("reduce_i32")?,
        };
        Ok(Cuda {
            ctx,
            kernels,
            module,
            ordinal,
            name,
            compute,
            multiprocessors,
            total_mem,
            driver_version,
            source,
            counters: Default::default(),
        })
    }

    fn load(ptx: &str) -> Result<sys::CUmodule> {
        let c = std::ffi::CString::new(ptx).map_err(|e| err!(Internal, "PTX: {e}"))?;
        // SAFETY: a NUL-terminated PTX image, read during the call only.
        unsafe { cu::module::load_data(c.as_ptr() as *const c_void) }.map_err(|e| driver("loading the kernels' PTX", e))
    }

    /// The device's name, e.g. "NVIDIA H200".
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device's ordinal (its DLPack `device_id`).
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute
    }

    /// Streaming multiprocessors.
    pub fn multiprocessors(&self) -> u32 {
        self.multiprocessors
    }

    /// Device memory in bytes.
    pub fn total_memory(&self) -> usize {
        self.total_mem
    }

    /// The driver's CUDA version, e.g. 12040 for 12.4.
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }

    /// Where the kernels came from.
    pub fn kernel_source(&self) -> &KernelSource {
        &self.source
    }

    /// The engine's stream (`CUstream`) as an integer, for DLPack.
    pub fn stream_handle(&self) -> usize {
        self.ctx.stream as usize
    }

    pub(crate) fn counters(&self) -> &super::gpu::Counters {
        &self.counters
    }

    /// Waits for every queued kernel and copy.
    pub(crate) fn wait(&self) -> Result<()> {
        self.ctx.sync()
    }

    /// True when one allocation of `len` bytes may fit the device.
    pub fn fits(&self, len: usize) -> bool {
        len <= self.total_mem
    }

    /// A zero-filled device allocation of at least `len` bytes (whole
    /// 16-byte units, so the four-word kernels can read any allocation).
    pub(crate) fn alloc(&self, len: usize) -> Result<Arc<CudaMem>> {
        let size = len.div_ceil(16).max(1) * 16;
        if size > self.total_mem {
            return Err(err!(OutOfMemory, "{len} bytes exceed {}'s memory ({} bytes)", self.name, self.total_mem));
        }
        self.ctx.enter()?;
        // SAFETY: the context is current; the allocation is owned by the
        // returned CudaMem, which frees it once.
        let ptr = unsafe { cu::malloc_sync(size) }.map_err(|e| driver("allocating device memory", e))?;
        let mem = Arc::new(CudaMem { ptr, len: size, ctx: Arc::clone(&self.ctx), release: std::sync::Mutex::new(None) });
        // SAFETY: `ptr` addresses `size` bytes just allocated; the memset
        // is queued on the engine's stream, before any later use.
        unsafe { cu::memset_d8_async(ptr, 0, size, self.ctx.stream) }.map_err(|e| driver("clearing device memory", e))?;
        Ok(mem)
    }

    /// Wraps `len` bytes of device memory at `ptr` that someone else owns
    /// (a DLPack producer): `release` runs once when blobcore is done.
    ///
    /// # Safety
    /// `ptr` must address `len` bytes of memory on this device that stay
    /// valid until `release` runs.
    pub(crate) unsafe fn wrap(&self, ptr: u64, len: usize, release: Box<dyn FnOnce() + Send>) -> Arc<CudaMem> {
        Arc::new(CudaMem { ptr, len, ctx: Arc::clone(&self.ctx), release: std::sync::Mutex::new(Some(release)) })
    }

    fn check(&self, mem: &CudaMem, at: usize, len: usize, what: &str) -> Result<()> {
        if at.checked_add(len).is_none_or(|end| end > mem.len) {
            return Err(err!(Internal, "{what}: bytes {at}..+{len} outside a {}-byte device buffer", mem.len));
        }
        Ok(())
    }

    /// Copies host bytes into the allocation at byte `at`.
    pub(crate) fn upload(&self, mem: &CudaMem, at: usize, bytes: &[u8]) -> Result<()> {
        self.check(mem, at, bytes.len(), "upload")?;
        if bytes.is_empty() {
            return Ok(());
        }
        self.counters.uploads.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_uploaded.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.ctx.enter()?;
        // SAFETY: the range was checked above; the copy reads `bytes`
        // during the call and the stream is synchronised before return,
        // so the host slice outlives the transfer.
        unsafe { cu::memcpy_htod_async(mem.ptr + at as u64, bytes, self.ctx.stream) }.map_err(|e| driver("uploading to the device", e))?;
        self.ctx.sync()
    }

    /// Copies bytes `[start, start + out.len())` of the allocation into
    /// `out`, after every queued kernel.
    pub(crate) fn download(&self, mem: &CudaMem, start: usize, out: &mut [u8]) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        self.counters.downloads.fetch_add(1, Ordering::Relaxed);
        self.counters.bytes_downloaded.fetch_add(out.len() as u64, Ordering::Relaxed);
        self.read_back(mem, start, out)
    }

    fn read_back(&self, mem: &CudaMem, start: usize, out: &mut [u8]) -> Result<()> {
        self.check(mem, start, out.len(), "download")?;
        self.ctx.enter()?;
        // SAFETY: range checked; the stream is synchronised before `out`
        // is released to the caller.
        unsafe { cu::memcpy_dtoh_async(out, mem.ptr + start as u64, self.ctx.stream) }.map_err(|e| driver("downloading from the device", e))?;
        self.ctx.sync()
    }

    /// Copies `len` bytes between allocations, queued on the stream.
    pub(crate) fn copy(&self, src: &CudaMem, src_off: usize, dst: &CudaMem, dst_off: usize, len: usize) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.check(src, src_off, len, "device copy")?;
        self.check(dst, dst_off, len, "device copy")?;
        self.counters.kernels.fetch_add(1, Ordering::Relaxed);
        self.ctx.enter()?;
        // SAFETY: both ranges checked; the allocations are kept alive by
        // the caller's handles until the stream is synchronised (every
        // buffer's Drop synchronises before freeing).
        unsafe { cu::memcpy_dtod_async(dst.ptr + dst_off as u64, src.ptr + src_off as u64, len, self.ctx.stream) }
            .map_err(|e| driver("copying on the device", e))
    }

    /// Seconds one device-to-device copy of `bytes` takes (median of
    /// `runs`): the baseline the benchmarks report against.
    pub fn copy_seconds(&self, bytes: usize, runs: usize) -> Result<f64> {
        let (a, b) = (self.alloc(bytes)?, self.alloc(bytes)?);
        median(runs, || {
            self.copy(&a, 0, &b, 0, bytes)?;
            self.wait()
        })
    }

    /// Seconds to move `bytes` host to device and device to host, from
    /// pageable memory (a `Vec`) and from pinned memory (cuMemAllocHost):
    /// `[h2d pageable, d2h pageable, h2d pinned, d2h pinned]`.
    pub fn transfer_seconds(&self, bytes: usize, runs: usize) -> Result<[f64; 4]> {
        let dev = self.alloc(bytes)?;
        let mut host = vec![1u8; bytes];
        let h2d = median(runs, || self.upload(&dev, 0, &host))?;
        let d2h = median(runs, || self.read_back(&dev, 0, &mut host))?;
        self.ctx.enter()?;
        // SAFETY: a pinned host allocation of `bytes`, freed below.
        let pinned = unsafe { cu::malloc_host(bytes, 0) }.map_err(|e| driver("allocating pinned memory", e))? as *mut u8;
        // SAFETY: `pinned` addresses `bytes` bytes until free_host below.
        let slice = unsafe { std::slice::from_raw_parts_mut(pinned, bytes) };
        let r = (|| {
            let h2d_p = median(runs, || self.upload(&dev, 0, slice))?;
            let d2h_p = median(runs, || self.read_back(&dev, 0, slice))?;
            Ok([h2d, d2h, h2d_p, d2h_p])
        })();
        // SAFETY: no use of `slice` after this point.
        let _ = unsafe { cu::free_host(pinned as *mut c_void) };
        r
    }

    /// Blocks of `BLOCK` threads for `n` items, at most 32 per SM (the
    /// kernels loop over the rest).
    fn blocks(&self, n: u64) -> u32 {
        n.div_ceil(BLOCK as u64).clamp(1, self.multiprocessors as u64 * 32) as u32
    }

    /// Launches `f` with `args` (pointers to each argument's value).
    fn launch(&self, what: &str, f: sys::CUfunction, grid: (u32, u32, u32), block: (u32, u32, u32), args: &mut [*mut c_void]) -> Result<()> {
        self.counters.kernels.fetch_add(1, Ordering::Relaxed);
        self.ctx.enter()?;
        // SAFETY: `f` is a kernel of the loaded module whose parameter list
        // matches `args` (each launcher below builds them from the
        // signature in kernels.cu); the buffers it addresses were range
        // checked by the launcher and stay alive until the stream is
        // synchronised.
        unsafe { cu::launch_kernel(f, grid, block, 0, self.ctx.stream, args) }.map_err(|e| driver(what, e))
    }

    /// The element-wise kernel over `n` words at word `dst_off` (and
    /// `src_off` of `src`); `op` is the `Elementwise` code.
    pub(crate) fn elementwise(&self, op: u32, dst: &CudaMem, dst_off: usize, src: Option<(&CudaMem, usize)>, n: usize, v: [u32; 2]) -> Result<()> {
        if n == 0 {
            return Ok(());
        }
        self.check(dst, dst_off * 4, n * 4, "element-wise kernel")?;
        if let Some((s, o)) = src {
            self.check(s, o * 4, n * 4, "element-wise kernel")?;
        }
        let src_ptr = |o: usize| src.map_or(0, |(s, so)| s.ptr + (so + o) as u64 * 4);
        let (mut op, mut v0, mut v1) = (op, v[0], v[1]);
        let aligned16 = |p: u64| p.is_multiple_of(16);
        let (vec, aligned) = (n / 4, aligned16(dst.ptr + dst_off as u64 * 4) && src.is_none_or(|(s, o)| aligned16(s.ptr + o as u64 * 4)));
        let mut done = 0;
        if aligned && vec > 0 {
            let (mut d, mut s, mut cnt) = (dst.ptr + dst_off as u64 * 4, src_ptr(0), vec as u64);
            let mut args = [&mut op as *mut u32 as *mut c_void, &mut d as *mut u64 as _, &mut s as *mut u64 as _, &mut cnt as *mut u64 as _, &mut v0 as *mut u32 as _, &mut v1 as *mut u32 as _];
            self.launch("element-wise kernel", self.kernels.elementwise4, (self.blocks(vec as u64), 1, 1), (BLOCK, 1, 1), &mut args)?;
            done = vec * 4;
        }
        if done < n {
            let (mut d, mut s, mut cnt) = (dst.ptr + (dst_off + done) as u64 * 4, src_ptr(done), (n - done) as u64);
            let mut args = [&mut op as *mut u32 as *mut c_void, &mut d as *mut u64 as _, &mut s as *mut u64 as _, &mut cnt as *mut u64 as _, &mut v0 as *mut u32 as _, &mut v1 as *mut u32 as _];
            self.launch("element-wise kernel", self.kernels.elementwise, (self.blocks(cnt), 1, 1), (BLOCK, 1, 1), &mut args)?;
        }
        Ok(())
    }

    /// The last word a (planes, rows, run) grid touches, plus one.
    fn grid_end(planes: usize, rows: usize, run: usize, (off, row, plane): (usize, usize, usize)) -> usize {
        off + (planes - 1) * plane + (rows - 1) * row + run
    }

    /// Copies `planes` x `rows` runs of `run` words; `d` and `s` are
    /// (offset, row stride, plane stride) in words.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn copy_rows(&self, dst: &CudaMem, src: &CudaMem, planes: usize, rows: usize, run: usize, d: (usize, usize, usize), s: (usize, usize, usize)) -> Result<()> {
        if planes == 0 || rows == 0 || run == 0 {
            return Ok(());
        }
        self.check(dst, 0, Self::grid_end(planes, rows, run, d) * 4, "row copy")?;
        self.check(src, 0, Self::grid_end(planes, rows, run, s) * 4, "row copy")?;
        // Few long runs between two allocations: one driver copy each.
        if dst.ptr != src.ptr && planes * rows <= 64 && run >= 16 << 10 {
            for q in 0..planes {
                for r in 0..rows {
                    let (from, to) = ((s.0 + q * s.2 + r * s.1) * 4, (d.0 + q * d.2 + r * d.1) * 4);
                    self.copy(src, from, dst, to, run * 4)?;
                }
            }
            return Ok(());
        }
        // Four words per thread when everything is 16-byte aligned.
        let vec = [run, d.0, d.1, d.2, s.0, s.1, s.2].iter().all(|x| x.is_multiple_of(4)) && dst.ptr.is_multiple_of(16) && src.ptr.is_multiple_of(16);
        let unit = if vec { 4 } else { 1 };
        let (mut dp, mut sp) = (dst.ptr, src.ptr);
        let mut v: [u64; 9] = [planes, rows, run / unit, d.0 / unit, d.1 / unit, d.2 / unit, s.0 / unit, s.1 / unit, s.2 / unit].map(|x| x as u64);
        let [a0, a1, a2, a3, a4, a5, a6, a7, a8] = &mut v;
        let mut args: [*mut c_void; 11] = [
            &mut dp as *mut u64 as _, &mut sp as *mut u64 as _,
            a0 as *mut u64 as _, a1 as *mut u64 as _, a2 as *mut u64 as _, a3 as *mut u64 as _, a4 as *mut u64 as _,
            a5 as *mut u64 as _, a6 as *mut u64 as _, a7 as *mut u64 as _, a8 as *mut u64 as _,
        ];
        let (run_u, total) = ((run / unit) as u64, (planes * rows) as u64);
        let target = self.multiprocessors as u64 * 32;
        let (gx, gy) = if run_u < BLOCK as u64 {
            // Runs packed BLOCK / run to a block.
            (total.div_ceil(BLOCK as u64 / run_u).clamp(1, target), 1)
        } else if total >= target {
            (target, 1)
        } else {
            (total, run_u.div_ceil(BLOCK as u64).min(target.div_ceil(total)).clamp(1, 65535))
        };
        let f = if vec { self.kernels.copy_rows4 } else { self.kernels.copy_rows };
        self.launch("row copy", f, (gx as u32, gy as u32, 1), (BLOCK, 1, 1), &mut args)
    }

    /// A tiled transpose: `dst[d.0 + q*d.2 + c*d.1 + r] = src[s.0 + q*s.2 +
    /// r*s.1 + c]` for r < rows, c < cols, q < planes (words).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn transpose(&self, dst: &CudaMem, src: &CudaMem, planes: usize, rows: usize, cols: usize, d: (usize, usize, usize), s: (usize, usize, usize)) -> Result<()> {
        if planes == 0 || rows == 0 || cols == 0 {
            return Ok(());
        }
        self.check(dst, 0, Self::grid_end(planes, cols, rows, d) * 4, "transpose")?;
        self.check(src, 0, Self::grid_end(planes, rows, cols, s) * 4, "transpose")?;
        let (mut dp, mut sp) = (dst.ptr, src.ptr);
        let mut v: [u64; 9] = [planes, rows, cols, d.0, d.1, d.2, s.0, s.1, s.2].map(|x| x as u64);
        let [a0, a1, a2, a3, a4, a5, a6, a7, a8] = &mut v;
        let mut args: [*mut c_void; 11] = [
            &mut dp as *mut u64 as _, &mut sp as *mut u64 as _,
            a0 as *mut u64 as _, a1 as *mut u64 as _, a2 as *mut u64 as _, a3 as *mut u64 as _, a4 as *mut u64 as _,
            a5 as *mut u64 as _, a6 as *mut u64 as _, a7 as *mut u64 as _, a8 as *mut u64 as _,
        ];
        // A short side (fewer than 8 rows or columns) leaves tiles mostly
        // empty: one thread per line walks the short side instead.
        if rows < 8 || cols < 8 {
            let (f, lines) = if rows < 8 { (self.kernels.transpose_short_rows, planes * cols) } else { (self.kernels.transpose_short_cols, planes * rows) };
            return self.launch("narrow transpose", f, (self.blocks(lines as u64), 1, 1), (BLOCK, 1, 1), &mut args);
        }
        let gx = (cols as u64).div_ceil(32).clamp(1, 1 << 20) as u32;
        let gy = (rows as u64).div_ceil(32).clamp(1, 65535) as u32;
        self.launch("tiled transpose", self.kernels.transpose_tiles, (gx, gy, planes.clamp(1, 65535) as u32), (32, 8, 1), &mut args)
    }

    /// The strided-copy kernel; offsets and strides in words.
    pub(crate) fn strided_copy(&self, dst: &CudaMem, src: &CudaMem, c: &super::gpu::Strided) -> Result<()> {
        let n: usize = c.dims.iter().product();
        if n == 0 {
            return Ok(());
        }
        if c.dims.len() > KERNEL_RANK {
            return Err(err!(Unsupported, "a strided copy of rank {} exceeds the kernel's {KERNEL_RANK}", c.dims.len()));
        }
        // Both sides' extents: the lowest and highest word each reaches.
        let reach = |off: usize, strides: &[isize]| -> Option<(i128, i128)> {
            let (mut lo, mut hi) = (off as i128, off as i128);
            for (&dim, &st) in c.dims.iter().zip(strides) {
                let far = (dim as i128 - 1) * st as i128;
                if far < 0 { lo += far } else { hi += far }
            }
            Some((lo, hi))
        };
        for (mem, off, st) in [(dst, c.dst_off, &c.dst_strides), (src, c.src_off, &c.src_strides)] {
            match reach(off, st) {
                Some((lo, hi)) if lo >= 0 && (hi + 1) * 4 <= mem.len as i128 => {}
                _ => return Err(err!(Internal, "strided copy outside a {}-byte device buffer", mem.len)),
            }
        }
        let r = c.dims.len();
        let run = c.dims[r - 1];
        if r >= 2 && run >= 8 && c.dst_strides[r - 1] == 1 && c.src_strides[r - 1] == 1 {
            return self.strided_rows(dst, src, c);
        }
        let mut shape = StridedShape { rank: c.dims.len() as u64, dims: [1; KERNEL_RANK], dst_strides: [0; KERNEL_RANK], src_strides: [0; KERNEL_RANK] };
        for (k, &x) in c.dims.iter().enumerate() {
            shape.dims[k] = x as u64;
            shape.dst_strides[k] = c.dst_strides[k] as i64;
            shape.src_strides[k] = c.src_strides[k] as i64;
        }
        let (mut dp, mut sp, mut nn, mut d0, mut s0) = (dst.ptr, src.ptr, n as u64, c.dst_off as u64, c.src_off as u64);
        let mut args: [*mut c_void; 6] = [
            &mut dp as *mut u64 as _, &mut sp as *mut u64 as _, &mut nn as *mut u64 as _,
            &mut d0 as *mut u64 as _, &mut s0 as *mut u64 as _, &mut shape as *mut StridedShape as _,
        ];
        self.launch("strided copy", self.kernels.strided_copy, (self.blocks(n as u64), 1, 1), (BLOCK, 1, 1), &mut args)
    }

    /// A strided copy whose inner dim is contiguous on both sides (checked
    /// by the caller, with the bounds): runs copied by warps that step
    /// from one run to the next without dividing (uint4s when aligned).
    fn strided_rows(&self, dst: &CudaMem, src: &CudaMem, c: &super::gpu::Strided) -> Result<()> {
        let r = c.dims.len();
        let run = c.dims[r - 1];
        let outer = &c.dims[..r - 1];
        let aligned = |x: isize| x.rem_euclid(4) == 0;
        let vec = run.is_multiple_of(4)
            && c.dst_off.is_multiple_of(4)
            && c.src_off.is_multiple_of(4)
            && c.dst_strides[..r - 1].iter().chain(&c.src_strides[..r - 1]).all(|&x| aligned(x))
            && dst.ptr.is_multiple_of(16)
            && src.ptr.is_multiple_of(16);
        let unit = if vec { 4 } else { 1 };
        let mut shape = StridedShape { rank: (r - 1) as u64, dims: [1; KERNEL_RANK], dst_strides: [0; KERNEL_RANK], src_strides: [0; KERNEL_RANK] };
        for (k, &x) in outer.iter().enumerate() {
            shape.dims[k] = x as u64;
            shape.dst_strides[k] = (c.dst_strides[k] / unit as isize) as i64;
            shape.src_strides[k] = (c.src_strides[k] / unit as isize) as i64;
        }
        let runs: u64 = outer.iter().map(|&x| x as u64).product();
        let chunk = (runs / (self.multiprocessors as u64 * 512)).clamp(1, 256);
        let warps = runs.div_ceil(chunk);
        let blocks = (warps * 32).div_ceil(BLOCK as u64).clamp(1, u32::MAX as u64) as u32;
        let (mut dp, mut sp, mut nr, mut rl, mut ch, mut d0, mut s0) =
            (dst.ptr, src.ptr, runs, (run / unit) as u64, chunk, (c.dst_off / unit) as u64, (c.src_off / unit) as u64);
        let mut args: [*mut c_void; 8] = [
            &mut dp as *mut u64 as _, &mut sp as *mut u64 as _, &mut nr as *mut u64 as _, &mut rl as *mut u64 as _,
            &mut ch as *mut u64 as _, &mut d0 as *mut u64 as _, &mut s0 as *mut u64 as _, &mut shape as *mut StridedShape as _,
        ];
        let f = if vec { self.kernels.strided_rows4 } else { self.kernels.strided_rows };
        self.launch("strided row copy", f, (blocks, 1, 1), (BLOCK, 1, 1), &mut args)
    }

    /// Sum of |x| (`op` 0, 2) or x^2 (1, 3) over `n` words at word
    /// `src_off`: f32 (0, 1) as per-block f32 partials added in f64 here;
    /// i32 (2, 3) exactly, as 128-bit integer partials (two u64 words).
    pub(crate) fn reduce(&self, op: u32, src: &CudaMem, src_off: usize, n: usize) -> Result<f64> {
        if n == 0 {
            return Ok(0.0);
        }
        self.check(src, src_off * 4, n * 4, "reduction")?;
        let integer = op >= 2;
        let start = src.ptr + src_off as u64 * 4;
        // f32 four words per thread when aligned.
        let vec = !integer && start.is_multiple_of(16) && n.is_multiple_of(4);
        let items = if vec { n as u64 / 4 } else { n as u64 };
        let blocks = items.div_ceil(BLOCK as u64 * 16).clamp(1, self.multiprocessors as u64 * 16) as u32;
        let partials = self.alloc(blocks as usize * if integer { 16 } else { 4 })?;
        let (mut op_, mut pp, mut sp, mut nn) = (op, partials.ptr, start, items);
        let mut args: [*mut c_void; 4] = [&mut op_ as *mut u32 as _, &mut pp as *mut u64 as _, &mut sp as *mut u64 as _, &mut nn as *mut u64 as _];
        let f = match (integer, vec) {
            (true, _) => self.kernels.reduce_i32,
            (false, true) => self.kernels.reduce_f32x4,
            (false, false) => self.kernels.reduce_f32,
        };
        self.launch("reduction", f, (blocks, 1, 1), (BLOCK, 1, 1), &mut args)?;
        let mut bytes = vec![0u8; blocks as usize * if integer { 16 } else { 4 }];
        self.read_back(&partials, 0, &mut bytes)?;
        if integer {
            let total: u128 = bytes.chunks_exact(16).map(|c| u128::from_le_bytes(c.try_into().unwrap_or([0; 16]))).sum();
            return Ok(total as f64);
        }
        Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4])) as f64).sum())
    }
}

/// The median of `runs` timings of `f` after one warm-up call.
fn median(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        let start = std::time::Instant::now();
        f()?;
        t.push(start.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

impl Drop for Cuda {
    fn drop(&mut self) {
        // SAFETY: the module belongs to this context; buffers do not use it.
        let _ = self.ctx.sync();
        let _ = unsafe { cu::module::unload(self.module) };
    }
}
