//! `cargo bench -p blobcore`: every op on 128 MiB f32 blobs, reported as a
//! ratio to a memcpy of the same bytes measured in the same run (these
//! machines are noisy, so absolute numbers mean little), and next to the
//! `ndarray` crate doing the same work into preallocated output.
//!
//! Criterion measures; the table printed at the end gives, per op:
//! - `x memcpy`: memcpy time for the blob's bytes / op time;
//! - `x bw limit`: bytes the op must move (reads + writes) per second,
//!   over memcpy's (2 bytes moved per byte copied) — 1.0 is memory-bound;
//! - `x ndarray`: ndarray time / blobcore time (> 1: blobcore is faster).
//!
//! Set BLOBCORE_BENCH_MIB to change the size (default 128).

use blobcore::{Blob, BlobDim, BlockingDesc, DType, Engine, Layout, TensorDesc};
use criterion::Criterion;
use std::hint::black_box;
use ndarray::{ArrayD, Axis, IxDyn, Zip};
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

static TIMES: Mutex<BTreeMap<String, Vec<f64>>> = Mutex::new(BTreeMap::new());

fn record(c: &mut Criterion, name: &str, mut f: impl FnMut()) {
    f(); // warm up: page faults, thread pool
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                f();
                let d = t.elapsed();
                total += d;
                TIMES.lock().unwrap().entry(name.to_string()).or_default().push(d.as_secs_f64());
            }
            total
        })
    });
}

fn median(name: &str) -> Option<f64> {
    let t = TIMES.lock().unwrap();
    let mut v = t.get(name)?.clone();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    Some(v[v.len() / 2])
}

fn f32_blob(e: &Engine, dims: &[usize], v: f64) -> Blob {
    let b = Blob::tensor(e, DType::F32, dims).unwrap();
    b.fill(v).unwrap();
    b
}

fn nd(dims: &[usize], v: f32) -> ArrayD<f32> {
    ArrayD::from_elem(IxDyn(dims), v)
}

struct Row {
    op: &'static str,
    ours: &'static str,
    nd: Option<&'static str>,
    /// Bytes moved per byte of the blob (reads + writes).
    traffic: f64,
    target: &'static str,
}

