//! Fuzzes the NeoML blob archive decoder.
#![no_main]

use blobcore::Blob;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| blobcore_fuzz::round_trip(data, Blob::from_neoml_bytes, Blob::to_neoml_bytes));
