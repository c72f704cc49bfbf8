fn main() {
    // The shared library's SONAME: programs link against libblob.so.0.
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libblob.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
