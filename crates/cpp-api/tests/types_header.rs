//! `include/npu_sycl_bridge/types.hpp` is what cxx generates from `src/types.rs`: the C++ API's
//! enums and records are written once, in Rust. `NPU_SYCL_BRIDGE_BLESS=1` rewrites the header.

use std::path::Path;

#[test]
fn the_committed_header_is_generated_from_types_rs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("src/types.rs")).unwrap();
    let tokens: proc_macro2::TokenStream = source.parse().unwrap();
    let generated = cxx_gen::generate_header_and_cc(tokens, &cxx_gen::Opt::default()).unwrap();
    let header = format!(
        "// Generated from crates/cpp-api/src/types.rs by cxx ({}); do not edit: change types.rs and run\n\
         // NPU_SYCL_BRIDGE_BLESS=1 cargo test -p npu-sycl-bridge-cpp --test types_header\n{}",
        "cxx-gen 0.7.177",
        String::from_utf8(generated.header).unwrap()
    );
    let path = root.join("../../include/npu_sycl_bridge/types.hpp");
    if std::env::var_os("NPU_SYCL_BRIDGE_BLESS").is_some() {
        std::fs::write(&path, &header).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == header,
        "{} is stale: run NPU_SYCL_BRIDGE_BLESS=1 cargo test -p npu-sycl-bridge-cpp --test types_header",
        path.display()
    );
}
