//! Devices: one GPU device in the GPU driver, one VPU device in the NPU driver. No sub-devices;
//! `zeDeviceGetRootDevice` answers NULL on the GPU (the device is a root device: compute-runtime
//! `device.cpp` `Device::getRootDevice`); the NPU driver has no such entry (linux-npu-driver 1.32.1
//! `ze_device.cpp` fills no `pfnGetRootDevice`), so the loader answers `UNINITIALIZED`.
use crate::export::ZeResult;
use crate::export::{chain, enumerate, now_ns, out, set_cstr};
use crate::memory;
use crate::objects::{device, device_from, driver_from, DriverKind};
use crate::profile::{self, NpuGeneration};
use crate::stypes;
use crate::sys::*;
use std::sync::OnceLock;

/// `ze_intel_npu_device_uuid`.
pub const NPU_DEVICE_UUID: [u8; 16] =
    [0x80, 0xd1, 0xd1, 0x1e, 0xb7, 0x38, 0x11, 0xea, 0xb3, 0xde, 0x02, 0x42, 0xac, 0x13, 0x00, 0x04];
/// The virtual GPU device's uuid.
pub const GPU_DEVICE_UUID: [u8; 16] = *b"vl0-gpu-device\0\x01";

/// The NPU's per-generation numbers (linux-npu-driver `umd/vpu_driver/source/device/vpu_37xx`,
/// `vpu_40xx`, `vpu_50xx` hw info): tiles (all enabled), SIMD width, execution units, timer Hz,
/// core clock (Hz; a per-SKU fuse value on hardware, a typical one here).
fn npu_numbers(g: NpuGeneration) -> (u32, u32, u32, u64, u32) {
    match g {
        NpuGeneration::Npu37xx => (2, 4096, 4096, 38_400_000, 1_400_000_000),
        NpuGeneration::Npu40xx => (6, 4096, 12288, 19_200_000, 1_950_000_000),
        NpuGeneration::Npu50xx => (3, 8192, 12288, 19_200_000, 1_950_000_000),
    }
}

