//! Devices: one GPU device in the GPU driver, one VPU device in the NPU driver. No sub-devices;
//! `zeDeviceGetRootDevice` answers NULL (the device is a root device).
use crate::export::{chain, enumerate, now_ns, out, set_cstr};
use crate::memory::MAX_ALLOC;
use crate::objects::{device, device_from, driver_from, DriverKind};
use crate::stypes;
use crate::sys::*;
use std::sync::OnceLock;

/// The GPU's `ipVersion` (`VL0_GPU_IP_VERSION`, default below Battlemage's 0x05004000 so UR
/// picks adapter v1; 0x05004000 or more selects v2).
pub fn gpu_ip_version() -> u32 {
    static V: OnceLock<u32> = OnceLock::new();
    *V.get_or_init(|| {
        std::env::var("VL0_GPU_IP_VERSION")
            .ok()
            .and_then(|s| {
                let s = s.trim();
                match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                    Some(h) => u32::from_str_radix(h, 16).ok(),
                    None => s.parse().ok(),
                }
            })
            .unwrap_or(0x0300_0000)
    })
}

/// `ze_intel_npu_device_uuid`.
pub const NPU_DEVICE_UUID: [u8; 16] =
    [0x80, 0xd1, 0xd1, 0x1e, 0xb7, 0x38, 0x11, 0xea, 0xb3, 0xde, 0x02, 0x42, 0xac, 0x13, 0x00, 0x04];
/// The virtual GPU device's uuid.
pub const GPU_DEVICE_UUID: [u8; 16] = *b"vl0-gpu-device\0\x01";
/// NPU PCI device id (Lunar Lake, platform 4000).
pub const NPU_DEVICE_ID: u32 = 0x643E;
/// GPU PCI device id (a DG2 id; nothing keys on it).
pub const GPU_DEVICE_ID: u32 = 0x56A0;

fn fill_properties(kind: DriverKind, p: &mut ze_device_properties_t) {
    let cycles = p.stype == stypes::DEVICE_PROPERTIES_1_2;
    p.vendorId = 0x8086;
    p.subdeviceId = 0;
    p.maxMemAllocSize = MAX_ALLOC as u64;
    p.maxCommandQueuePriority = 0;
    p.timerResolution = if cycles { 1_000_000_000 } else { 1 };
    p.timestampValidBits = 56;
    p.kernelTimestampValidBits = 56;
    match kind {
        DriverKind::Gpu => {
            p.type_ = ZE_DEVICE_TYPE_GPU;
            p.deviceId = GPU_DEVICE_ID;
            p.flags = 0;
            p.coreClockRate = 1000;
            p.maxHardwareContexts = 64;
            p.numThreadsPerEU = 8;
            p.physicalEUSimdWidth = 8;
            p.numEUsPerSubslice = 16;
            p.numSubslicesPerSlice = 4;
            p.numSlices = 1;
            p.uuid.id = GPU_DEVICE_UUID;
            set_cstr(&mut p.name, "Virtual Intel(R) Graphics (virtual-l0)");
        }
        DriverKind::Npu => {
            p.type_ = ZE_DEVICE_TYPE_VPU;
            p.deviceId = NPU_DEVICE_ID;
            p.flags = ZE_DEVICE_PROPERTY_FLAG_INTEGRATED;
            p.coreClockRate = 1400;
            p.maxHardwareContexts = 1;
            p.numThreadsPerEU = 1;
            p.physicalEUSimdWidth = 1;
            p.numEUsPerSubslice = 1;
            p.numSubslicesPerSlice = 1;
            p.numSlices = 6;
            p.uuid.id = NPU_DEVICE_UUID;
            set_cstr(&mut p.name, "Intel(R) AI Boost (virtual-l0)");
        }
    }
    // SAFETY: pNext is the caller's chain of property structures.
    for e in unsafe { chain(p.pNext) } {
        if e.stype == stypes::DEVICE_IP_VERSION_EXT {
            // SAFETY: stype says ze_device_ip_version_ext_t.
            let ip = unsafe { &mut *(e.ptr as *mut ze_device_ip_version_ext_t) };
            ip.ipVersion = match kind {
                DriverKind::Gpu => gpu_ip_version(),
                DriverKind::Npu => 0,
            };
        }
    }
}

