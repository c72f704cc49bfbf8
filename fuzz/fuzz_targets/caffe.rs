//! Fuzzes the Caffe BlobProto and BlobProtoVector decoders.
#![no_main]

use blobcore::{Blob, Engine};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    blobcore_fuzz::round_trip(data, Blob::from_caffe_bytes, |b| b.to_caffe_bytes(true));
    let _ = Blob::caffe_vector_from_bytes(&Engine::cpu(), data);
});
