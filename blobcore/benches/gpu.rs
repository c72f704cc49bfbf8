//! `cargo bench -p blobcore --bench gpu`: the GPU engine's kernels (the
//! CUDA engine's with `BLOBCORE_ENGINE=cuda`) on f32
//! blobs of 64 MiB and 1 GiB (where the adapter allows; BLOBCORE_BENCH_MIB
//! picks one size), each as a ratio to a device buffer-to-buffer copy of
//! the same bytes measured in the same run, plus host <-> device transfer
//! bandwidth.
//!
//! `x copy` scales each op's time by the bytes it must move (merge, split,
//! copy, transposes: read + write, 2 per byte; add 3; fill and scale 1 and
//! 2; asum 1, a read pass) against the copy's 2. Targets (issue 18): on
//! lavapipe merge/split/copy/transposed-outer >= 0.5, add/fill/scale >=
//! 0.3, asum >= 0.5; on a real GPU >= 0.7 for merge, split and add.

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

fn mk(e: &Engine, dims: &[usize], v: f64) -> Blob {
    let b = Blob::tensor(e, DType::F32, dims).unwrap();
    b.fill(v).unwrap();
    b
}

fn run(e: &Engine, mib: usize) {
    let g = e.device().expect("a GPU engine");
    let bytes = mib << 20;
    if !g.fits(bytes) {
        println!("\n{mib} MiB: skipped (the largest buffer {} allows is {} MiB)", g.adapter_name(), g.max_buffer() >> 20);
        return;
    }
    let n = bytes / 4;
    let runs = if mib >= 1024 { 3 } else { 7 };
    let copy = g.copy_seconds(bytes, runs).expect("device copy");
    println!("\n{mib} MiB f32 on {} ({})", g.adapter_name(), g.backend());
    println!("device buffer copy: {:.2} ms ({:.1} GB/s copied)", copy * 1e3, bytes as f64 / copy / 1e9);
    println!("{:<22} {:>9} {:>12} {:>8}", "op", "ms", "GB/s moved", "x copy");
    let row = |op: &str, traffic: f64, t: f64| {
        let moved = traffic * bytes as f64;
        println!("{op:<22} {:>9.2} {:>12.1} {:>8.2}", t * 1e3, moved / t / 1e9, (traffic / 2.0) * copy / t);
    };
    {
        let (x, y) = (mk(e, &[n], 1.0), mk(e, &[n], 2.0));
        row("copy (blob)", 2.0, median(e, runs, || y.copy_from(&x).unwrap()));
        row("add", 3.0, median(e, runs, || x.add(&y).unwrap()));
        row("fill", 1.0, median(e, runs, || x.fill(0.5).unwrap()));
        row("scale", 2.0, median(e, runs, || x.scale(1.0).unwrap()));
        row("asum (read pass)", 1.0, median(e, runs, || {
            std::hint::black_box(x.asum().unwrap());
        }));
    }
    {
        let whole = mk(e, &[2, n / 2], 1.0);
        let (a, b) = (mk(e, &[2, n / 4], 2.0), mk(e, &[2, n / 4], 3.0));
        row("merge (axis 1)", 2.0, median(e, runs, || Blob::merge(&[&a, &b], 1, &whole).unwrap()));
        row("split (axis 1)", 2.0, median(e, runs, || Blob::split(&whole, 1, &[&a, &b]).unwrap()));
        // Channel-sized chunks: many short runs.
        let (c, d) = (mk(e, &[n / 8, 4], 2.0), mk(e, &[n / 8, 4], 3.0));
        let cd = mk(e, &[n / 8, 8], 0.0);
        drop((a, b, whole));
        row("merge (16 B chunks)", 1.0, median(e, runs, || Blob::merge(&[&c, &d], 1, &cd).unwrap()));
    }
    {
        // [64, rows, 256] -> [rows, 64, 256]: runs of 1 KiB stay whole.
        let rows = n / (64 * 256);
        let src = mk(e, &[64, rows, 256], 1.0);
        let dst = mk(e, &[rows, 64, 256], 0.0);
        row("transposed-outer", 2.0, median(e, runs, || dst.transpose_from(&src, 0, 1).unwrap()));
        drop((src, dst));
        let side = (n as f64).sqrt() as usize;
        let (sq, sq_t) = (mk(e, &[side, side], 1.0), mk(e, &[side, side], 0.0));
        row("transposed 2d", 2.0, median(e, runs, || sq_t.transpose_from(&sq, 0, 1).unwrap()));
    }
    {
        // The layout changes networks use, at this size.
        let perm = |name: &str, dims: [usize; 4], axes: [isize; 4]| {
            let n4: usize = dims.iter().product();
            let src = mk(e, &dims, 1.0);
            let out: Vec<usize> = axes.iter().map(|&a| dims[a as usize]).collect();
            let dst = mk(e, &out, 0.0);
            let t = median(e, runs, || dst.permute_from(&src, &axes).unwrap());
            row(name, 2.0 * n4 as f64 / n as f64, t);
        };
        let hw = |c: usize| ((n / (16 * c)) as f64).sqrt() as usize;
        perm("NCHW->NHWC C=3", [16, 3, hw(3), hw(3)], [0, 2, 3, 1]);
        perm("NCHW->NHWC C=64", [16, 64, hw(64), hw(64)], [0, 2, 3, 1]);
        perm("NCHW->NHWC C=256", [16, 256, hw(256), hw(256)], [0, 2, 3, 1]);
        perm("NHWC->NCHW C=64", [16, hw(64), hw(64), 64], [0, 3, 1, 2]);
        let q = n / (64 * 128 * 128);
        perm("transposed (0,2)", [64, 128, q, 128], [2, 1, 0, 3]);
        perm("transposed (0,3)", [64, 128, q, 128], [3, 1, 2, 0]);
    }
    {
        let x = mk(e, &[n], 1.0);
        row("sumsq (read pass)", 1.0, median(e, runs, || {
            std::hint::black_box(x.sumsq().unwrap());
        }));
    }
    {
        // Host <-> device: a host write then a kernel (one upload); a
        // kernel write then a host read (one download).
        let x = mk(e, &[n], 1.0);
        let host = vec![1f32; n];
        let mut out = vec![0f32; n];
        let up = median(e, runs, || {
            x.copy_from_slice(&host).unwrap();
            x.scale(1.0).unwrap();
        });
        let scale = median(e, runs, || x.scale(1.0).unwrap());
        let down = median(e, runs, || {
            x.scale(1.0).unwrap();
            x.copy_to_slice(&mut out).unwrap();
        });
        let s = e.stats();
        let (up, down) = ((up - scale).max(1e-9), (down - scale).max(1e-9));
        println!(
            "host -> device {:.1} GB/s, device -> host {:.1} GB/s (host copy + transfer; {} uploads, {} downloads so far)",
            bytes as f64 / up / 1e9,
            bytes as f64 / down / 1e9,
            s.uploads,
            s.downloads
        );
    }
    if let Some(c) = g.cuda() {
        if let Ok([h2d, d2h, h2d_p, d2h_p]) = c.transfer_seconds(bytes, runs) {
            let gbs = |t: f64| bytes as f64 / t / 1e9;
            println!(
                "CUDA transfers: host -> device {:.1} GB/s pageable, {:.1} GB/s pinned; device -> host {:.1} GB/s pageable, {:.1} GB/s pinned",
                gbs(h2d), gbs(h2d_p), gbs(d2h), gbs(d2h_p)
            );
        }
    }
}

fn main() {
    // BLOBCORE_ENGINE=cuda benchmarks the CUDA engine instead of wgpu's.
    let cuda = std::env::var("BLOBCORE_ENGINE").is_ok_and(|v| v.starts_with("cuda"));
    let e = match if cuda { Engine::default_engine() } else { Engine::gpu(None) } {
        Ok(e) => e,
        Err(err) => {
            println!("gpu bench: skipped ({err})");
            return;
        }
    };
    let sizes: Vec<usize> = match std::env::var("BLOBCORE_BENCH_MIB").ok().and_then(|v| v.parse().ok()) {
        Some(m) => vec![m],
        None => vec![64, 1024],
    };
    for mib in sizes {
        run(&e, mib);
    }
}
