//! NCHW <-> NHWC reorders of f32 over the channel counts networks use, as
//! a fraction of a dense `copy_from` of the same bytes in the same run
//! (the best of 5 each; 256 MiB per blob).
//!
//! `cargo run --release -p blobcore --example channels [C]` runs every
//! count, or only `C`. With `only` as a second argument it runs just the
//! NCHW -> NHWC reorder 20 times (for `perf record`).
use blobcore::{Blob, DType, Engine, Layout, TensorDesc};
use std::time::Instant;

fn best(f: &mut dyn FnMut()) -> f64 {
    let mut b = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        f();
        b = b.min(t.elapsed().as_secs_f64());
    }
    b * 1e3
}

fn main() {
    let e = Engine::cpu();
    let total = 64usize << 20; // elements per blob (256 MiB of f32)
    let only: Option<usize> = std::env::args().nth(1).and_then(|v| v.parse().ok());
    let profile = std::env::args().nth(2).is_some_and(|v| v == "only");
    for c in [3usize, 8, 16, 24, 32, 36, 40, 48, 56, 64, 80, 96, 112, 144, 192, 256, 320, 384, 512] {
        if only.is_some_and(|o| o != c) {
            continue;
        }
        let (n, h) = (16, 256);
        let w = total / c / n / h;
        let d = [n, c, h, w];
        let nchw = Blob::tensor(&e, DType::F32, &d).unwrap();
        nchw.fill(1.0).unwrap();
        let nhwc = Blob::with_desc(&e, &TensorDesc::new(DType::F32, &d, Layout::Nhwc).unwrap()).unwrap();
        nhwc.fill(1.0).unwrap();
        if profile {
            for _ in 0..20 {
                nhwc.reorder_from(&nchw).unwrap();
            }
            continue;
        }
        let other = Blob::tensor(&e, DType::F32, &d).unwrap();
        other.fill(1.0).unwrap();
        let copy = best(&mut || other.copy_from(&nchw).unwrap());
        let to_nhwc = best(&mut || nhwc.reorder_from(&nchw).unwrap());
        let to_nchw = best(&mut || nchw.reorder_from(&nhwc).unwrap());
        println!(
            "C={c:4} {d:?}  copy {copy:6.2} ms  NCHW->NHWC {to_nhwc:7.2} ms ({:.2}x)  NHWC->NCHW {to_nchw:7.2} ms ({:.2}x)",
            copy / to_nhwc,
            copy / to_nchw
        );
    }
}
