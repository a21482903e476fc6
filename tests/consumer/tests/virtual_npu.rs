//! The dependent crate's own test on the virtual NPU, with no manual step: testkit brings the virtual
//! platform (cargo built it with this test), the test activates it, runs one inference of a
//! reference model on the virtual NPU and compares the result with the model's Rust reference.

use npu_sycl_bridge::openvino::Core;
use testkit::{models, reference, virtual_platform};

#[test]
fn one_inference_on_the_virtual_npu_equals_the_reference() {
    assert!(
        std::env::var_os(virtual_platform::PATH_ENV).is_none(),
        "{} must not be set: the point is that nothing is set by hand",
        virtual_platform::PATH_ENV
    );
    let vp = virtual_platform::activate().expect("activate the virtual platform cargo built for this crate");
    // The library cargo built into this test's own target directory.
    let exe = std::env::current_exe().unwrap();
    assert_eq!(
        vp.path().parent(),
        exe.canonicalize().unwrap().parent(),
        "{} next to {}",
        vp.path().display(),
        exe.display()
    );
    eprintln!("virtual platform: {}", vp.path().display());

    let core = Core::new().unwrap();
    assert!(core.available_devices().unwrap().iter().any(|d| d == "NPU"), "OpenVINO sees the virtual NPU");
    let m = models::fully_connected();
    let inferences = vp.counter("npu.inferences");
    let outputs =
        npu_sycl_bridge_consumer::infer_once(&core, &m.xml, &m.weights, "NPU", &reference::sample_tensors(&m)).unwrap();
    assert_eq!(vp.counter("npu.inferences"), inferences + 1, "one inference ran on the virtual NPU");

    let want = reference::expected(&m);
    assert_eq!(outputs.len(), want.len());
    for (i, (w, got)) in want.iter().zip(&outputs).enumerate() {
        m.compare(i, w, got).unwrap_or_else(|e| panic!("{}: NPU output {i} differs from the reference: {e}", m.name));
    }
}