/// `zeDeviceGetProperties`: the GPU as compute-runtime reports the profile's iGPU, the NPU as
/// linux-npu-driver 1.32.1 does (`device.cpp` `Device::getProperties`): base fields first, then the
/// chain, where the NPU takes only the IP-version and mutable-command-list entries and answers any
/// other stype with `INVALID_ARGUMENT` (`handleExtensionProperty`), the fields above already written.
pub(crate) fn fill_properties(kind: DriverKind, p: &mut ze_device_properties_t) -> ZeResult {
    let prof = profile::current();
    let cycles = p.stype == stypes::DEVICE_PROPERTIES_1_2;
    p.vendorId = 0x8086;
    p.subdeviceId = 0;
    match kind {
        DriverKind::Gpu => {
            let [slices, subslices, eus, threads, simd] = prof.gpu_topology;
            p.type_ = ZE_DEVICE_TYPE_GPU;
            p.deviceId = prof.gpu_device_id;
            p.flags = ZE_DEVICE_PROPERTY_FLAG_INTEGRATED;
            if prof.gpu_xe2_or_later {
                p.flags |= ZE_DEVICE_PROPERTY_FLAG_ONDEMANDPAGING;
            }
            p.coreClockRate = 2000;
            p.maxMemAllocSize = crate::memory::max_alloc(DriverKind::Gpu);
            p.maxHardwareContexts = 65536;
            p.maxCommandQueuePriority = 0;
            p.numThreadsPerEU = threads;
            p.physicalEUSimdWidth = simd;
            p.numEUsPerSubslice = eus;
            p.numSubslicesPerSlice = subslices;
            p.numSlices = slices;
            p.timerResolution = if cycles { 19_200_000 } else { 52 };
            (p.timestampValidBits, p.kernelTimestampValidBits) =
                if prof.gpu_xe2_or_later { (64, 64) } else { (36, 32) };
            p.uuid.id = GPU_DEVICE_UUID;
            set_cstr(&mut p.name, prof.gpu_name);
        }
        DriverKind::Npu => {
            let (tiles, simd, eus, hz, clock) = npu_numbers(prof.npu_generation);
            p.type_ = ZE_DEVICE_TYPE_VPU;
            p.deviceId = prof.npu_device_id;
            p.flags = ZE_DEVICE_PROPERTY_FLAG_INTEGRATED;
            p.coreClockRate = clock;
            p.maxMemAllocSize = crate::memory::max_alloc(DriverKind::Npu);
            p.maxHardwareContexts = 64;
            p.maxCommandQueuePriority = 2;
            p.numThreadsPerEU = 1;
            p.physicalEUSimdWidth = simd;
            p.numEUsPerSubslice = eus;
            p.numSubslicesPerSlice = 1;
            p.numSlices = tiles;
            if p.stype == stypes::DEVICE_PROPERTIES_1_2 {
                p.timerResolution = hz;
            } else if p.stype == ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES {
                p.timerResolution = 1_000_000_000 / hz;
            }
            p.timestampValidBits = 64;
            p.kernelTimestampValidBits = 0;
            p.uuid.id = NPU_DEVICE_UUID;
            set_cstr(&mut p.name, "Intel(R) AI Boost");
        }
    }
    // SAFETY: pNext is the caller's chain of property structures.
    for e in unsafe { chain(p.pNext) } {
        match e.stype {
            stypes::DEVICE_IP_VERSION_EXT => {
                // SAFETY: stype says ze_device_ip_version_ext_t.
                let ip = unsafe { &mut *(e.ptr as *mut ze_device_ip_version_ext_t) };
                // The NPU reports its platform type there (0 = silicon), not an IP version.
                ip.ipVersion = match kind {
                    DriverKind::Gpu => prof.gpu_ip_version,
                    DriverKind::Npu => 0,
                };
            }
            // compute-runtime `device.cpp` `Device::getProperties`: the EU count of the topology
            // (`gtSystemInfo.EUCount`), with `ZE_extension_eu_count`.
            s if s == ZE_STRUCTURE_TYPE_EU_COUNT_EXT && kind == DriverKind::Gpu => {
                let [slices, subslices, eus, ..] = prof.gpu_topology;
                // SAFETY: stype says ze_eu_count_ext_t.
                let c = unsafe { &mut *(e.ptr as *mut ze_eu_count_ext_t) };
                c.numTotalEUs = slices * subslices * eus;
            }
            stypes::MUTABLE_COMMAND_LIST_EXP_PROPERTIES if kind == DriverKind::Npu => {
                // SAFETY: stype says ze_mutable_command_list_exp_properties_t.
                let m = unsafe { &mut *(e.ptr as *mut ze_mutable_command_list_exp_properties_t) };
                m.mutableCommandListFlags = 0;
                m.mutableCommandFlags = stypes::NPU_MUTABLE_COMMAND_FLAGS;
            }
            _ if kind == DriverKind::Npu => return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
            _ => {}
        }
    }
    Ok(())
}

/// One command queue group as `zeDeviceGetCommandQueueGroupProperties` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueGroup {
    /// `ze_command_queue_group_property_flags_t`.
    pub flags: u32,
    /// `maxMemoryFillPatternSize`: the largest fill pattern a list of this group takes.
    pub max_fill_pattern: usize,
    /// `numQueues`.
    pub queues: u32,
}

impl QueueGroup {
    /// A copy-only group (a blitter engine): no compute.
    pub fn copy_only(&self) -> bool {
        self.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE == 0
    }
}