fn main() {
    let mib: usize = std::env::var("BLOBCORE_BENCH_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(128);
    let bytes = mib << 20;
    let n = bytes / 4;
    let e = Engine::cpu();
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .configure_from_args();

    // Baseline: memcpy of the same bytes.
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    record(&mut c, "memcpy", || dst.copy_from_slice(black_box(&src)));
    drop((src, dst));

    // Merge / split: along axis 0 (BatchLength), Height and Channels of a rank-7 image blob.
    let side = ((n / 64) as f64).sqrt() as usize; // [1,1,1,side,side,1,64] ~ n elements
    let whole = [1, 1, 1, side, side, 1, 64];
    let half_c = [1, 1, 1, side, side, 1, 32];
    let half_h = [1, 1, 1, side / 2, side, 1, 64];
    let whole_bl = [2, 1, 1, side / 2, side, 1, 64];
    let half_bl = [1, 1, 1, side / 2, side, 1, 64];
    for (label, part, axis, full) in [
        ("BatchLength", half_bl, BlobDim::BatchLength, whole_bl),
        ("Height", half_h, BlobDim::Height, whole),
        ("Channels", half_c, BlobDim::Channels, whole),
    ] {
        let a = f32_blob(&e, &part, 1.0);
        let b = f32_blob(&e, &part, 2.0);
        let to = f32_blob(&e, &full, 0.0);
        let ax = axis as isize;
        record(&mut c, &format!("merge/{label}"), || Blob::merge(&[&a, &b], ax, &to).unwrap());
        record(&mut c, &format!("split/{label}"), || Blob::split(&to, ax, &[&a, &b]).unwrap());
        let (na, nb) = (nd(&part, 1.0), nd(&part, 2.0));
        let mut nto = nd(&full, 0.0);
        let k = part[axis as usize] as isize;
        record(&mut c, &format!("ndarray/merge/{label}"), || {
            nto.slice_axis_mut(Axis(axis as usize), (0..k).into()).assign(&na);
            nto.slice_axis_mut(Axis(axis as usize), (k..2 * k).into()).assign(&nb);
        });
    }

    // Transposes: the innermost axis involved (2-D and rank-7 Height<->Channels), and an outer pair.
    let rows = (n as f64).sqrt() as usize;
    for (label, dims, d1, d2) in [
        ("2d(0,1)", vec![rows, n / rows], 0usize, 1usize),
        ("Height-Channels", vec![1, 1, 1, side, side, 1, 64], 3, 6),
        ("outer(0,1)", vec![64, 256, n / (64 * 256)], 0, 1),
    ] {
        let a = f32_blob(&e, &dims, 1.0);
        let mut tdims = dims.clone();
        tdims.swap(d1, d2);
        let to = f32_blob(&e, &tdims, 0.0);
        record(&mut c, &format!("transpose/{label}"), || to.transpose_from(&a, d1 as isize, d2 as isize).unwrap());
        let na = nd(&dims, 1.0);
        let mut nto = nd(&tdims, 0.0);
        record(&mut c, &format!("ndarray/transpose/{label}"), || {
            let mut v = na.view();
            v.swap_axes(d1, d2);
            nto.assign(&v);
        });
    }

    // Reorders of an NCHW tensor (64 channels, square images) to NHWC and
    // to channels blocked by 8 (nChw8c), and back.
    {
        let hw = n / 64;
        let h = (hw as f64).sqrt() as usize;
        let dims = [1, 64, h, hw / h];
        let nchw = f32_blob(&e, &dims, 1.0);
        let nhwc = Blob::with_desc(&e, &TensorDesc::new(DType::F32, &dims, Layout::Nhwc).unwrap()).unwrap();
        let blk = BlockingDesc::new(&[1, 8, dims[2], dims[3], 8], &[0, 1, 2, 3, 1]).unwrap();
        let b8 = Blob::with_desc(&e, &TensorDesc::with_blocking(DType::F32, &dims, blk).unwrap()).unwrap();
        record(&mut c, "reorder/NCHW->NHWC", || nhwc.reorder_from(&nchw).unwrap());
        record(&mut c, "reorder/NHWC->NCHW", || nchw.reorder_from(&nhwc).unwrap());
        record(&mut c, "reorder/NCHW->nChw8c", || b8.reorder_from(&nchw).unwrap());
        record(&mut c, "reorder/nChw8c->NCHW", || nchw.reorder_from(&b8).unwrap());
    }

    // Streaming ops.
    let a = f32_blob(&e, &[n], 1.0);
    let b = f32_blob(&e, &[n], 2.0);
    record(&mut c, "fill", || a.fill(3.0).unwrap());
    record(&mut c, "add", || a.add(&b).unwrap());
    record(&mut c, "scale", || a.scale(0.5).unwrap());
    record(&mut c, "asum", || {
        black_box(a.asum().unwrap());
    });
    record(&mut c, "sumsq", || {
        black_box(a.sumsq().unwrap());
    });
    let mut na = nd(&[n], 1.0);
    let nb = nd(&[n], 2.0);
    record(&mut c, "ndarray/fill", || na.fill(3.0));
    record(&mut c, "ndarray/add", || na += &nb);
    record(&mut c, "ndarray/scale", || na *= 0.5);
    record(&mut c, "ndarray/asum", || {
        black_box(na.fold(0f64, |acc, &x| acc + (x as f64).abs()));
    });
    record(&mut c, "ndarray/sumsq", || {
        black_box(Zip::from(&na).fold(0f64, |acc, &x| acc + (x as f64) * (x as f64)));
    });

    c.final_summary();

    let rows_tbl = [
        Row { op: "merge BatchLength", ours: "merge/BatchLength", nd: Some("ndarray/merge/BatchLength"), traffic: 2.0, target: ">= 0.8x memcpy" },
        Row { op: "merge Height", ours: "merge/Height", nd: Some("ndarray/merge/Height"), traffic: 2.0, target: ">= 0.8x memcpy" },
        Row { op: "merge Channels", ours: "merge/Channels", nd: Some("ndarray/merge/Channels"), traffic: 2.0, target: ">= 0.8x memcpy" },
        Row { op: "split BatchLength", ours: "split/BatchLength", nd: None, traffic: 2.0, target: ">= 0.8x memcpy" },
        Row { op: "split Height", ours: "split/Height", nd: None, traffic: 2.0, target: ">= 0.8x memcpy" },
        Row { op: "split Channels", ours: "split/Channels", nd: None, traffic: 2.0, target: ">= 0.8x memcpy" },
        Row { op: "transposed 2d(0,1)", ours: "transpose/2d(0,1)", nd: Some("ndarray/transpose/2d(0,1)"), traffic: 2.0, target: ">= 0.5x memcpy" },
        Row { op: "transposed H<->C", ours: "transpose/Height-Channels", nd: Some("ndarray/transpose/Height-Channels"), traffic: 2.0, target: ">= 0.5x memcpy" },
        Row { op: "transposed outer(0,1)", ours: "transpose/outer(0,1)", nd: Some("ndarray/transpose/outer(0,1)"), traffic: 2.0, target: "-" },
        Row { op: "reorder NCHW->NHWC", ours: "reorder/NCHW->NHWC", nd: None, traffic: 2.0, target: ">= 0.5x memcpy" },
        Row { op: "reorder NHWC->NCHW", ours: "reorder/NHWC->NCHW", nd: None, traffic: 2.0, target: ">= 0.5x memcpy" },
        Row { op: "reorder NCHW->nChw8c", ours: "reorder/NCHW->nChw8c", nd: None, traffic: 2.0, target: ">= 0.5x memcpy" },
        Row { op: "reorder nChw8c->NCHW", ours: "reorder/nChw8c->NCHW", nd: None, traffic: 2.0, target: ">= 0.5x memcpy" },
        Row { op: "fill", ours: "fill", nd: Some("ndarray/fill"), traffic: 1.0, target: ">= 0.9x bw limit" },
        Row { op: "add", ours: "add", nd: Some("ndarray/add"), traffic: 3.0, target: ">= 0.9x bw limit" },
        Row { op: "scale", ours: "scale", nd: Some("ndarray/scale"), traffic: 2.0, target: ">= 0.9x bw limit" },
        Row { op: "asum", ours: "asum", nd: Some("ndarray/asum"), traffic: 1.0, target: ">= 0.9x bw limit" },
        Row { op: "sumsq", ours: "sumsq", nd: Some("ndarray/sumsq"), traffic: 1.0, target: ">= 0.9x bw limit" },
    ];
    let Some(mc) = median("memcpy") else { return };
    println!();
    println!("blobcore ops on {mib} MiB f32 blobs; memcpy of {mib} MiB: {:.2} ms ({:.1} GB/s copied)", mc * 1e3, bytes as f64 / mc / 1e9);
    println!("{:<24} {:>9} {:>9} {:>11} {:>10}  target", "op", "ms", "x memcpy", "x bw limit", "x ndarray");
    for r in rows_tbl {
        let Some(t) = median(r.ours) else { continue };
        let ndr = r.nd.and_then(median).map(|x| format!("{:.2}", x / t)).unwrap_or_else(|| "-".into());
        println!(
            "{:<24} {:>9.2} {:>9.2} {:>11.2} {:>10}  {}",
            r.op,
            t * 1e3,
            mc / t,
            (r.traffic / 2.0) * mc / t,
            ndr,
            r.target
        );
    }
}
