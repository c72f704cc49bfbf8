//! Engines: where a blob's data lives and where its operations run
//! (NeoML's `IMathEngine`). The CPU engine is the default and needs no
//! setup; the GPU engine ([`gpu`], on wgpu) is created explicitly with
//! [`Engine::gpu`].

pub mod adapter;
pub mod cpu;
pub mod cuda;
pub mod gpu;
mod in_driver;
mod wgpu_device;
pub(crate) mod pool;

use std::fmt;
use crate::first_use::FirstUse;
use crate::fork_locks::HeldAcrossFork;
use std::sync::{Arc, RwLock};

/// What [`Engine::default_engine`] returns, once chosen.
/// Held across forks (it is read only once it has been set).
static DEFAULT: HeldAcrossFork<RwLock<Option<Engine>>> = HeldAcrossFork::new(crate::fork_locks::CORE_RANK, RwLock::new(None));
/// True once [`Engine::set_default`] has run: until then (the usual case)
/// [`Engine::default_engine`] does not take `DEFAULT`'s lock.
static DEFAULT_SET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The engine `BLOBCORE_ENGINE` names, opened on first use. Threads that
/// race for it may each open one (one is kept); none waits for another, so
/// a child forked while a thread was opening it tries its own (and gets
/// the fork's `Error::Device` for a GPU: see `in_driver`).
static FROM_ENV: FirstUse<crate::Result<Engine>> = FirstUse::new();

/// What kind of engine this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// Host memory, operations on the CPU (all cores for large ops).
    Cpu,
    /// A wgpu device: blobs keep a device buffer next to their host
    /// memory, synced lazily; operations run as WGSL kernels.
    Gpu,
    /// An NVIDIA GPU through the CUDA driver API: the same heads over
    /// device memory, operations as CUDA kernels, DLPack `kDLCUDA`.
    Cuda,
}

/// Transfer and kernel counters of an engine ([`Engine::stats`]), monotonic
/// since the engine was created or [`Engine::reset_stats`]. Uploads and
/// downloads count blob data moved between host and device memory (each
/// head transition that needs a copy is one); kernels count compute
/// dispatches and device-side copies. The CPU engine's are all zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C)]
pub struct EngineStats {
    /// Bytes copied host to device.
    pub bytes_uploaded: u64,
    /// Bytes copied device to host.
    pub bytes_downloaded: u64,
    /// Host-to-device copies.
    pub uploads: u64,
    /// Device-to-host copies.
    pub downloads: u64,
    /// Kernels dispatched and device copies queued.
    pub kernels: u64,
}

/// A handle to an engine; cheap to clone, shared by the blobs created on it.
#[derive(Clone)]
pub struct Engine {
    inner: Handle,
}

struct EngineInner {
    kind: EngineKind,
    gpu: Option<Arc<gpu::Gpu>>,
}

/// The one CPU engine, a static: handles to it are copied, with no
/// reference count to touch (every blob, view and import holds one).
static CPU: EngineInner = EngineInner { kind: EngineKind::Cpu, gpu: None };

/// An engine handle: the static CPU engine, or a GPU engine shared by
/// reference count (its device is released with the last handle).
#[derive(Clone)]
enum Handle {
    Cpu,
    Device(Arc<EngineInner>),
}

impl std::ops::Deref for Handle {
    type Target = EngineInner;
    #[inline]
    fn deref(&self) -> &EngineInner {
        match self {
            Handle::Cpu => &CPU,
            Handle::Device(d) => d,
        }
    }
}

impl Engine {
    /// The CPU engine. Every call returns a handle to the same engine.
    pub fn cpu() -> Engine {
        Engine { inner: Handle::Cpu }
    }

    /// A new GPU engine on the first adapter whose name contains
    /// `adapter_hint`, or without one on the best hardware adapter
    /// (discrete, then integrated, then virtual), falling back to a
    /// software one (lavapipe, llvmpipe, SwiftShader, WARP) only when no
    /// hardware adapter exists — [`Engine::is_software`] says which it got.
    /// It has its own device and queue; its kernels are compiled here,
    /// once. No adapter is `Error::Device`, naming the adapters found.
    pub fn gpu(adapter_hint: Option<&str>) -> crate::Result<Engine> {
        let g = gpu::Gpu::open(adapter_hint)?;
        Ok(Engine { inner: Handle::Device(Arc::new(EngineInner { kind: EngineKind::Gpu, gpu: Some(Arc::new(g)) })) })
    }

