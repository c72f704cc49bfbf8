//! Fuzzes the safetensors decoder: any input gives a map or an error; an
//! accepted map is no larger than its input and writes and reads back to
//! the same names and bytes.
#![no_main]

use blobcore::BlobMap;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    blobcore_fuzz::map_round_trip(data, BlobMap::from_safetensors_bytes, |m| m.to_safetensors_bytes());
});
