//! Without the virtual platform the process has no NPU: nothing in this test binary activates it, so
//! OpenVINO's NPU plugin finds either no `libze_loader.so.1` or the system's loader with no NPU
//! driver, and `NPU` is absent from `available_devices`.

use npu_sycl_bridge::openvino::Core;

#[test]
fn npu_is_absent_without_the_virtual_platform() {
    let core = Core::new().expect("OpenVINO must be available (cargo xtask setup)");
    let devices = core.available_devices().unwrap();
    assert!(devices.iter().any(|d| d == "CPU"), "{devices:?}");
    assert!(!devices.iter().any(|d| d.starts_with("NPU")), "no virtual platform, yet NPU is listed: {devices:?}");
    // Nothing in this process is the virtual platform.
    // SAFETY: RTLD_NOLOAD only looks for an already-loaded object; a handle is closed at once.
    let h = unsafe { libc::dlopen(c"libze_loader.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    if !h.is_null() {
        // SAFETY: a symbol lookup in a valid handle.
        let s = unsafe { libc::dlsym(h, c"vl0_counter".as_ptr()) };
        assert!(s.is_null(), "the virtual platform was loaded although nobody activated it");
        // SAFETY: balances the dlopen above.
        unsafe { libc::dlclose(h) };
    }
}
