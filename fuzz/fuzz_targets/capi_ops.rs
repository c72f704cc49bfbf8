//! Fuzzes sequences of C API calls over a few blobs (the interpreter is
//! capi/tests/op_sequences.rs, which also runs on stable in `make test`).
#![no_main]

#[path = "../../capi/tests/op_sequences.rs"]
#[allow(dead_code)]
mod op_sequences;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| op_sequences::run(data));
