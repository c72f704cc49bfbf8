//! Per-call cost of the core's view and element operations (ns per call).
use blobcore::{Blob, Engine, Index, Scalar};
use std::time::Instant;

fn time(name: &str, mut f: impl FnMut()) {
    // `cargo run --example percall -- NAME` times only the rows whose name
    // contains NAME (for profiling one row).
    if std::env::args().nth(1).is_some_and(|only| !name.contains(&only)) {
        return;
    }
    let n = 1_000_000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        best = best.min(t.elapsed().as_secs_f64() / n as f64 * 1e9);
    }
    println!("{name:24} {best:7.1} ns");
}

fn main() {
    let b = Blob::from_slice(&Engine::cpu(), &[4, 5, 6, 7], &vec![0f32; 840]).unwrap();
    time("index [0]", || drop(std::hint::black_box(b.index(&[Index::At(0)]).unwrap())));
    let r = Index::Range { start: None, stop: None, step: Some(2) };
    time("index [::2, 1]", || drop(std::hint::black_box(b.index(&[r, Index::At(1)]).unwrap())));
    time("permuted_view T", || drop(std::hint::black_box(b.permuted_view(&[3, 2, 1, 0]).unwrap())));
    time("get_element", || {
        std::hint::black_box(b.get_element(&[1, 2, 3, 4]).unwrap());
    });
    let s = Scalar::of(1f32);
    time("set_element", || b.set_element(&[1, 2, 3, 4], &s).unwrap());
    time("reversed_view", || drop(std::hint::black_box(b.reversed_view().unwrap())));
    time("export", || drop(std::hint::black_box(b.export().unwrap())));
    let e = Blob::from_slice(&Engine::cpu(), &[8], &[0f32; 8]).unwrap();
    time("copy 8", || drop(std::hint::black_box(e.copy().unwrap())));
    time("new 8", || drop(std::hint::black_box(Blob::new(&Engine::cpu(), blobcore::DType::F32, blobcore::Shape::new(&[8]).unwrap()).unwrap())));
    let bytes = [0u8; 32];
    time("from_bytes 8", || drop(std::hint::black_box(Blob::from_bytes(&Engine::cpu(), blobcore::DType::F32, &[8], std::hint::black_box(&bytes)).unwrap())));
    time("to_dlpack + delete", || {
        let t = b.to_dlpack(0).unwrap();
        // SAFETY: a live export, freed once.
        unsafe { blobcore::dlpack::delete_tensor(t.as_ptr()) };
    });
    let cpu = Engine::cpu();
    time("dlpack round trip", || {
        let t = b.to_dlpack(0).unwrap();
        // SAFETY: our own live export, handed over once.
        drop(std::hint::black_box(unsafe { Blob::from_dlpack(&cpu, t.as_ptr(), None) }.unwrap()));
    });
    time("dims", || { std::hint::black_box(b.dims()); });
}
