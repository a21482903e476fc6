//! Build script: the doctor links libsycl through npu-sycl-bridge (feature `sycl`), and cargo passes
//! npu-sycl-bridge's rpath on to no other package, so the doctor takes it from npu-sycl-bridge's
//! `links` metadata (as the README tells every dependent with feature `sycl` to).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Ok(dir) = std::env::var("DEP_NPU_SYCL_BRIDGE_SYCL_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
