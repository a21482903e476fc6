//! Compiles the C++ API (cpp/npu_api.cpp) against the cxx bridge of src/lib.rs, OpenVINO's C++
//! headers and the DPC++ runtime's headers. Nothing is linked here: CMake links the static library
//! with OpenVINO and the SYCL runtime (CMakeLists.txt). `CXXFLAGS` (read by cc) reach this code
//! and the main crate's shim alike: CMake's sanitizer build instruments both through it.

use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("../..");
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    if std::env::var_os("DOCS_RS").is_some() {
        return;
    }
    // The C++ API is compiled on the OS it runs on, with that OS's DPC++ compiler (icx or MSVC on
    // Windows): a build for another OS type-checks the Rust side and does not link.
    if std::env::var("CARGO_CFG_TARGET_OS").ok().as_deref() != Some(std::env::consts::OS) {
        println!("cargo:warning=npu-sycl-bridge-cpp: a build for another OS: the C++ API is not compiled; this build does not link");
        return;
    }
    let openvino =
        native_finder::find_openvino().unwrap_or_else(|nf| panic!("the C++ API needs OpenVINO's headers: {nf}"));
    let ov_include = openvino.include_dir.clone().expect("OpenVINO's include directory");
    let sycl =
        native_finder::find_sycl().unwrap_or_else(|nf| panic!("the C++ API needs the SYCL runtime's headers: {nf}"));
    let sycl_include = sycl.include_dir.clone().expect("the SYCL finder always sets include_dir");

    let source = root.join("cpp/npu_api.cpp");
    let mut build = cxx_build::bridge("src/lib.rs");
    build
        .file(&source)
        .include(root.join("include"))
        .include(&ov_include)
        .include(&sycl_include)
        .std("c++17")
        .define("SYCL_DISABLE_FSYCL_SYCLHPP_WARNING", None)
        .flag_if_supported("-Wno-deprecated-declarations")
        .flag_if_supported("-Wno-unused-parameter");
    build.compile("npu_sycl_bridge_cpp_api");

    println!("cargo:rerun-if-changed={}", source.display());
    for h in [
        "include/npu_sycl_bridge/npu.hpp",
        "include/npu_sycl_bridge/types.hpp",
        "include/npu_sycl_bridge/detail/openvino_binding.hpp",
    ] {
        println!("cargo:rerun-if-changed={}", root.join(h).display());
    }
    println!("cargo:rerun-if-changed={}", ov_include.display());
}
