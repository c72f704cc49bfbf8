//! Fuzzes the shared-memory handle decoder (`SharedHandle::from_layout_bytes`,
//! what a pickle of a shared blob carries to another process) over a
//! 4 KiB shared memory file: any bytes give an error or a blob inside the
//! file; an accepted blob reads each element from the place its layout
//! gives (`TensorDesc::offset_index`, the oracle) and, when writable,
//! writes each element there and nowhere else.
#![no_main]

use blobcore::{Blob, DType, Engine, SharedHandle};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

const FILE: usize = 4096;

/// A shared blob of `FILE` bytes: the file every input is decoded against.
fn file() -> &'static Blob {
    static FILE_BLOB: OnceLock<Blob> = OnceLock::new();
    FILE_BLOB.get_or_init(|| {
        let b = Blob::tensor(&Engine::cpu(), DType::U8, &[FILE]).expect("a blob");
        b.share_memory().expect("shared memory");
        b
    })
}

/// The logical indices of `dims` in row-major order.
fn indices(dims: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &d in dims {
        all = all.into_iter().flat_map(|p: Vec<usize>| (0..d).map(move |i| [p.clone(), vec![i]].concat())).collect();
    }
    all
}

fuzz_target!(|data: &[u8]| {
    let f = file();
    let fd = f.shared_handle().expect("a handle").fd;
    let Ok(h) = SharedHandle::from_layout_bytes(fd, data) else { return };
    let Ok(r) = Blob::from_shared_handle(&Engine::cpu(), &h) else { return };
    let desc = r.desc();
    let es = r.dtype().size();
    assert!(r.count() * es <= FILE, "distinct elements fit the file");
    if r.count() == 0 {
        return;
    }
    let at = |idx: &[usize]| h.offset as usize + desc.offset_index(idx).expect("in range") * es;
    let dims = r.dims();
    let idx = indices(&dims);
    // Reads: the dense copy holds each element's bytes.
    let raw = f.to_vec::<u8>().expect("bytes");
    let mut got = vec![0u8; r.byte_size()];
    r.copy().expect("a copy").copy_to_bytes(&mut got).expect("dense");
    for (k, i) in idx.iter().enumerate() {
        assert_eq!(got[k * es..][..es], raw[at(i)..][..es], "element {i:?}");
    }
    // Writes: element k gets bytes made from k (0 or 1 for bool), at its place.
    if !r.is_writable() {
        return;
    }
    let byte = |k: usize, j: usize| if r.dtype() == DType::Bool { (k % 2) as u8 } else { (k * 31 + j * 7 + 1) as u8 };
    let src: Vec<u8> = (0..r.count()).flat_map(|k| (0..es).map(move |j| byte(k, j))).collect();
    let Ok(s) = Blob::from_bytes(&Engine::cpu(), r.dtype(), &dims, &src) else { return };
    let before = f.to_vec::<u8>().expect("bytes");
    r.copy_from(&s).expect("a writable blob takes a copy");
    let after = f.to_vec::<u8>().expect("bytes");
    let mut touched = vec![false; FILE];
    for (k, i) in idx.iter().enumerate() {
        let p = at(i);
        assert_eq!(after[p..][..es], src[k * es..][..es], "element {i:?}");
        touched[p..p + es].iter_mut().for_each(|t| *t = true);
    }
    for p in 0..FILE {
        assert!(touched[p] || after[p] == before[p], "byte {p} was written but no element is there");
    }
});
