//! Fuzzes the .npy decoder: any input must give a blob or an error, never
//! a panic; a blob it accepts must write and read back to the same bytes.
#![no_main]

use blobcore::{Blob, Engine};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let e = Engine::cpu();
    if let Ok(b) = Blob::from_npy_bytes(&e, data) {
        assert!(b.byte_size() <= data.len());
        let again = Blob::from_npy_bytes(&e, &b.to_npy_bytes().expect("an accepted blob can be written"))
            .expect("a written blob can be read");
        assert_eq!(again.dims(), b.dims());
        let (mut x, mut y) = (vec![0u8; b.byte_size()], vec![0u8; again.byte_size()]);
        b.copy_to_bytes(&mut x).expect("dense");
        again.copy_to_bytes(&mut y).expect("dense");
        assert_eq!(x, y);
    }
});
