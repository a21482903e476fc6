//! Build script: records where OpenVINO was found (it is loaded at run time, so nothing links
//! against it here) and, with feature `sycl`, compiles the C++ SYCL shim and links the DPC++ runtime.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for var in [
        "OPENVINO_INSTALL_DIR",
        "INTEL_OPENVINO_DIR",
        "OpenVINO_DIR",
        "SYCL_ROOT",
        "CMPLR_ROOT",
        "ONEAPI_ROOT",
        "NPU_SYCL_BRIDGE_HOME",
        // The provisioned prefix's default location (native_finder::project_home).
        "XDG_CACHE_HOME",
        "HOME",
        "DOCS_RS",
        "PATH",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // docs.rs and `cargo doc` need no native library at all.
    let docs_only = std::env::var_os("DOCS_RS").is_some();

    // A cross build (Windows from Linux) cannot bake a path of the build machine into the target.
    let cross = std::env::var("CARGO_CFG_TARGET_OS").ok().as_deref() != Some(std::env::consts::OS);
    let found = if cross { Err(None) } else { native_finder::find_openvino().map_err(Some) };
    match found {
        Ok(found) => {
            println!("cargo:rustc-env=NPU_SYCL_BRIDGE_OPENVINO_C={}", found.library.display());
            println!("cargo:warning=npu-sycl-bridge: OpenVINO: {found}");
        }
        Err(None) => println!("cargo:rustc-env=NPU_SYCL_BRIDGE_OPENVINO_C="),
        Err(Some(nf)) => {
            println!("cargo:rustc-env=NPU_SYCL_BRIDGE_OPENVINO_C=");
            if !docs_only {
                println!(
                    "cargo:warning=npu-sycl-bridge: {} was not found at build time ({} places probed); it is \
                     loaded at run time, so set NPU_SYCL_BRIDGE_OPENVINO_C or run `cargo xtask setup`",
                    nf.what,
                    nf.probed.len()
                );
            }
        }
    }

    #[cfg(feature = "sycl")]
    if cross {
        // DPC++'s Windows runtime is MSVC-built C++: the shim is compiled by icx or MSVC on Windows,
        // never from another OS. Such a build type-checks the Rust side and does not link.
        println!(
            "cargo:warning=npu-sycl-bridge: feature `sycl` across OSes: the C++ SYCL shim is not compiled (build \
             on the target OS with its DPC++ compiler); this build does not link"
        );
    } else if !docs_only {
        sycl::build();
    }
}

#[cfg(feature = "sycl")]
mod sycl {
    pub fn build() {
        let found = match native_finder::find_sycl() {
            Ok(f) => f,
            Err(nf) => panic!(
                "feature `sycl`: {nf}\n(Documentation alone needs no runtime: `DOCS_RS=1 cargo doc --all-features`.)"
            ),
        };
        println!("cargo:warning=npu-sycl-bridge: SYCL runtime: {found}");
        let include = found.include_dir.clone().expect("the SYCL finder always sets include_dir");

        let sources = ["cpp/sycl_core.cpp", "cpp/sycl_shim.cpp"];
        let mut build = cxx_build::bridge("src/sycl/ffi.rs");
        build
            .files(sources)
            .include("include")
            .include(&include)
            .std("c++17")
            .define("SYCL_DISABLE_FSYCL_SYCLHPP_WARNING", None)
            .flag_if_supported("-Wno-deprecated-declarations")
            .flag_if_supported("-Wno-unused-parameter");
        if let Some(icpx) = native_finder::icpx() {
            println!("cargo:warning=npu-sycl-bridge: compiling the shim with {}", icpx.display());
            build.compiler(icpx);
        }
        build.compile("npu_sycl_bridge_shim");

        let headers =
            ["include/npu_sycl_bridge/sycl_core.hpp", "include/npu_sycl_bridge/sycl_shim.hpp", "src/sycl/ffi.rs"];
        for f in sources.iter().chain(headers.iter()) {
            println!("cargo:rerun-if-changed={f}");
        }
        // A new runtime in the same place (`cargo xtask setup` after a pin change) recompiles the shim
        // against its headers instead of linking the old build to the new libsycl.
        println!("cargo:rerun-if-changed={}", include.join("sycl/version.hpp").display());
        println!("cargo:rerun-if-changed={}", found.library.display());
        println!("cargo:rustc-link-search=native={}", found.lib_dir.display());
        let name = found.library.file_name().unwrap().to_string_lossy().into_owned();
        println!("cargo:rustc-link-lib=dylib:+verbatim={name}");
        // Test binaries, examples and the doctor find libsycl without LD_LIBRARY_PATH.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", found.lib_dir.display());
        // Cargo passes link arguments on to no other package: a dependent's binaries get the rpath from
        // their own build script, which reads this as DEP_NPU_SYCL_BRIDGE_SYCL_LIB_DIR (`links`).
        println!("cargo:sycl_lib_dir={}", found.lib_dir.display());
        println!("cargo:rustc-env=NPU_SYCL_BRIDGE_SYCL_LIB_DIR={}", found.lib_dir.display());
    }
}
