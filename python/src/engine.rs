//! `bc.Engine` and `bc.EngineStats`, and the engine argument of every
//! constructor.

use crate::errors::core;
use blobcore::Engine;
use pyo3::prelude::*;

/// Where blobs live and run. ``Engine.cpu()`` is the default everywhere an
/// ``engine`` argument is accepted.
#[pyclass(name = "Engine", module = "blobcore", frozen)]
pub struct PyEngine {
    pub(crate) e: Engine,
}

#[pymethods]
impl PyEngine {
    /// The CPU engine (one shared engine; every call returns it).
    #[staticmethod]
    fn cpu() -> Self {
        PyEngine { e: Engine::cpu() }
    }

    /// A GPU engine on the adapter whose name contains ``adapter`` (any
    /// adapter when None). Raises ``DeviceError`` when there is none.
    /// The GIL is released while the device opens (tens to hundreds of
    /// milliseconds).
    #[staticmethod]
    #[pyo3(signature = (adapter=None))]
    fn gpu(py: Python<'_>, adapter: Option<&str>) -> PyResult<Self> {
        Ok(PyEngine { e: core(py.detach(|| Engine::gpu(adapter)))? })
    }

    /// A CUDA engine on NVIDIA GPU ``device`` (0 is the first), through
    /// the CUDA driver loaded at run time. Raises ``DeviceError`` on a
    /// machine without a CUDA driver or without that GPU. Each call opens
    /// a new engine with its own stream and compiles its kernels (about a
    /// tenth of a second, with the GIL released): make one and keep it.
    #[staticmethod]
    #[pyo3(signature = (device=0))]
    fn cuda(py: Python<'_>, device: usize) -> PyResult<Self> {
        Ok(PyEngine { e: core(py.detach(|| Engine::cuda(device)))? })
    }

    /// Every GPU adapter wgpu finds, as ``(name, kind, backend, driver)``
    /// tuples; kind is "discrete", "integrated", "virtual", "other" or
    /// "software". ``Engine.gpu()`` opens a hardware one when there is one.
    #[staticmethod]
    fn adapters(py: Python<'_>) -> PyResult<Vec<(String, &'static str, String, String)>> {
        // The driver is asked with the GIL released.
        let adapters = core(py.detach(blobcore::engine::gpu::adapters))?;
        Ok(adapters.into_iter().map(|a| (a.name, a.kind.name(), a.backend, a.driver)).collect())
    }

    /// True for a GPU engine on a software adapter (lavapipe, llvmpipe,
    /// SwiftShader, WARP), which runs on the CPU.
    #[getter]
    fn is_software(&self) -> bool {
        self.e.is_software()
    }

    /// The adapter's kind for a GPU or CUDA engine ("discrete", …,
    /// "software"); None for the CPU engine.
    #[getter]
    fn adapter_kind(&self) -> Option<&'static str> {
        self.e.adapter_kind().map(|k| k.name())
    }

    /// The engine's name ("cpu", "gpu" or "cuda").
    #[getter]
    fn name(&self) -> &'static str {
        self.e.name()
    }

    /// The GPU adapter's name (None for the CPU engine).
    #[getter]
    fn adapter(&self) -> Option<String> {
        self.e.adapter_name()
    }

    /// The default engine: what ``engine=None`` means (the CPU unless
    /// ``set_default`` or the ``BLOBCORE_ENGINE`` environment variable
    /// chose another).
    #[staticmethod]
    fn default() -> PyResult<Self> {
        Ok(PyEngine { e: default_engine()? })
    }

    /// Makes ``engine`` the default engine for every later call that
    /// passes ``engine=None``.
    #[staticmethod]
    fn set_default(engine: PyRef<'_, PyEngine>) {
        Engine::set_default(&engine.e);
    }

    /// Transfer and kernel counters since the engine was created (or
    /// ``reset_stats``): ``bytes_uploaded``, ``bytes_downloaded``,
    /// ``uploads``, ``downloads`` (blob data moved between host and device,
    /// one per head transition that needs a copy) and ``kernels`` (compute
    /// dispatches and device copies). All zero for the CPU engine.
    fn stats(&self) -> PyEngineStats {
        PyEngineStats { s: self.e.stats() }
    }

    /// Waits until the engine has finished every operation queued so far
    /// (GPU and CUDA kernels run asynchronously; blobcore's own reads wait
    /// by themselves — call this before another library reads device
    /// memory it shares with a blob, and before a fork whose children
    /// open GPUs of their own). Releases the GIL while waiting.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let e = self.e.clone();
        core(py.detach(move || e.synchronize()))
    }

    /// Sets the counters back to zero.
    fn reset_stats(&self) {
        self.e.reset_stats();
    }

    fn __repr__(&self) -> String {
        match (self.e.device().and_then(|g| g.cuda()), self.e.adapter_name()) {
            (Some(c), _) => format!("blobcore.Engine.cuda({})", c.ordinal()),
            (None, Some(a)) => format!("blobcore.Engine.gpu({a:?})"),
            (None, None) => format!("blobcore.Engine.{}()", self.e.name()),
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<PyEngine>().is_ok_and(|o| o.get().e.same(&self.e))
    }

    fn __hash__(&self) -> u64 {
        self.e.name().len() as u64
    }
}

/// An engine's counters at one moment (``Engine.stats()``).
#[pyclass(name = "EngineStats", module = "blobcore", frozen, eq)]
#[derive(PartialEq)]
pub struct PyEngineStats {
    s: blobcore::EngineStats,
}

#[pymethods]
impl PyEngineStats {
    /// Bytes copied host to device.
    #[getter]
    fn bytes_uploaded(&self) -> u64 {
        self.s.bytes_uploaded
    }
    /// Bytes copied device to host.
    #[getter]
    fn bytes_downloaded(&self) -> u64 {
        self.s.bytes_downloaded
    }
    /// Host-to-device copies.
    #[getter]
    fn uploads(&self) -> u64 {
        self.s.uploads
    }
    /// Device-to-host copies.
    #[getter]
    fn downloads(&self) -> u64 {
        self.s.downloads
    }
    /// Kernels dispatched and device copies queued.
    #[getter]
    fn kernels(&self) -> u64 {
        self.s.kernels
    }
    fn __repr__(&self) -> String {
        let s = &self.s;
        format!(
            "blobcore.EngineStats(bytes_uploaded={}, bytes_downloaded={}, uploads={}, downloads={}, kernels={})",
            s.bytes_uploaded, s.bytes_downloaded, s.uploads, s.downloads, s.kernels
        )
    }
}

/// The engine given, or the default one (``bc.set_default_engine``, or
/// the ``BLOBCORE_ENGINE`` environment variable; the CPU otherwise).
pub(crate) fn engine_of(e: Option<PyRef<'_, PyEngine>>) -> PyResult<Engine> {
    match e {
        Some(e) => Ok(e.e.clone()),
        None => default_engine(),
    }
}

/// The default engine; its first use, which may open the GPU
/// `BLOBCORE_ENGINE` names, runs with the GIL released.
fn default_engine() -> PyResult<Engine> {
    if Engine::default_engine_is_made() {
        return core(Engine::default_engine());
    }
    // Called from Python, so this thread holds the GIL: attach only
    // hands out its token.
    core(Python::attach(|py| py.detach(Engine::default_engine)))
}

