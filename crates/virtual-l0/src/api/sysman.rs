//! Sysman (`zes*`): initialization, drivers and devices, device properties, and the NPU's engine
//! group, as each real driver answers them behind the Level Zero loader (v1.32.0
//! `source/loader/zes_ldrddi.cpp`): `zesInit` succeeds when at least one driver's does, and
//! `zesDriverGet` lists only those drivers. Sysman handles are the core handles here; the NPU
//! driver does the same, compute-runtime makes separate sysman objects (nothing observable without
//! comparing handles across the two APIs).
//!
//! Everything else of sysman (frequency, power, temperature, PCI, the GPU's engines) answers
//! `UNSUPPORTED_FEATURE` from `stubs.rs`.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

use super::device::fill_properties;
use super::driver::{accepts_init, bit, kinds_in};
use crate::export::{enumerate, out, set_cstr, ZeResult};
use crate::objects::{device, device_from, driver, driver_from, DriverKind};
use crate::profile::{self, NpuGeneration};
use crate::sys::*;

/// `ZES_STRING_PROPERTY_SIZE`.
const STRING_SIZE: usize = 64;
/// `ZES_STRUCTURE_TYPE_DEVICE_EXT_PROPERTIES`.
const DEVICE_EXT_PROPERTIES: u32 = 0x2d;
/// `ZES_DEVICE_TYPE_GPU`.
const ZES_DEVICE_TYPE_GPU: u32 = 1;
/// `ZES_DEVICE_PROPERTY_FLAG_INTEGRATED`, `ZES_DEVICE_PROPERTY_FLAG_ONDEMANDPAGING`.
const ZES_FLAG_INTEGRATED: u32 = 1 << 0;
const ZES_FLAG_ONDEMANDPAGING: u32 = 1 << 3;
/// `ZES_ENGINE_GROUP_COMPUTE_ALL`.
const ENGINE_GROUP_COMPUTE_ALL: u32 = 1;
/// The NPU's `BUILD_VERSION` as a build of the 1.32.1 sources makes it with the default build
/// number (linux-npu-driver `CMakeLists.txt`, `version.h.in`); release packages set their own
/// build number (inferred: not read).
const NPU_BUILD_VERSION: &str = "npu-linux-driver-dev-1.32.1.dev-0";

/// `zes_device_properties_t` (zes_api.h 1.32).
#[repr(C)]
pub struct ZesDeviceProperties {
    pub stype: u32,
    pub p_next: *mut c_void,
    pub core: ze_device_properties_t,
    pub num_subdevices: u32,
    pub serial_number: [c_char; STRING_SIZE],
    pub board_number: [c_char; STRING_SIZE],
    pub brand_name: [c_char; STRING_SIZE],
    pub model_name: [c_char; STRING_SIZE],
    pub vendor_name: [c_char; STRING_SIZE],
    pub driver_version: [c_char; STRING_SIZE],
}

/// `zes_device_ext_properties_t`.
#[repr(C)]
struct ZesDeviceExtProperties {
    stype: u32,
    p_next: *mut c_void,
    uuid: [u8; 16],
    type_: u32,
    flags: u32,
}

/// `zes_engine_properties_t`.
#[repr(C)]
pub struct ZesEngineProperties {
    pub stype: u32,
    pub p_next: *mut c_void,
    pub type_: u32,
    pub on_subdevice: ze_bool_t,
    pub subdevice_id: u32,
}

/// `zes_engine_stats_t`.
#[repr(C)]
pub struct ZesEngineStats {
    pub active_time: u64,
    pub timestamp: u64,
}

/// Drivers whose `zesInit` succeeded (bit per `DriverKind`).
static INITIALIZED: AtomicU32 = AtomicU32::new(0);

/// The NPU's sysman model name: its hardware info's platform name (`vpu_hw_37xx.cpp`,
/// `vpu_hw_40xx.cpp`, `vpu_hw_50xx.cpp`).
fn npu_platform_name(g: NpuGeneration) -> &'static str {
    match g {
        NpuGeneration::Npu37xx => "37xx",
        NpuGeneration::Npu40xx => "40xx",
        NpuGeneration::Npu50xx => "50xx",
    }
}

