//! Prints the CUDA device blobcore's CUDA engine would use (name, compute
//! capability, memory, driver, where its kernels came from) and its
//! device-copy and host<->device bandwidth, or says why there is none
//! (exit code 77). `cargo run --release -p blobcore --example cuda_info [MiB]`
use blobcore::engine::cuda::{self, Cuda};

fn main() {
    let mib: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(256);
    println!("libcuda: {}, libnvrtc: {}", cuda::driver_present(), cuda::nvrtc_present());
    let c = match Cuda::open(0) {
        Ok(c) => c,
        Err(e) => {
            println!("no CUDA engine: {e}");
            std::process::exit(77);
        }
    };
    let (maj, min) = c.compute_capability();
    println!(
        "CUDA device 0: {} (compute {maj}.{min}, {} SMs, {:.1} GiB), driver CUDA {}.{}, kernels: {:?}",
        c.name(),
        c.multiprocessors(),
        c.total_memory() as f64 / (1u64 << 30) as f64,
        c.driver_version() / 1000,
        c.driver_version() % 1000 / 10,
        c.kernel_source()
    );
    let bytes = mib << 20;
    match c.copy_seconds(bytes, 7) {
        Ok(t) => println!("device copy {mib} MiB: {:.3} ms, {:.0} GB/s copied ({:.0} GB/s read+write)", t * 1e3, bytes as f64 / t / 1e9, 2.0 * bytes as f64 / t / 1e9),
        Err(e) => println!("device copy: {e}"),
    }
    match c.transfer_seconds(bytes, 5) {
        Ok([a, b, p, q]) => {
            let gbs = |t: f64| bytes as f64 / t / 1e9;
            println!("host->device {mib} MiB: pageable {:.1} GB/s, pinned {:.1} GB/s", gbs(a), gbs(p));
            println!("device->host {mib} MiB: pageable {:.1} GB/s, pinned {:.1} GB/s", gbs(b), gbs(q));
        }
        Err(e) => println!("transfers: {e}"),
    }
}
