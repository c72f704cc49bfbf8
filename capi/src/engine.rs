//! Engines.

use crate::handles::{self, BlobEngine};
use crate::status::{ffi, out, put, text};
use blobcore::Engine;
use std::ffi::c_char;

/// Hands out a handle to the CPU engine (free it with `blob_engine_free`).
#[no_mangle]
pub extern "C" fn blob_engine_cpu(out_engine: *mut *mut BlobEngine) -> i32 {
    ffi!({
        let o = out(out_engine, "out")?;
        put(o, handles::issue_engine(Engine::cpu()));
        Ok(())
    })
}

/// Makes `engine` the default engine: what a NULL engine argument means
/// from now on (NULL restores the CPU engine). Without this call the
/// default is the CPU engine, or the GPU when the environment variable
/// `BLOBCORE_ENGINE` is `gpu` (or `gpu:<adapter name part>`), `cuda` (or
/// `cuda:<ordinal>`).
#[no_mangle]
pub extern "C" fn blob_set_default_engine(engine: *const BlobEngine) -> i32 {
    ffi!({
        let e = if engine.is_null() { Engine::cpu() } else { handles::engine(engine)? };
        Engine::set_default(&e);
        Ok(())
    })
}

/// The engine a blob lives on, as a new handle (free it with
/// `blob_engine_free`; the engine lives on while blobs use it).
#[no_mangle]
pub extern "C" fn blob_engine(b: *const crate::handles::Blob, out_engine: *mut *mut BlobEngine) -> i32 {
    ffi!({
        let o = out(out_engine, "out")?;
        let e = handles::blob(b, "blob")?.engine().clone();
        put(o, handles::issue_engine(e));
        Ok(())
    })
}

/// Whether the engine has device memory (`*out` true: a GPU or CUDA
/// engine) or is the CPU engine.
#[no_mangle]
pub extern "C" fn blob_engine_is_gpu(engine: *const BlobEngine, out: *mut bool) -> i32 {
    ffi!({
        let o = crate::status::out(out, "out")?;
        put(o, handles::engine(engine)?.is_gpu());
        Ok(())
    })
}

/// Hands out a GPU engine on the adapter whose name contains `adapter_hint`
/// (NULL: the best hardware adapter — discrete, then integrated — and a
/// software one only when no hardware adapter exists; see
/// `blob_engine_is_software`). `BLOB_ERR_DEVICE` when no GPU engine is
/// available.
#[no_mangle]
pub extern "C" fn blob_engine_gpu(adapter_hint: *const c_char, out_engine: *mut *mut BlobEngine) -> i32 {
    ffi!({
        let o = out(out_engine, "out")?;
        let hint = if adapter_hint.is_null() { None } else { Some(text(adapter_hint, "adapter_hint")?) };
        let e = Engine::gpu(hint)?;
        put(o, handles::issue_engine(e));
        Ok(())
    })
}

/// Hands out a CUDA engine on NVIDIA GPU `ordinal` (0 is the first),
/// through the CUDA driver loaded at run time. `BLOB_ERR_DEVICE` on a
/// machine without a CUDA driver or without that GPU; a negative ordinal
/// is `BLOB_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn blob_engine_cuda(ordinal: i32, out_engine: *mut *mut BlobEngine) -> i32 {
    ffi!({
        let o = out(out_engine, "out")?;
        let ordinal = usize::try_from(ordinal).map_err(|_| blobcore::Error::InvalidArgument(format!("CUDA device ordinal {ordinal} is negative")))?;
        put(o, handles::issue_engine(Engine::cuda(ordinal)?));
        Ok(())
    })
}

/// Whether the engine is a GPU engine on a software adapter (lavapipe,
/// llvmpipe, SwiftShader, WARP: `*out` true), which runs on the CPU and is
/// slower than the CPU engine. False for the CPU, CUDA and hardware GPU
/// engines.
#[no_mangle]
pub extern "C" fn blob_engine_is_software(engine: *const BlobEngine, out: *mut bool) -> i32 {
    ffi!({
        let o = crate::status::out(out, "out")?;
        put(o, handles::engine(engine)?.is_software());
        Ok(())
    })
}

/// Frees an engine handle. Blobs created on it keep working.
#[no_mangle]
pub extern "C" fn blob_engine_free(engine: *mut BlobEngine) -> i32 {
    ffi!({ handles::free_engine(engine) })
}

/// An engine's transfer and kernel counters (`blob_engine_stats`):
/// monotonic since the engine was created or `blob_engine_reset_stats`.
/// Uploads and downloads count blob data moved between host and device
/// (one per head transition that needs a copy); kernels count compute
/// dispatches and device-side copies. All zero for the CPU engine.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct BlobEngineStats {
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

/// Writes `engine`'s counters (NULL: the default engine) to `*out`.
#[no_mangle]
pub extern "C" fn blob_engine_stats(engine: *const BlobEngine, out_stats: *mut BlobEngineStats) -> i32 {
    ffi!({
        let o = out(out_stats, "out")?;
        let s = handles::engine(engine)?.stats();
        put(
            o,
            BlobEngineStats {
                bytes_uploaded: s.bytes_uploaded,
                bytes_downloaded: s.bytes_downloaded,
                uploads: s.uploads,
                downloads: s.downloads,
                kernels: s.kernels,
            },
        );
        Ok(())
    })
}

/// Sets `engine`'s counters (NULL: the default engine) back to zero.
#[no_mangle]
pub extern "C" fn blob_engine_reset_stats(engine: *const BlobEngine) -> i32 {
    ffi!({
        handles::engine(engine)?.reset_stats();
        Ok(())
    })
}

/// Waits until every kernel and transfer queued on `engine` (NULL: the
/// default engine) has finished; nothing to wait for on the CPU engine.
/// Work still in flight counts as being inside the GPU driver, so a child
/// forked meanwhile cannot open a GPU of its own (`BLOB_ERR_DEVICE` naming
/// the fork): synchronize before `fork` for such children.
#[no_mangle]
pub extern "C" fn blob_engine_synchronize(engine: *const BlobEngine) -> i32 {
    ffi!({ handles::engine(engine)?.synchronize() })
}
