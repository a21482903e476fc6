//! Build script: bakes in where cargo puts the virtual Level Zero platform for this build, and gives
//! testkit's own test binaries the rpath to the SYCL runtime.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // virtual-l0's build script (it has `links = "npu_sycl_bridge_virtual_l0"`) passes the directory
    // its cdylib is written to. Cargo builds that cdylib as part of every build that uses testkit, so
    // a dependent crate's tests find the virtual platform with no manual step.
    let dir = std::env::var("DEP_NPU_SYCL_BRIDGE_VIRTUAL_L0_CDYLIB_DIR")
        .expect("virtual-l0's build script passes cdylib_dir (links = \"npu_sycl_bridge_virtual_l0\")");
    println!("cargo:rustc-env=TESTKIT_VIRTUAL_L0_DIR={dir}");
    // With npu-sycl-bridge's feature `sycl`, binaries link libsycl; cargo passes npu-sycl-bridge's
    // rpath to no other package, so testkit's own tests get it here (as the README tells dependents).
    if let Ok(dir) = std::env::var("DEP_NPU_SYCL_BRIDGE_SYCL_LIB_DIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
