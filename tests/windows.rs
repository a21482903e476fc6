//! Windows: the NT-handle path and the other NPU paths with the real Windows OpenVINO NPU plugin
//! on the virtual platform (`ze_loader.dll`). Run under Wine by `cargo xtask test-windows`; on
//! other OSes this file has no tests.
#![cfg(windows)]

mod common;

use common::npu::{core, counter, vp, NpuAndCpu};
use testkit::models;

#[test]
fn the_windows_npu_plugin_runs_on_the_virtual_platform() {
    vp();
    let devices = core().available_devices().unwrap();
    assert!(devices.iter().any(|d| d == "NPU"), "devices: {devices:?}");
    let s = NpuAndCpu::new(core(), models::convolution());
    let caps = s.npu.capabilities();
    assert!(caps.nt_handle_import, "{caps:?}");
    let before = counter("npu.inferences");
    let mut r = s.request();
    for (i, t) in testkit::reference::sample_tensors(&s.m).iter().enumerate() {
        r.set_input_tensor(i, t).unwrap();
    }
    r.infer().unwrap();
    let outs = testkit::reference::check_outputs(&s.m, &mut r);
    assert_eq!(counter("npu.inferences"), before + 1);
    s.assert_matches_cpu(&s.m.sample_inputs(), &outs);
}
