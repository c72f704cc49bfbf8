//! Engines: where a blob's data lives and where its operations run
//! (NeoML's `IMathEngine`). The CPU engine is the default and needs no
//! setup; the GPU engine (wgpu) plugs in here.

pub mod cpu;

use std::fmt;
use std::sync::Arc;

/// What kind of engine this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// Host memory, operations on the CPU (all cores for large ops).
    Cpu,
}

/// A handle to an engine; cheap to clone, shared by the blobs created on it.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<EngineInner>,
}

struct EngineInner {
    kind: EngineKind,
}

impl Engine {
    /// The CPU engine. Every call returns a handle to the same engine.
    pub fn cpu() -> Engine {
        cpu::default_engine()
    }

    /// A GPU engine on the adapter whose name contains `adapter_hint` (any
    /// adapter when `None`). This build has no GPU backend yet, so it is
    /// always `Error::Device`; the wgpu engine will plug in here.
    pub fn gpu(adapter_hint: Option<&str>) -> crate::Result<Engine> {
        let which = adapter_hint.map(|h| format!(" matching {h:?}")).unwrap_or_default();
        Err(crate::error::err!(Device, "no GPU adapter{which}: this build of blobcore has no GPU backend yet"))
    }

    pub(crate) fn new_cpu() -> Engine {
        Engine { inner: Arc::new(EngineInner { kind: EngineKind::Cpu }) }
    }

    /// The engine's kind.
    pub fn kind(&self) -> EngineKind {
        self.inner.kind
    }

    /// A short description, e.g. `"cpu"`.
    pub fn name(&self) -> &'static str {
        match self.inner.kind {
            EngineKind::Cpu => "cpu",
        }
    }

    /// True when both handles refer to the same engine.
    pub fn same(&self, other: &Engine) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

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