    /// A new CUDA engine on NVIDIA GPU `ordinal` (0 is the first), with
    /// its own stream; kernels come from NVRTC when `libnvrtc` is present
    /// and from blobcore's precompiled PTX otherwise. The driver library
    /// is loaded at run time: a machine without one (or without that GPU)
    /// gets `Error::Device`, never a crash. Each call opens a new engine
    /// (its own stream and counters; the kernels are compiled again), so
    /// make one and share it.
    pub fn cuda(ordinal: usize) -> crate::Result<Engine> {
        let g = gpu::Gpu::open_cuda(ordinal)?;
        Ok(Engine { inner: Handle::Device(Arc::new(EngineInner { kind: EngineKind::Cuda, gpu: Some(Arc::new(g)) })) })
    }

    /// The engine's transfer and kernel counters (all zero on the CPU).
    pub fn stats(&self) -> EngineStats {
        self.inner.gpu.as_ref().map(|g| g.stats()).unwrap_or_default()
    }

    /// Sets the counters back to zero.
    pub fn reset_stats(&self) {
        if let Some(g) = &self.inner.gpu {
            g.reset_stats();
        }
    }

    /// The default engine: what the C API's NULL engine and Python's
    /// `engine=None` mean. It is the CPU engine unless
    /// [`Engine::set_default`] chose another, or the environment variable
    /// `BLOBCORE_ENGINE` is `gpu` (or `gpu:<adapter name part>`), `cuda`
    /// (or `cuda:<ordinal>`), which
    /// runs unmodified programs — and the test suites — on a GPU. A GPU
    /// named there but missing is `Error::Device` here.
    ///
    /// Inline up to the usual answer (no engine set, the environment's
    /// engine made and opened): every blob a binding creates without an
    /// engine asks for it.
    #[inline]
    pub fn default_engine() -> crate::Result<Engine> {
        if !DEFAULT_SET.load(std::sync::atomic::Ordering::Acquire) {
            if let Some(Ok(e)) = FROM_ENV.get() {
                return Ok(e.clone());
            }
        }
        Engine::default_engine_slow()
    }

    /// [`Engine::default_engine`] when an engine was set, or the
    /// environment's engine is not made yet or failed to open.
    #[inline(never)]
    fn default_engine_slow() -> crate::Result<Engine> {
        if DEFAULT_SET.load(std::sync::atomic::Ordering::Acquire) {
            if let Some(e) = DEFAULT.get().read().unwrap_or_else(|p| p.into_inner()).as_ref() {
                return Ok(e.clone());
            }
        }
        FROM_ENV
            .get_or_make(|| match std::env::var("BLOBCORE_ENGINE").as_deref() {
                Err(_) | Ok("") | Ok("cpu") => Ok(Engine::cpu()),
                Ok("gpu") => Engine::gpu(None),
                Ok("cuda") => Engine::cuda(0),
                Ok(v) => match (v.strip_prefix("gpu:"), v.strip_prefix("cuda:").map(str::parse::<usize>)) {
                    (Some(hint), _) => Engine::gpu(Some(hint)),
                    (_, Some(Ok(ordinal))) => Engine::cuda(ordinal),
                    _ => Err(crate::error::err!(
                        InvalidArgument,
                        "BLOBCORE_ENGINE={v:?} is not \"cpu\", \"gpu\", \"gpu:<adapter>\", \"cuda\" or \"cuda:<ordinal>\""
                    )),
                },
            })
            .clone()
    }

    /// True once [`Engine::default_engine`] answers without opening
    /// anything: [`Engine::set_default`] has run, or the engine
    /// `BLOBCORE_ENGINE` names has been opened (or failed to open). Before
    /// that, the first `default_engine` may open a GPU (tens to hundreds
    /// of milliseconds): bindings let other threads run meanwhile.
    #[inline]
    pub fn default_engine_is_made() -> bool {
        DEFAULT_SET.load(std::sync::atomic::Ordering::Acquire) || FROM_ENV.get().is_some()
    }

