//! Fuzzes the GGUF decoder: any input gives a map or an error; an accepted
//! map is no larger than its input, and when every tensor is unquantized
//! it writes (with the same metadata) and reads back to the same names,
//! dims, bytes and metadata.
#![no_main]

use blobcore::io::gguf::parse_header;
use blobcore::{BlobMap, Engine};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let e = Engine::cpu();
    let Ok(m) = BlobMap::from_gguf_bytes(&e, data) else { return };
    let total: usize = m.entries().iter().flat_map(|x| x.blobs()).map(|b| b.byte_size()).sum();
    assert!(total <= data.len());
    let h = parse_header(data).expect("accepted once");
    if h.tensors.iter().all(|t| t.ggml_type.dtype().is_some()) {
        let bytes = m.to_gguf_bytes(&h.metadata).expect("an accepted map can be written");
        let again = parse_header(&bytes).expect("a written file can be read");
        // Debug text compares NaN metadata values as equal.
        assert_eq!(format!("{:?}", again.metadata), format!("{:?}", h.metadata));
        let back = BlobMap::from_gguf_bytes(&e, &bytes).expect("a written file can be read");
        for (x, y) in m.entries().iter().zip(back.entries()) {
            assert_eq!(x.name(), y.name());
            let (a, b) = (&x.blobs()[0], &y.blobs()[0]);
            assert_eq!((a.dims(), a.dtype()), (b.dims(), b.dtype()));
            let (mut p, mut q) = (vec![0u8; a.byte_size()], vec![0u8; b.byte_size()]);
            a.copy_to_bytes(&mut p).expect("dense");
            b.copy_to_bytes(&mut q).expect("dense");
            assert_eq!(p, q);
        }
    }
});