const ACCESS_ALL: u32 = ZE_MEMORY_ACCESS_CAP_FLAG_RW
    | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC
    | ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT
    | ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC;

ze_api! {
    fn zeDeviceGet(h: ze_driver_handle_t, count: *mut u32, devices: *mut ze_device_handle_t) {
        // SAFETY: handle validated; caller's enumeration pointers.
        unsafe {
            let d = driver_from(h)?;
            enumerate(count, devices, 1, |_, o| *o = device(d.driver()).handle())
        }
    }
    fn zeDeviceGetProperties(h: ze_device_handle_t, props: *mut ze_device_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (d, p) = unsafe { (device_from(h)?, out(props)?) };
        fill_properties(d.driver(), p);
        Ok(())
    }
    fn zeDeviceGetSubDevices(h: ze_device_handle_t, count: *mut u32, _subs: *mut ze_device_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe {
            device_from(h)?;
            *out(count)? = 0;
        }
        Ok(())
    }
    fn zeDeviceGetRootDevice(h: ze_device_handle_t, root: *mut ze_device_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe {
            device_from(h)?;
            *out(root)? = std::ptr::null_mut();
        }
        Ok(())
    }
    fn zeDeviceGetCommandQueueGroupProperties(h: ze_device_handle_t, count: *mut u32, props: *mut ze_command_queue_group_properties_t) {
        // SAFETY: handle validated; caller's enumeration pointers.
        unsafe {
            let d = device_from(h)?;
            enumerate(count, props, 1, |_, p| {
                p.flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
                // The NPU driver takes fill patterns of 1, 2 and 4 bytes only.
                p.maxMemoryFillPatternSize = match d.driver() { DriverKind::Gpu => 128, DriverKind::Npu => 4 };
                p.numQueues = match d.driver() { DriverKind::Gpu => 4, DriverKind::Npu => 1 };
            })
        }
    }
    fn zeDeviceGetMemoryAccessProperties(h: ze_device_handle_t, props: *mut ze_device_memory_access_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let p = unsafe { device_from(h)?; out(props)? };
        p.hostAllocCapabilities = ACCESS_ALL;
        p.deviceAllocCapabilities = ACCESS_ALL;
        p.sharedSingleDeviceAllocCapabilities = ACCESS_ALL;
        p.sharedCrossDeviceAllocCapabilities = 0;
        p.sharedSystemAllocCapabilities = 0;
        Ok(())
    }
    fn zeDeviceGetModuleProperties(h: ze_device_handle_t, props: *mut ze_device_module_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let p = unsafe { device_from(h)?; out(props)? };
        p.spirvVersionSupported = 0;
        p.flags = 0;
        p.fp16flags = 0;
        p.fp32flags = 0;
        p.fp64flags = 0;
        p.maxArgumentsSize = 2048;
        p.printfBufferSize = 0;
        p.nativeKernelSupported.id = [0; 16];
        Ok(())
    }
    fn zeDeviceGetImageProperties(h: ze_device_handle_t, props: *mut ze_device_image_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let p = unsafe { device_from(h)?; out(props)? };
        p.maxImageDims1D = 0;
        p.maxImageDims2D = 0;
        p.maxImageDims3D = 0;
        p.maxImageBufferSize = 0;
        p.maxImageArraySlices = 0;
        p.maxSamplers = 0;
        p.maxReadImageArgs = 0;
        p.maxWriteImageArgs = 0;
        Ok(())
    }
    fn zeDeviceGetComputeProperties(h: ze_device_handle_t, props: *mut ze_device_compute_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let p = unsafe { device_from(h)?; out(props)? };
        p.maxTotalGroupSize = 1024;
        p.maxGroupSizeX = 1024;
        p.maxGroupSizeY = 1024;
        p.maxGroupSizeZ = 64;
        p.maxGroupCountX = u32::MAX;
        p.maxGroupCountY = u32::MAX;
        p.maxGroupCountZ = u32::MAX;
        p.maxSharedLocalMemory = 64 * 1024;
        p.numSubGroupSizes = 3;
        p.subGroupSizes = [8, 16, 32, 0, 0, 0, 0, 0];
        Ok(())
    }
    fn zeDeviceGetMemoryProperties(h: ze_device_handle_t, count: *mut u32, props: *mut ze_device_memory_properties_t) {
        // SAFETY: handle validated; caller's enumeration pointers.
        unsafe {
            device_from(h)?;
            enumerate(count, props, 1, |_, p| {
                p.flags = 0;
                p.maxClockRate = 1000;
                p.maxBusWidth = 64;
                p.totalSize = 8 << 30;
                set_cstr(&mut p.name, "DDR");
            })
        }
    }
    fn zeDeviceGetCacheProperties(h: ze_device_handle_t, count: *mut u32, props: *mut ze_device_cache_properties_t) {
        // SAFETY: handle validated; caller's enumeration pointers.
        unsafe {
            device_from(h)?;
            enumerate(count, props, 1, |_, p| {
                p.flags = 0;
                p.cacheSize = 4 << 20;
            })
        }
    }
    fn zeDeviceGetExternalMemoryProperties(h: ze_device_handle_t, props: *mut ze_device_external_memory_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (d, p) = unsafe { (device_from(h)?, out(props)?) };
        p.memoryAllocationImportTypes = match d.driver() {
            DriverKind::Gpu => stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF | stypes::EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD,
            DriverKind::Npu => stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF | stypes::EXTERNAL_MEMORY_TYPE_FLAG_STANDARD_ALLOCATION,
        };
        p.memoryAllocationExportTypes = stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF;
        p.imageImportTypes = 0;
        p.imageExportTypes = 0;
        Ok(())
    }
    fn zeDevicePciGetPropertiesExt(h: ze_device_handle_t, props: *mut ze_pci_ext_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (d, p) = unsafe { (device_from(h)?, out(props)?) };
        p.address = ze_pci_address_ext_t { domain: 0, bus: 0, device: match d.driver() { DriverKind::Gpu => 2, DriverKind::Npu => 0xb }, function: 0 };
        p.maxSpeed = ze_pci_speed_ext_t { genVersion: 4, width: 16, maxBandwidth: 32_000_000_000 };
        Ok(())
    }
    fn zeDeviceGetStatus(h: ze_device_handle_t) {
        // SAFETY: handle validated.
        unsafe { device_from(h) }.map(|_| ())
    }
    fn zeDeviceGetGlobalTimestamps(h: ze_device_handle_t, host: *mut u64, dev: *mut u64) {
        // SAFETY: handle validated; out-parameters from the caller.
        unsafe {
            device_from(h)?;
            let t = now_ns();
            *out(host)? = t;
            *out(dev)? = t;
        }
        Ok(())
    }
    fn zeDeviceGetP2PProperties(h: ze_device_handle_t, peer: ze_device_handle_t, props: *mut ze_device_p2p_properties_t) {
        // SAFETY: handles validated; out-parameter from the caller.
        let p = unsafe { device_from(h)?; device_from(peer)?; out(props)? };
        p.flags = 0;
        Ok(())
    }
    fn zeDeviceCanAccessPeer(h: ze_device_handle_t, peer: ze_device_handle_t, value: *mut ze_bool_t) {
        // SAFETY: handles validated; out-parameter from the caller.
        unsafe {
            device_from(h)?;
            device_from(peer)?;
            *out(value)? = (h == peer) as ze_bool_t;
        }
        Ok(())
    }
}
