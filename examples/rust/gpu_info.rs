//! Prints the GPU adapter blobcore's GPU engine would use, or says why
//! there is none (exit code 77, which `make test` reads as "skip the GPU
//! suites"). `cargo run -p blobcore --example gpu_info [adapter-name-part]`
use blobcore::Engine;

fn main() {
    let hint = std::env::args().nth(1);
    match Engine::gpu(hint.as_deref()) {
        Ok(e) => println!("GPU adapter: {}", e.adapter_name().unwrap_or_default()),
        Err(e) => {
            println!("no GPU engine: {e}");
            std::process::exit(77);
        }
    }
}
