//! `cargo bench -p blobcore --bench formats`: decoding and encoding the real
//! ImageNet mean files (../shared/data/caffe), next to a memcpy of the same
//! bytes measured in the same run. The target: reading the 786 KB legacy
//! BlobProto takes no more than a few milliseconds.
//!
//! Then saving views to `.npy` on tmpfs (`/dev/shm`): a transposed,
//! a reversed and a region view of `BLOBCORE_BENCH_MIB` MiB (default 1024)
//! of f32, each against saving the same data dense in the same run. The
//! target (issue 27): a transposed view within 1.5x of the dense save.

use blobcore::{Blob, Engine};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

/// Median seconds of `runs` calls of `f`, after one warm-up call.
fn median(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut v: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Saving views to .npy against saving the dense blob, measured in one run.
fn save_views() {
    let mib: usize = std::env::var("BLOBCORE_BENCH_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(1024);
    let shm = PathBuf::from("/dev/shm");
    if !shm.is_dir() {
        println!("\nsaving views: skipped, no /dev/shm");
        return;
    }
    let path = shm.join(format!("blobcore-bench-{}.npy", std::process::id()));
    let n = ((mib << 20) / 4).isqrt();
    let e = Engine::cpu();
    let b = Blob::tensor(&e, blobcore::DType::F32, &[n, n]).expect("allocates");
    b.fill(1.5).expect("fills");
    let t = b.permuted_view(&[1, 0]).expect("a view");
    let r = b.index(&[blobcore::Index::Range { start: None, stop: None, step: Some(-1) }, blobcore::Index::Range { start: None, stop: None, step: Some(-1) }]).expect("a view");
    let roi = b.region(&[1, 1], &[n - 1, n - 1]).expect("a region");
    let save = |x: &Blob| {
        x.save_npy(&path).expect("saves");
    };
    let runs = 5;
    println!("\nsaving {n}x{n} f32 ({} MiB) to .npy on tmpfs, {} threads", (n * n * 4) >> 20, rayon::current_num_threads());
    println!("{:<22} {:>9} {:>10}  target", "view", "ms", "x dense");
    let dense = median(runs, || save(&b));
    println!("{:<22} {:>9.1} {:>10.2}", "dense", dense * 1e3, 1.0);
    for (name, x, target) in [("transposed (.T)", &t, Some(1.5)), ("reversed ([::-1, ::-1])", &r, None), ("region (1:-1, 1:-1)", &roi, None)] {
        let s = median(runs, || save(x));
        let verdict = match target {
            Some(limit) if s / dense <= limit => format!("<= {limit}x: meets"),
            Some(limit) => format!("<= {limit}x: MISSES"),
            None => String::new(),
        };
        println!("{name:<22} {:>9.1} {:>10.2}  {verdict}", s * 1e3, s / dense);
    }
    let _ = std::fs::remove_file(&path);
}

fn main() {
    save_views();
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/caffe");
    let proto_path = dir.join("imagenet_mean.binaryproto");
    let npy_path = dir.join("ilsvrc_2012_mean.npy");
    let (Ok(proto), Ok(npy)) = (std::fs::read(&proto_path), std::fs::read(&npy_path)) else {
        println!("formats bench: skipped, {} not found", dir.display());
        return;
    };
    let e = Engine::cpu();
    let runs = 200;
    let memcpy = |n: usize| {
        let src = vec![1u8; n];
        let mut dst = vec![0u8; n];
        median(runs, || dst.copy_from_slice(black_box(&src)))
    };
    let mean = Blob::from_caffe_bytes(&e, &proto).expect("decodes");
    let mean64 = Blob::from_npy_bytes(&e, &npy).expect("decodes");
    let neoml = mean.to_neoml_bytes().expect("encodes");
    let rows: Vec<(&str, usize, f64)> = vec![
        ("caffe decode (bytes)", proto.len(), median(runs, || drop(black_box(Blob::from_caffe_bytes(&e, &proto))))),
        ("caffe load (file)", proto.len(), median(runs, || drop(black_box(Blob::load_caffe(&e, &proto_path))))),
        ("caffe encode", proto.len(), median(runs, || drop(black_box(mean.to_caffe_bytes(false))))),
        ("npy decode (bytes)", npy.len(), median(runs, || drop(black_box(Blob::from_npy_bytes(&e, &npy))))),
        ("npy load (file)", npy.len(), median(runs, || drop(black_box(Blob::load_npy(&e, &npy_path))))),
        ("npy encode", npy.len(), median(runs, || drop(black_box(mean64.to_npy_bytes())))),
        ("neoml decode (bytes)", neoml.len(), median(runs, || drop(black_box(Blob::from_neoml_bytes(&e, &neoml))))),
        ("neoml encode", neoml.len(), median(runs, || drop(black_box(mean.to_neoml_bytes())))),
    ];
    println!("ImageNet mean files: {} KB BlobProto, {} KB .npy", proto.len() / 1000, npy.len() / 1000);
    println!("{:<22} {:>9} {:>9} {:>10}  target", "op", "KB", "ms", "x memcpy");
    for (op, n, t) in rows {
        let target = if op.starts_with("caffe load") { "<= a few ms" } else { "" };
        println!("{op:<22} {:>9} {:>9.3} {:>10.2}  {target}", n / 1000, t * 1e3, memcpy(n) / t);
    }
}