/// linux-npu-driver 1.32.1 `device.cpp` `Device::getProperties(zes_device_properties_t*)`: the core
/// properties as `zeDeviceGetProperties` gives them (the core's own stype and chain), no
/// sub-devices, "unknown" serial and board numbers, brand "NPU", the platform name as model,
/// vendor "INTEL", the build version; the outer chain is not read.
fn npu_properties(p: &mut ZesDeviceProperties) -> ZeResult {
    fill_properties(DriverKind::Npu, &mut p.core)?;
    p.num_subdevices = 0;
    set_cstr(&mut p.serial_number, "unknown");
    set_cstr(&mut p.board_number, "unknown");
    set_cstr(&mut p.brand_name, "NPU");
    set_cstr(&mut p.model_name, npu_platform_name(profile::current().npu_generation));
    set_cstr(&mut p.vendor_name, "INTEL");
    set_cstr(&mut p.driver_version, NPU_BUILD_VERSION);
    Ok(())
}

/// compute-runtime 26.14 `sysman_global_operations_imp.cpp` `GlobalOperationsImp::deviceGetProperties`
/// with the Linux `LinuxGlobalOperationsImp` getters. From the hardware info it sets only some core
/// fields (the rest stay as the caller left them: no SIMD width, no allocation size, no
/// sub-device id) and the integrated and on-demand-paging flags, which it ORs in; the timer
/// resolution in cycles/s for the 1.2 stype, else in ns. Vendor "Intel(R) Corporation" (the PCI
/// vendor file reads 0x8086 on any Intel iGPU). Inferred, as a laptop would answer: brand
/// "unknown" (the PCI subsystem vendor of an OEM laptop is the OEM's, not 0x8086), serial and
/// board numbers "unknown" (no PMT telemetry for them on an iGPU), driver version "unknown" (the
/// kernel module's `srcversion` hash is per kernel build; no such file here).
fn gpu_properties(p: &mut ZesDeviceProperties) {
    // SAFETY: an all-zero ze_device_properties_t is valid (integers, arrays, a null pNext).
    let mut hw: ze_device_properties_t = unsafe { std::mem::zeroed() };
    hw.stype = p.core.stype;
    // The GPU's fill never fails (its chain is empty here).
    let _ = fill_properties(DriverKind::Gpu, &mut hw);
    p.num_subdevices = 0;
    let c = &mut p.core;
    c.type_ = ZE_DEVICE_TYPE_GPU;
    c.vendorId = hw.vendorId;
    c.deviceId = hw.deviceId;
    c.flags |= hw.flags & (ZE_DEVICE_PROPERTY_FLAG_INTEGRATED | ZE_DEVICE_PROPERTY_FLAG_ONDEMANDPAGING);
    c.coreClockRate = hw.coreClockRate;
    c.maxHardwareContexts = 1024 * 64;
    c.maxCommandQueuePriority = 0;
    c.numThreadsPerEU = hw.numThreadsPerEU;
    c.numEUsPerSubslice = hw.numEUsPerSubslice;
    c.numSubslicesPerSlice = hw.numSubslicesPerSlice;
    c.numSlices = hw.numSlices;
    c.timerResolution = hw.timerResolution;
    c.timestampValidBits = hw.timestampValidBits;
    c.kernelTimestampValidBits = hw.kernelTimestampValidBits;
    c.uuid = hw.uuid;
    c.name = hw.name;
    // SAFETY: pNext is the caller's chain of sysman property structures.
    for e in unsafe { crate::export::chain(p.p_next) } {
        if e.stype == DEVICE_EXT_PROPERTIES {
            // SAFETY: stype says zes_device_ext_properties_t.
            let x = unsafe { &mut *(e.ptr as *mut ZesDeviceExtProperties) };
            x.type_ = ZES_DEVICE_TYPE_GPU;
            if hw.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED != 0 {
                x.flags |= ZES_FLAG_INTEGRATED;
            }
            if hw.flags & ZE_DEVICE_PROPERTY_FLAG_ONDEMANDPAGING != 0 {
                x.flags |= ZES_FLAG_ONDEMANDPAGING;
            }
            x.uuid = hw.uuid.id;
        }
    }
    set_cstr(&mut p.vendor_name, "Intel(R) Corporation");
    set_cstr(&mut p.driver_version, "unknown");
    set_cstr(&mut p.model_name, profile::current().gpu_name);
    set_cstr(&mut p.brand_name, "unknown");
    set_cstr(&mut p.board_number, "unknown");
    set_cstr(&mut p.serial_number, "unknown");
}

/// An engine handle, which is the NPU device's (`zesDeviceEnumEngineGroups`); anything else is
/// refused as the NPU driver's null check would.
///
/// # Safety
/// `h` is null or a handle the caller got from this platform.
unsafe fn npu_engine(h: *mut c_void) -> ZeResult {
    if h.is_null() {
        return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    }
    // SAFETY: validated by device_from, per this function's contract.
    let d = unsafe { device_from(h.cast()) }?;
    if d.driver() != DriverKind::Npu {
        return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
    }
    Ok(())
}

