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

/// Hands out a GPU engine on the adapter whose name contains `adapter_hint`
/// (NULL = any). `BLOB_ERR_DEVICE` when no GPU engine is available.
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

/// Frees an engine handle. Blobs created on it keep working.
#[no_mangle]
pub extern "C" fn blob_engine_free(engine: *mut BlobEngine) -> i32 {
    ffi!({ handles::free_engine(engine) })
}