    /// Makes `engine` the default engine (see [`Engine::default_engine`]).
    pub fn set_default(engine: &Engine) {
        let old = DEFAULT.get().write().unwrap_or_else(|p| p.into_inner()).replace(engine.clone());
        DEFAULT_SET.store(true, std::sync::atomic::Ordering::Release);
        // The engine it replaced goes after the lock: its last drop may
        // tear a device down.
        drop(old);
    }

    /// Waits until the engine has finished every operation queued so far
    /// (GPU kernels run asynchronously; reading a blob waits by itself).
    /// Does nothing on the CPU engine. Work in flight counts as a thread
    /// inside the GPU driver, so a child forked before this returns is
    /// refused a GPU of its own (`Error::Device` naming the fork).
    pub fn synchronize(&self) -> crate::Result<()> {
        match &self.inner.gpu {
            Some(g) => g.wait(),
            None => Ok(()),
        }
    }

    /// The GPU device of a GPU engine (adapter name, benchmark baseline).
    pub fn device(&self) -> Option<&gpu::Gpu> {
        self.inner.gpu.as_deref()
    }

    /// True for an engine with device memory (wgpu or CUDA).
    pub fn is_gpu(&self) -> bool {
        self.inner.kind != EngineKind::Cpu
    }

    /// The CUDA engine's stream (`CUstream`) as an integer, for DLPack's
    /// `stream` argument (`None` for other engines).
    pub fn cuda_stream(&self) -> Option<usize> {
        self.device().and_then(|g| g.cuda()).map(|c| c.stream_handle())
    }

    /// True for a CUDA engine.
    pub fn is_cuda(&self) -> bool {
        self.inner.kind == EngineKind::Cuda
    }

    /// The GPU behind this engine, if it is one.
    pub(crate) fn gpu_device(&self) -> Option<&Arc<gpu::Gpu>> {
        self.inner.gpu.as_ref()
    }

    /// The adapter's name for a GPU engine (e.g. "llvmpipe (LLVM 15...)").
    pub fn adapter_name(&self) -> Option<String> {
        self.inner.gpu.as_ref().map(|g| g.adapter_name().to_string())
    }

    /// The kind of the GPU engine's adapter (`None` for the CPU engine).
    pub fn adapter_kind(&self) -> Option<adapter::AdapterKind> {
        self.inner.gpu.as_ref().map(|g| g.adapter_kind())
    }

    /// True for a GPU engine on a software adapter (lavapipe and the like),
    /// which runs on the CPU and is slower than the CPU engine.
    pub fn is_software(&self) -> bool {
        self.adapter_kind().is_some_and(|k| k.is_software())
    }

    /// The engine's kind.
    pub fn kind(&self) -> EngineKind {
        self.inner.kind
    }

    /// A short description, e.g. `"cpu"`.
    pub fn name(&self) -> &'static str {
        match self.inner.kind {
            EngineKind::Cpu => "cpu",
            EngineKind::Gpu => "gpu",
            EngineKind::Cuda => "cuda",
        }
    }

    /// True when both handles refer to the same engine.
    pub fn same(&self, other: &Engine) -> bool {
        std::ptr::eq::<EngineInner>(&*self.inner, &*other.inner)
    }
}

/// The CPU engine, always. [`Engine::default_engine`] is the configurable
/// default that C's NULL engine and Python's `engine=None` use.
impl Default for Engine {
    fn default() -> Self {
        Engine::cpu()
    }
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Engine({})", self.name())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::Engine;

    /// The default engine's lock is held across forks: a child forked
    /// while another thread sets the default finds it free.
    #[cfg_attr(miri, ignore = "Miri runs no fork")]
    #[test]
    fn a_child_forked_while_the_default_changes_can_use_it() {
        // The default stays what it is (suites may run on a GPU).
        fn same_default() -> bool {
            Engine::default_engine().map(|e| Engine::set_default(&e)).is_ok()
        }
        same_default();
        let hung = crate::fork_locks::tests::fork_while_busy(200, || assert!(same_default()), same_default);
        assert_eq!(hung, 0, "a forked child hung on the default engine's lock");
    }
}
