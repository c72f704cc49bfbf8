//! `cargo bench -p blobcore --bench gpu`: the GPU engine's kernels on f32
//! blobs (BLOBCORE_BENCH_MIB, default 64 MiB), as bandwidth and as a ratio
//! to a device buffer-to-buffer copy of the same bytes measured in the same
//! run. On lavapipe (a CPU) this only shows that everything runs; on a real
//! GPU the target is >= 0.7x of the device copy for merge, split and add.
//!
//! `x copy` scales each op's time by the bytes it must move (read + write:
//! merge, split, transposed 2 per byte, add 3, asum 1; the copy 2).

use blobcore::{Blob, DType, Engine};
use std::time::Instant;

fn median(e: &Engine, runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    e.synchronize().unwrap();
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            e.synchronize().unwrap();
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let e = match Engine::gpu(None) {
        Ok(e) => e,
        Err(err) => {
            println!("gpu bench: skipped ({err})");
            return;
        }
    };
    let mib: usize = std::env::var("BLOBCORE_BENCH_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    let bytes = mib << 20;
    let n = bytes / 4;
    let runs = 10;
    let g = e.device().expect("a GPU engine");
    let copy = g.copy_seconds(bytes, runs).expect("device copy");
    let side = (n as f64).sqrt() as usize;
    let mk = |dims: &[usize], v: f64| {
        let b = Blob::tensor(&e, DType::F32, dims).unwrap();
        b.fill(v).unwrap();
        b
    };
    let whole = mk(&[2, n / 2], 1.0);
    let (a, b) = (mk(&[2, n / 4], 2.0), mk(&[2, n / 4], 3.0));
    let sq = mk(&[side, side], 1.0);
    let sq_t = mk(&[side, side], 0.0);
    let (x, y) = (mk(&[n], 1.0), mk(&[n], 2.0));
    let rows: Vec<(&str, f64, f64)> = vec![
        ("merge (axis 1)", 2.0, median(&e, runs, || Blob::merge(&[&a, &b], 1, &whole).unwrap())),
        ("split (axis 1)", 2.0, median(&e, runs, || Blob::split(&whole, 1, &[&a, &b]).unwrap())),
        ("transposed 2d", 2.0, median(&e, runs, || sq_t.transpose_from(&sq, 0, 1).unwrap())),
        ("add", 3.0, median(&e, runs, || x.add(&y).unwrap())),
        ("asum", 1.0, median(&e, runs, || { std::hint::black_box(x.asum().unwrap()); })),
    ];
    println!("GPU engine on {} ({}): {mib} MiB f32 blobs", g.adapter_name(), g.backend());
    println!("device buffer copy of {mib} MiB: {:.2} ms ({:.1} GB/s copied)", copy * 1e3, bytes as f64 / copy / 1e9);
    println!("{:<16} {:>9} {:>12} {:>8}", "op", "ms", "GB/s moved", "x copy");
    for (op, traffic, t) in rows {
        let moved = traffic * bytes as f64;
        println!("{op:<16} {:>9.2} {:>12.1} {:>8.2}", t * 1e3, moved / t / 1e9, (traffic / 2.0) * copy / t);
    }
}
