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

/// As [`round_trip`], for decoders of several named blobs (safetensors,
/// .caffemodel): the names, dims and bytes survive encoding again.
pub fn map_round_trip(
    data: &[u8],
    decode: fn(&Engine, &[u8]) -> Result<blobcore::BlobMap>,
    encode: fn(&blobcore::BlobMap) -> Result<Vec<u8>>,
) {
    let e = Engine::cpu();
    let Ok(m) = decode(&e, data) else { return };
    let total: usize = m.entries().iter().flat_map(|x| x.blobs()).map(Blob::byte_size).sum();
    assert!(total <= data.len());
    let again = decode(&e, &encode(&m).expect("an accepted map can be written")).expect("a written map can be read");
    let names = |m: &blobcore::BlobMap| m.names().map(str::to_owned).collect::<std::collections::BTreeSet<_>>();
    assert_eq!(names(&m), names(&again));
    for x in m.entries() {
        let y = again.blobs(x.name()).expect("same names");
        assert_eq!(x.blobs().len(), y.len());
        for (a, b) in x.blobs().iter().zip(y) {
            assert_eq!(a.dims(), b.dims());
            let (mut p, mut q) = (vec![0u8; a.byte_size()], vec![0u8; b.byte_size()]);
            a.copy_to_bytes(&mut p).expect("dense");
            b.copy_to_bytes(&mut q).expect("dense");
            assert_eq!(p, q);
        }
    }
}
