//! Regenerates `blobcore/src/engine/cuda/kernels.ptx` from kernels.cu with
//! NVRTC (`make cuda-ptx`; needs libnvrtc on LD_LIBRARY_PATH, e.g. from
//! the `nvidia-cuda-nvrtc-cu12==12.0.*` wheel). `--check` compares
//! instead of writing (exit 1 when they differ, 77 when NVRTC is missing).
use blobcore::engine::cuda;

const ARCH: &str = "compute_70";

fn main() {
    let check = std::env::args().any(|a| a == "--check");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/engine/cuda/kernels.ptx");
    if !cuda::nvrtc_present() {
        eprintln!("NVRTC (libnvrtc.so) not found: kernels.ptx left as it is");
        std::process::exit(77);
    }
    let ptx = match cuda::compile_ptx(ARCH) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    if check {
        let old = std::fs::read_to_string(path).unwrap_or_default();
        if old != ptx {
            eprintln!("{path} is not what NVRTC makes of kernels.cu: run `make cuda-ptx`");
            std::process::exit(1);
        }
        println!("kernels.ptx matches kernels.cu");
    } else if let Err(e) = std::fs::write(path, &ptx) {
        eprintln!("cannot write {path}: {e}");
        std::process::exit(1);
    } else {
        println!("wrote {path} ({} bytes, {ARCH})", ptx.len());
    }
}
