//! `blobcore._blobcore`: the Python binding of blobcore (pyo3, abi3 for
//! CPython >= 3.11). It only translates: every semantic lives in the
//! `blobcore` crate. The package `blobcore` (python/pysrc/blobcore/) re-exports
//! it with the exception classes, dtypes and `Dim`.

mod args;
mod arrays;
mod blob;
mod buffers;
mod dlpack;
mod dlpack_call;
mod dtypes;
mod engine;
mod errors;
mod exchange;
mod exports;
mod formats;
mod functions;
mod gguf;
mod gil;
mod handle;
mod indexing;
mod layout;
mod npyapi;
mod share;
mod weights;

use pyo3::prelude::*;

#[pymodule]
fn _blobcore(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", blobcore::VERSION)?;
    m.add_class::<handle::PyBlob>()?;
    dlpack_call::install(m.py())?;
    m.add_class::<blob::BlobIter>()?;
    m.add_class::<engine::PyEngine>()?;
    m.add_class::<engine::PyEngineStats>()?;
    m.add_class::<buffers::BufferContext>()?;
    m.add_class::<buffers::Held>()?;
    m.add_class::<layout::PyBlockingDesc>()?;
    m.add_class::<layout::PyTensorDesc>()?;
    m.add_function(wrap_pyfunction!(layout::layout_by_dims, m)?)?;
    m.add_function(wrap_pyfunction!(functions::asblob, m)?)?;
    m.add_function(wrap_pyfunction!(share::from_shared_fd, m)?)?;
    m.add_function(wrap_pyfunction!(functions::merge, m)?)?;
    m.add_function(wrap_pyfunction!(functions::merge_into, m)?)?;
    m.add_function(wrap_pyfunction!(functions::split, m)?)?;
    m.add_function(wrap_pyfunction!(functions::split_into, m)?)?;
    m.add_function(wrap_pyfunction!(functions::merge_objects, m)?)?;
    m.add_function(wrap_pyfunction!(functions::split_objects, m)?)?;
    m.add_function(wrap_pyfunction!(functions::from_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(formats::load_caffe, m)?)?;
    m.add_function(wrap_pyfunction!(formats::load_caffe_vector, m)?)?;
    m.add_function(wrap_pyfunction!(formats::save_caffe_vector, m)?)?;
    m.add_function(wrap_pyfunction!(formats::from_caffe_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(formats::load_neoml, m)?)?;
    m.add_function(wrap_pyfunction!(formats::from_neoml_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(formats::load_npy, m)?)?;
    m.add_function(wrap_pyfunction!(formats::from_npy_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(weights::load_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(weights::safetensors_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(weights::save_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(gguf::load_gguf, m)?)?;
    m.add_function(wrap_pyfunction!(gguf::gguf_metadata, m)?)?;
    m.add_function(wrap_pyfunction!(gguf::gguf_tensor_info, m)?)?;
    m.add_function(wrap_pyfunction!(gguf::save_gguf, m)?)?;
    m.add_function(wrap_pyfunction!(weights::load_caffemodel, m)?)?;
    m.add_function(wrap_pyfunction!(weights::save_caffemodel, m)?)?;
    Ok(())
}