/// The queue groups of the device of `kind`, in ordinal order.
///
/// GPU, as compute-runtime builds them (`level_zero/core/source/device/device.cpp`
/// `Device::getCommandQueueGroupProperties`): one group per NEO engine group, in the order
/// `NEO::Device::addEngineToEngineGroup` first meets each group type while creating the engines
/// `GfxCoreHelperHw::getGpgpuEngineInstances` lists (`gfx_core_helper_xe_hpg_core.cpp` for
/// Xe-LPG, `gfx_core_helper_xe2_and_later.inl` for Xe2/Xe3): the CCS engines first, then the
/// render engine where exposed, then the blitter. A compute group (CCS) is
/// COMPUTE|COPY|COOPERATIVE_KERNELS, the render group (RCS) adds METRICS, both with
/// `maxMemoryFillPatternSize` = `SIZE_MAX`; the copy group is COPY only with the profile's blitter
/// pattern limit (`getMaxFillPatternSizeForCopyEngine`). `numQueues` is the number of engines of
/// the group: on Linux the kernel's engine list decides (`os_interface/linux/engine_info.cpp`
/// `EngineInfo::mapEngine`): one CCS (Meteor/Arrow Lake have ccs0 only; on Lunar/Panther Lake the xe
/// kernel gives all compute slices to ccs0 by default) and one user-visible BCS (Meteor/Arrow Lake
/// have bcs0 only; the xe kernel keeps the highest copy engine of Xe2+ for its own page-fault
/// migration, `xe_hw_engine.c` `reserved_bcs_instance`) (inferred from the kernel drivers, which
/// compute-runtime does not encode). The blitter group exists because these products'
/// `configureHardwareCustom` calls `enableBlitterOperationsSupport`, which follows `ftrBlitterRing`
/// (set by `setupDefaultFeatureTableAndWorkaroundTable`, `hw_info.cpp`;
/// `product_helper_xe_hpg_and_later.inl` `obtainBlitterPreference`).
///
/// NPU: one COMPUTE|COPY group with one queue; fill patterns of 1, 2 and 4 bytes only.
/// Built once per driver: the profile is fixed for the process, and fills and queue creation read them.
pub fn queue_groups(kind: DriverKind) -> &'static [QueueGroup] {
    static GPU: OnceLock<Vec<QueueGroup>> = OnceLock::new();
    static NPU: OnceLock<Vec<QueueGroup>> = OnceLock::new();
    let compute_copy = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    match kind {
        DriverKind::Npu => NPU.get_or_init(|| vec![QueueGroup { flags: compute_copy, max_fill_pattern: 4, queues: 1 }]),
        DriverKind::Gpu => GPU.get_or_init(|| {
            let prof = profile::current();
            let compute = compute_copy | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COOPERATIVE_KERNELS;
            let mut groups = vec![QueueGroup { flags: compute, max_fill_pattern: usize::MAX, queues: 1 }];
            if prof.gpu_render_group {
                groups.push(QueueGroup {
                    flags: compute | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_METRICS,
                    max_fill_pattern: usize::MAX,
                    queues: 1,
                });
            }
            groups.push(QueueGroup {
                flags: ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY,
                max_fill_pattern: prof.gpu_copy_fill_pattern_max,
                queues: 1,
            });
            groups
        }),
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
        fill_properties(d.driver(), p)
    }
    fn zeDeviceGetSubDevices(h: ze_device_handle_t, count: *mut u32, _subs: *mut ze_device_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe {
            device_from(h)?;
            *out(count)? = 0;
        }
        Ok(())
    }
    /// level-zero v1.32.0 `source/loader/ze_ldrddi.cpp` `zeDeviceGetRootDevice`: a driver without
    /// `pfnGetRootDevice` (the NPU's) → `ZE_RESULT_ERROR_UNINITIALIZED` (with a GPU loaded too, the
    /// intercept layer is on and this is what the loader answers).
    fn zeDeviceGetRootDevice(h: ze_device_handle_t, root: *mut ze_device_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe {
            if device_from(h)?.driver() == DriverKind::Npu {
                return Err(ZE_RESULT_ERROR_UNINITIALIZED);
            }
            *out(root)? = std::ptr::null_mut();
        }
        Ok(())
    }
    fn zeDeviceGetCommandQueueGroupProperties(h: ze_device_handle_t, count: *mut u32, props: *mut ze_command_queue_group_properties_t) {
        // SAFETY: handle validated; caller's enumeration pointers.
        unsafe {
            let groups = queue_groups(device_from(h)?.driver());
            enumerate(count, props, groups.len(), |i, p| {
                p.flags = groups[i].flags;
                p.maxMemoryFillPatternSize = groups[i].max_fill_pattern;
                p.numQueues = groups[i].queues;
            })
        }
    }
    fn zeDeviceGetMemoryAccessProperties(h: ze_device_handle_t, props: *mut ze_device_memory_access_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (d, p) = unsafe { (device_from(h)?, out(props)?) };
        match d.driver() {
            // compute-runtime `device.cpp` `Device::getMemoryAccessProperties` with the base
            // `ProductHelperHw` (`os_interface/product_helper.inl`), which none of these products
            // overrides: host (`getHostMemCapabilities`, `getHostMemCapabilitiesValue`), device
            // (`getDeviceMemCapabilities`) and shared single-device
            // (`getSingleDeviceSharedMemCapabilities`) are RW|ATOMIC; CONCURRENT and
            // CONCURRENT_ATOMIC only with the `EnableUsmConcurrentAccessSupport` debug key or KMD
            // migration, which `isKmdMigrationSupported` (false) rules out on integrated GPUs.
            // Cross-device: 0 for one root device without sub-devices. Shared system: the
            // capability table's value, all four flags on Lunar/Panther Lake with shared-system USM
            // enabled (`linux/hw_info_extra_{lnl,ptl}.cpp`, `drm_neo.cpp`
            // `adjustSharedSystemMemCapabilities`), else 0.
            DriverKind::Gpu => {
                let rw = ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC;
                p.hostAllocCapabilities = rw;
                p.deviceAllocCapabilities = rw;
                p.sharedSingleDeviceAllocCapabilities = rw;
                p.sharedCrossDeviceAllocCapabilities = 0;
                p.sharedSystemAllocCapabilities =
                    if profile::current().gpu_shared_system_usm { ACCESS_ALL } else { 0 };
            }
            DriverKind::Npu => {
                // linux-npu-driver device.cpp: host and device RW|ATOMIC, no shared kinds.
                let rw = ZE_MEMORY_ACCESS_CAP_FLAG_RW | ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC;
                p.hostAllocCapabilities = rw;
                p.deviceAllocCapabilities = rw;
                p.sharedSingleDeviceAllocCapabilities = 0;
                p.sharedCrossDeviceAllocCapabilities = 0;
                p.sharedSystemAllocCapabilities = 0;
            }
        }
        Ok(())
    }
    /// GPU: as compute-runtime reports it (`device.cpp` `Device::getKernelProperties`), although no
    /// module loads here (`zeModuleCreate` is `UNSUPPORTED_FEATURE`): SPIR-V 1.5 (the first of
    /// `device_caps.cpp` `spirvWithVersion`), FP16|FP64|INT64_ATOMICS|DP4A (`ftrSupportsFP64` is set
    /// on Meteor, Arrow, Lunar and Panther Lake, `hw_info_{mtl,arl,lnl,ptl}.cpp`), the default FP
    /// flags, with correctly rounded divide/sqrt for FP32 and FP64 (`ftrSupports64BitMath`),
    /// 2048-byte arguments, a 4 MiB printf buffer, and in a chained `ze_float_atomic_ext_properties_t`
    /// (`ZE_extension_float_atomics`) load/store, add and min/max, global and local, for FP32 and
    /// FP64 (`compiler_product_helper.cpp`) and load/store and min/max for FP16
    /// (`compiler_release_helper.cpp`; the extra FP16 caps start with Xe3P). The same on all four
    /// laptops. NPU: all zero (it runs no kernels).
    fn zeDeviceGetModuleProperties(h: ze_device_handle_t, props: *mut ze_device_module_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (d, p) = unsafe { (device_from(h)?, out(props)?) };
        if d.driver() == DriverKind::Gpu {
            const FP_DEFAULT: u32 = ZE_DEVICE_FP_FLAG_ROUND_TO_NEAREST
                | ZE_DEVICE_FP_FLAG_ROUND_TO_ZERO
                | ZE_DEVICE_FP_FLAG_ROUND_TO_INF
                | ZE_DEVICE_FP_FLAG_INF_NAN
                | ZE_DEVICE_FP_FLAG_DENORM
                | ZE_DEVICE_FP_FLAG_FMA;
            p.spirvVersionSupported = crate::stypes::make_version(1, 5);
            p.flags = ZE_DEVICE_MODULE_FLAG_FP16
                | ZE_DEVICE_MODULE_FLAG_FP64
                | ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS
                | ZE_DEVICE_MODULE_FLAG_DP4A;
            p.fp16flags = FP_DEFAULT;
            p.fp32flags = FP_DEFAULT | ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT;
            p.fp64flags = FP_DEFAULT | ZE_DEVICE_FP_FLAG_ROUNDED_DIVIDE_SQRT;
            p.maxArgumentsSize = 2048;
            p.printfBufferSize = 4 << 20;
            p.nativeKernelSupported.id = [0; 16];
            const LOAD_STORE: u32 = ZE_DEVICE_FP_ATOMIC_EXT_FLAG_GLOBAL_LOAD_STORE | ZE_DEVICE_FP_ATOMIC_EXT_FLAG_LOCAL_LOAD_STORE;
            const ADD: u32 = ZE_DEVICE_FP_ATOMIC_EXT_FLAG_GLOBAL_ADD | ZE_DEVICE_FP_ATOMIC_EXT_FLAG_LOCAL_ADD;
            const MIN_MAX: u32 = ZE_DEVICE_FP_ATOMIC_EXT_FLAG_GLOBAL_MIN_MAX | ZE_DEVICE_FP_ATOMIC_EXT_FLAG_LOCAL_MIN_MAX;
            // SAFETY: the caller's chain of property structures.
            for e in unsafe { chain(p.pNext) } {
                if e.stype == ZE_STRUCTURE_TYPE_FLOAT_ATOMIC_EXT_PROPERTIES {
                    // SAFETY: stype says ze_float_atomic_ext_properties_t.
                    let f = unsafe { &mut *(e.ptr as *mut ze_float_atomic_ext_properties_t) };
                    f.fp16Flags = LOAD_STORE | MIN_MAX;
                    f.fp32Flags = LOAD_STORE | ADD | MIN_MAX;
                    f.fp64Flags = LOAD_STORE | ADD | MIN_MAX;
                }
            }
            return Ok(());
        }
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
        let (d, p) = unsafe { (device_from(h)?, out(props)?) };
        if d.driver() == DriverKind::Npu {
            // linux-npu-driver device.cpp: every compute property 0 (the NPU runs no kernels).
            p.maxTotalGroupSize = 0;
            p.maxGroupSizeX = 0;
            p.maxGroupSizeY = 0;
            p.maxGroupSizeZ = 0;
            p.maxGroupCountX = 0;
            p.maxGroupCountY = 0;
            p.maxGroupCountZ = 0;
            p.maxSharedLocalMemory = 0;
            p.numSubGroupSizes = 0;
            p.subGroupSizes = [0; 8];
            return Ok(());
        }
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
            let npu = device_from(h)?.driver() == DriverKind::Npu;
            // The NPU reports one all-zero "DDR" entry (linux-npu-driver device.cpp); the iGPU its
            // share of system memory.
            enumerate(count, props, 1, |_, p| {
                p.flags = 0;
                p.maxClockRate = if npu { 0 } else { 1000 };
                p.maxBusWidth = if npu { 0 } else { 64 };
                p.totalSize = if npu { 0 } else { crate::memory::total_ram() };
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
        // Per driver and OS: `memory::import_types` / `memory::export_types` say whose code each follows.
        p.memoryAllocationImportTypes = memory::import_types(d.driver());
        p.memoryAllocationExportTypes = memory::export_types(d.driver());
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