ze_api! {
    fn zesInit(flags: u32) {
        crate::profile::check().map_err(|_| ZE_RESULT_ERROR_UNINITIALIZED)?;
        let mut any = false;
        for k in DriverKind::ALL {
            if accepts_init(k, flags) {
                INITIALIZED.fetch_or(bit(k), Ordering::AcqRel);
                any = true;
            }
        }
        if any { Ok(()) } else { Err(ZE_RESULT_ERROR_UNINITIALIZED) }
    }
    fn zesDriverGet(count: *mut u32, drivers: *mut ze_driver_handle_t) {
        if count.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        let kinds = kinds_in(INITIALIZED.load(Ordering::Acquire));
        // SAFETY: the caller's count/array pointers, per the enumeration contract.
        unsafe { enumerate(count, drivers, kinds.len(), |i, h| *h = driver(kinds[i]).handle()) }
    }
    fn zesDeviceGet(h: ze_driver_handle_t, count: *mut u32, devices: *mut ze_device_handle_t) {
        if h.is_null() || count.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        }
        // SAFETY: handle validated; the caller's enumeration pointers.
        unsafe {
            let d = driver_from(h)?;
            // A driver handle that zesDriverGet did not give (inferred: a sysman call before zesInit).
            if INITIALIZED.load(Ordering::Acquire) & bit(d.driver()) == 0 {
                return Err(ZE_RESULT_ERROR_UNINITIALIZED);
            }
            enumerate(count, devices, 1, |_, o| *o = device(d.driver()).handle())
        }
    }
    fn zesDeviceGetProperties(h: ze_device_handle_t, props: *mut ZesDeviceProperties) {
        if h.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        }
        // SAFETY: handle validated; out-parameter from the caller.
        let (d, p) = unsafe { (device_from(h)?, out(props)?) };
        match d.driver() {
            DriverKind::Npu => npu_properties(p),
            DriverKind::Gpu => {
                gpu_properties(p);
                Ok(())
            }
        }
    }
    fn zesDeviceEnumEngineGroups(h: ze_device_handle_t, count: *mut u32, engines: *mut *mut c_void) {
        if h.is_null() || count.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        }
        // SAFETY: handle validated.
        let d = unsafe { device_from(h)? };
        if d.driver() == DriverKind::Gpu {
            // compute-runtime lists the GPU's engines from sysfs and the PMU: not modelled.
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
        }
        // linux-npu-driver 1.32.1 `zes_device.cpp`: one group, whose handle is the device's.
        // SAFETY: the caller's pointers.
        unsafe {
            if *count == 0 {
                *count = 1;
                return Ok(());
            }
            if engines.is_null() {
                return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
            }
            *count = 1;
            *engines = h.cast();
        }
        Ok(())
    }
    fn zesEngineGetProperties(h: *mut c_void, props: *mut ZesEngineProperties) {
        // SAFETY: the caller's engine handle and out-parameter.
        let p = unsafe { npu_engine(h).and_then(|_| out(props)) }?;
        // `device.cpp` `Device::engineGetProperties`.
        p.type_ = ENGINE_GROUP_COMPUTE_ALL;
        p.on_subdevice = 0;
        p.subdevice_id = 0;
        Ok(())
    }
    fn zesEngineGetActivity(h: *mut c_void, stats: *mut ZesEngineStats) {
        // SAFETY: the caller's engine handle and out-parameter.
        unsafe { npu_engine(h).and_then(|_| out(stats)) }?;
        // `Device::engineGetActivity` reads the kernel's `npu_busy_time_us` sysfs file and answers
        // UNINITIALIZED when it cannot; there is no such file here.
        let no_busy_time: ZeResult = Err(ZE_RESULT_ERROR_UNINITIALIZED);
        no_busy_time
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::device::zeDeviceGetProperties;
    use std::ffi::CStr;
    use std::ptr::null_mut;

    fn text(s: &[c_char]) -> &str {
        // SAFETY: set_cstr always NUL-terminates within the array.
        unsafe { CStr::from_ptr(s.as_ptr()) }.to_str().expect("ASCII")
    }

    fn props(h: ze_device_handle_t) -> ZesDeviceProperties {
        // SAFETY: an all-zero zes_device_properties_t is valid; handle and out-parameter are valid.
        let mut p: ZesDeviceProperties = unsafe { std::mem::zeroed() };
        p.stype = 1;
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zesDeviceGetProperties(h, &mut p) }, ZE_RESULT_SUCCESS);
        p
    }

    /// What npu-umd-test's `Device.GetZesDeviceAndProperties` walks: every sysman driver has a
    /// device whose properties succeed, and the NPU says INTEL / NPU / npu-linux-driver.
    #[test]
    fn every_sysman_device_answers_and_the_npu_names_its_driver() {
        // SAFETY: plain flags.
        assert_eq!(unsafe { zesInit(0) }, ZE_RESULT_SUCCESS);
        let mut n = 0;
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zesDriverGet(&mut n, null_mut()) }, ZE_RESULT_SUCCESS);
        assert_eq!(n, 2, "compute-runtime's and the NPU driver's sysman both initialize");
        let mut drivers = vec![null_mut(); n as usize];
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zesDriverGet(&mut n, drivers.as_mut_ptr()) }, ZE_RESULT_SUCCESS);
        let mut npu = None;
        for d in drivers {
            let mut m = 0;
            // SAFETY: out-parameters on the stack, handles from the calls before.
            assert_eq!(unsafe { zesDeviceGet(d, &mut m, null_mut()) }, ZE_RESULT_SUCCESS);
            assert_eq!(m, 1);
            let mut dev = null_mut();
            // SAFETY: out-parameters on the stack, handles from the calls before.
            assert_eq!(unsafe { zesDeviceGet(d, &mut m, &mut dev) }, ZE_RESULT_SUCCESS);
            let p = props(dev);
            if text(&p.vendor_name) == "INTEL" && text(&p.brand_name) == "NPU" {
                assert!(text(&p.driver_version).contains("npu-linux-driver"));
                assert_eq!(p.core.type_, ZE_DEVICE_TYPE_VPU);
                npu = Some(dev);
            } else {
                assert_eq!(text(&p.vendor_name), "Intel(R) Corporation");
                assert_eq!(p.core.type_, ZE_DEVICE_TYPE_GPU);
                assert_eq!(p.core.maxHardwareContexts, 65536);
                // Sysman leaves the fields it does not know as the caller gave them.
                assert_eq!((p.core.physicalEUSimdWidth, p.core.maxMemAllocSize), (0, 0));
                assert_eq!(text(&p.model_name), profile::current().gpu_name);
            }
        }
        let npu = npu.expect("the NPU is a sysman device");
        // Its core properties are zeDeviceGetProperties' own.
        // SAFETY: as above.
        let mut core: ze_device_properties_t = unsafe { std::mem::zeroed() };
        core.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zeDeviceGetProperties(npu, &mut core) }, ZE_RESULT_SUCCESS);
        assert_eq!((props(npu).core.deviceId, props(npu).core.numSlices), (core.deviceId, core.numSlices));
    }

    #[test]
    fn init_flags_are_each_drivers_own_rule_and_the_npu_has_one_compute_engine_group() {
        // A flag with neither driver's GPU_ONLY / VPU_ONLY bit.
        // SAFETY: plain flags.
        assert_eq!(unsafe { zesInit(1 << 31) }, ZE_RESULT_ERROR_UNINITIALIZED);
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zesInit(ZE_INIT_FLAG_VPU_ONLY) }, ZE_RESULT_SUCCESS);
        let npu = device(DriverKind::Npu).handle();
        let mut n = 0;
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zesDeviceEnumEngineGroups(npu, &mut n, null_mut()) }, ZE_RESULT_SUCCESS);
        assert_eq!(n, 1);
        let mut engine = null_mut();
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zesDeviceEnumEngineGroups(npu, &mut n, &mut engine) }, ZE_RESULT_SUCCESS);
        // SAFETY: all-zero C structs.
        let mut e: ZesEngineProperties = unsafe { std::mem::zeroed() };
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zesEngineGetProperties(engine, &mut e) }, ZE_RESULT_SUCCESS);
        assert_eq!((e.type_, e.on_subdevice), (ENGINE_GROUP_COMPUTE_ALL, 0));
        let mut stats = ZesEngineStats { active_time: 0, timestamp: 0 };
        // No npu_busy_time_us file here: the driver's own answer for that.
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zesEngineGetActivity(engine, &mut stats) }, ZE_RESULT_ERROR_UNINITIALIZED);
        let gpu = device(DriverKind::Gpu).handle();
        // SAFETY: out-parameters on the stack, handles from the calls before.
        assert_eq!(unsafe { zesDeviceEnumEngineGroups(gpu, &mut n, null_mut()) }, ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    }
}
