//! `cargo bench -p blobcore --bench formats`: decoding and encoding the real
//! ImageNet mean files (../shared/data/caffe), next to a memcpy of the same
//! bytes measured in the same run. The target: reading the 786 KB legacy
//! BlobProto takes no more than a few milliseconds.

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

fn main() {
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
