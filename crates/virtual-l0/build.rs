use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The runtimes open the loader by soname; this file must answer to it.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libze_loader.so.1");
    // For the build scripts of packages that depend on this one (testkit): the directory cargo writes
    // this package's cdylib to, as DEP_NPU_SYCL_BRIDGE_VIRTUAL_L0_CDYLIB_DIR (`links`). OUT_DIR is
    // `<profile dir>/build/virtual-l0-<hash>/out`, and cargo writes a dependency's artifacts, the
    // cdylib among them, to `<profile dir>/deps`.
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let profile_dir = out
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent())
        .unwrap_or_else(|| panic!("OUT_DIR {} is not under a `build` directory", out.display()));
    println!("cargo:cdylib_dir={}", profile_dir.join("deps").display());
}
