//! What every decoder target checks: any input gives a blob or an error,
//! never a panic; a blob it accepts is no larger than its input and writes
//! and reads back to the same dims and bytes.

use blobcore::{Blob, Engine, Result};

/// Decodes `data`; when that succeeds, encodes and decodes again.
pub fn round_trip(data: &[u8], decode: fn(&Engine, &[u8]) -> Result<Blob>, encode: fn(&Blob) -> Result<Vec<u8>>) {
    let e = Engine::cpu();
    let Ok(b) = decode(&e, data) else { return };
    assert!(b.byte_size() <= data.len());
    let again = decode(&e, &encode(&b).expect("an accepted blob can be written")).expect("a written blob can be read");
    assert_eq!(again.dims(), b.dims());
    let (mut x, mut y) = (vec![0u8; b.byte_size()], vec![0u8; again.byte_size()]);
    b.copy_to_bytes(&mut x).expect("dense");
    again.copy_to_bytes(&mut y).expect("dense");
    assert_eq!(x, y);
}
