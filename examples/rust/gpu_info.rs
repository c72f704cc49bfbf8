//! Prints every GPU adapter wgpu finds (name, kind, backend, driver) and
//! the one blobcore's GPU engine opens, or says why there is none (exit
//! code 77, which `make test` reads as "skip the GPU suites").
//! `cargo run -p blobcore --example gpu_info [adapter-name-part]`
use blobcore::engine::gpu;
use blobcore::Engine;

fn main() {
    let hint = std::env::args().nth(1);
    match gpu::adapters() {
        Ok(adapters) => adapters.iter().for_each(|a| println!("adapter: {} [{}, {}] {}", a.name, a.kind.name(), a.backend, a.driver)),
        Err(e) => println!("no adapter list: {e}"),
    }
    match Engine::gpu(hint.as_deref()) {
        Ok(e) => println!(
            "GPU adapter: {} ({})",
            e.adapter_name().unwrap_or_default(),
            e.adapter_kind().map(|k| k.name()).unwrap_or_default()
        ),
        Err(e) => {
            println!("no GPU engine: {e}");
            std::process::exit(77);
        }
    }
}
