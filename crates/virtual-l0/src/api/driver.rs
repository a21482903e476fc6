//! Driver enumeration and identity: `zeInit` (accumulating visibility per driver), `zeInitDrivers`,
//! `zeDriverGet`, properties, API version, extensions.
use crate::export::{enumerate, input, out, set_cstr, ZeResult};
use crate::objects::{self, device, driver, driver_from, Context, DriverKind};
use crate::stypes::make_version;
use crate::sys::*;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

/// API version the GPU driver reports.
pub const API_VERSION: u32 = make_version(1, 17);
/// API version linux-npu-driver 1.32.1 reports: `ZE_API_VERSION_CURRENT` of the level-zero 1.27
/// headers it is built against (1.15).
pub const NPU_API_VERSION: u32 = make_version(1, 15);
/// GPU `driverVersion`: `0x01030000 + build` (compute-runtime 26.14
/// `level_zero/core/source/driver/driver_handle.cpp` `DriverHandleImp::getProperties`, major 1 and
/// minor 3 from `driver_handle.h`), so UR and sycl-ls decode it as 1.3.<build>; callers read the
/// build to know the driver's fd rules.
pub fn gpu_driver_version() -> u32 {
    0x0103_0000 + (crate::profile::current().gpu_driver_build & 0xffff)
}
/// NPU `driverVersion`: linux-npu-driver sets it to the build's Unix time (CMake
/// `string(TIMESTAMP ... %s)`); 1.32.1 was released 2026-04-17.
pub const NPU_DRIVER_VERSION: u32 = 0x69e1_7800;
/// `ze_intel_npu_driver_uuid`.
pub const NPU_DRIVER_UUID: [u8; 16] =
    [0x01, 0x7d, 0xe9, 0x31, 0x6b, 0x4d, 0x4f, 0xd4, 0xaa, 0x9b, 0x5b, 0xed, 0x77, 0xfc, 0x8e, 0x89];
/// The virtual GPU driver's uuid ("vl0-gpu-driver" padded).
pub const GPU_DRIVER_UUID: [u8; 16] = *b"vl0-gpu-driver\0\x01";

/// Bit `1 << kind` set once `zeInit` made that driver visible. Never cleared.
static VISIBLE: AtomicU32 = AtomicU32::new(0);

pub(crate) fn bit(k: DriverKind) -> u32 {
    1 << (k as u32)
}

/// Whether driver `k` accepts `zeInit(flags)`, and `zesInit(flags)`, which both drivers check the
/// same way (compute-runtime 26.14 `sysman_driver.cpp` `init`, linux-npu-driver 1.32.1
/// `driver.cpp` `init`): GPU for 0 or GPU_ONLY, NPU for 0 or VPU_ONLY.
pub(crate) fn accepts_init(k: DriverKind, flags: u32) -> bool {
    flags == 0
        || match k {
            DriverKind::Gpu => flags & ZE_INIT_FLAG_GPU_ONLY != 0,
            DriverKind::Npu => flags & ZE_INIT_FLAG_VPU_ONLY != 0,
        }
}

/// Whether driver `k` matches `ze_init_driver_type_desc_t.flags`.
fn accepts_type(k: DriverKind, flags: u32) -> bool {
    match k {
        DriverKind::Gpu => flags & ZE_INIT_DRIVER_TYPE_FLAG_GPU != 0,
        DriverKind::Npu => flags & ZE_INIT_DRIVER_TYPE_FLAG_NPU != 0,
    }
}

unsafe fn list_drivers(count: *mut u32, out_: *mut ze_driver_handle_t, kinds: &[DriverKind]) -> ZeResult {
    if kinds.is_empty() {
        return Err(ZE_RESULT_ERROR_UNINITIALIZED);
    }
    // SAFETY: the caller's count/array pointers, per the L0 enumeration contract.
    unsafe { enumerate(count, out_, kinds.len(), |i, h| *h = driver(kinds[i]).handle()) }
}

/// The visible drivers in `zeDriverGet` order.
pub fn visible() -> Vec<DriverKind> {
    kinds_in(VISIBLE.load(Ordering::Acquire))
}

/// The drivers whose [`bit`] is set in `mask`, in `DriverKind::ALL`'s order.
pub(crate) fn kinds_in(mask: u32) -> Vec<DriverKind> {
    DriverKind::ALL.into_iter().filter(|k| mask & bit(*k) != 0).collect()
}

ze_api! {
    fn zeInit(flags: ze_init_flags_t) {
        crate::profile::check().map_err(|_| ZE_RESULT_ERROR_UNINITIALIZED)?;
        let flags = flags as u32;
        if flags & !(ZE_INIT_FLAG_GPU_ONLY | ZE_INIT_FLAG_VPU_ONLY) != 0 {
            return Err(ZE_RESULT_ERROR_INVALID_ENUMERATION);
        }
        for k in DriverKind::ALL {
            if accepts_init(k, flags) {
                VISIBLE.fetch_or(bit(k), Ordering::AcqRel);
            }
        }
        Ok(())
    }
    fn zeDriverGet(count: *mut u32, drivers: *mut ze_driver_handle_t) {
        // SAFETY: caller's pointers.
        unsafe { list_drivers(count, drivers, &visible()) }
    }
    fn zeInitDrivers(count: *mut u32, drivers: *mut ze_driver_handle_t, desc: *mut ze_init_driver_type_desc_t) {
        crate::profile::check().map_err(|_| ZE_RESULT_ERROR_UNINITIALIZED)?;
        // SAFETY: the caller's descriptor (pNext entries are ignored: e.g. the NPU plugin's 0x2004a).
        let d = unsafe { input(desc as *const ze_init_driver_type_desc_t) }?;
        let flags = d.flags as u32;
        let kinds: Vec<_> = DriverKind::ALL.into_iter().filter(|k| accepts_type(*k, flags)).collect();
        // SAFETY: caller's pointers.
        unsafe { list_drivers(count, drivers, &kinds) }
    }
    fn zeDriverGetApiVersion(h: ze_driver_handle_t, version: *mut ze_api_version_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        unsafe {
            let d = driver_from(h)?;
            *out(version)? = match d.driver() {
                DriverKind::Gpu => API_VERSION,
                DriverKind::Npu => NPU_API_VERSION,
            } as ze_api_version_t;
        }
        Ok(())
    }
    fn zeDriverGetProperties(h: ze_driver_handle_t, props: *mut ze_driver_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (d, p) = unsafe { (driver_from(h)?, out(props)?) };
        let (uuid, ver) = match d.driver() {
            DriverKind::Gpu => (GPU_DRIVER_UUID, gpu_driver_version()),
            DriverKind::Npu => (NPU_DRIVER_UUID, NPU_DRIVER_VERSION),
        };
        p.uuid.id = uuid;
        p.driverVersion = ver;
        Ok(())
    }
    fn zeDriverGetIpcProperties(h: ze_driver_handle_t, props: *mut ze_driver_ipc_properties_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let (d, p) = unsafe { (driver_from(h)?, out(props)?) };
        // compute-runtime `DriverHandle::getIPCProperties`: memory and event pools (modelled on
        // Linux only); the NPU driver reports none.
        p.flags = match d.driver() {
            DriverKind::Gpu if cfg!(unix) => ZE_IPC_PROPERTY_FLAG_MEMORY | ZE_IPC_PROPERTY_FLAG_EVENT_POOL,
            _ => 0,
        };
        Ok(())
    }
    fn zeDriverGetExtensionProperties(h: ze_driver_handle_t, count: *mut u32, props: *mut ze_driver_extension_properties_t) {
        // SAFETY: handle validated.
        let d = unsafe { driver_from(h) }?;
        let gpu;
        let list: &[(&str, u32)] = match d.driver() {
            DriverKind::Gpu => {
                gpu = gpu_extensions();
                &gpu
            }
            DriverKind::Npu => crate::npu::extension_properties(),
        };
        // SAFETY: caller's enumeration pointers.
        unsafe {
            enumerate(count, props, list.len(), |i, p| {
                set_cstr(&mut p.name, list[i].0);
                p.version = list[i].1;
            })
        }
    }
    fn zeDriverGetExtensionFunctionAddress(h: ze_driver_handle_t, name: *const c_char, pp: *mut *mut c_void) {
        // SAFETY: handle validated; NUL-terminated name and out-parameter from the caller.
        let (d, pp) = unsafe { (driver_from(h)?, out(pp)?) };
        *pp = std::ptr::null_mut();
        if name.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: as above.
        let name = unsafe { CStr::from_ptr(name) };
        let f = match d.driver() {
            DriverKind::Gpu => gpu_extension_function(name),
            DriverKind::Npu => crate::npu::extension_function_address(name),
        };
        match f {
            Some(f) => {
                *pp = f;
                Ok(())
            }
            None => Err(ZE_RESULT_ERROR_INVALID_ARGUMENT),
        }
    }
    fn zeDriverGetLastErrorDescription(h: ze_driver_handle_t, pp: *mut *const c_char) {
        // SAFETY: handle validated; out-parameter from the caller.
        let pp = unsafe { driver_from(h)?; out(pp)? };
        *pp = c"".as_ptr();
        Ok(())
    }
}

/// The GPU driver's extensions: compute-runtime's list (`level_zero/core/source/driver/
/// driver_handle_helper.cpp` `DriverHandle::extensionsSupported`, then the per-device ones of
/// `driver_handle.cpp` `getExtensionProperties`), in its order, limited to the extensions whose
/// entry points and structures this platform implements. The others compute-runtime reports are
/// withheld, because what backs them (modules and kernels, images, ray tracing, metrics, IPC,
/// external semaphores, graphs, cache reservation, the `zex*` entry points) answers
/// `UNSUPPORTED_FEATURE` here (see the crate README); advertising them would send DPC++ down paths
/// that then fail. The same on every laptop generation: none of the backed ones differs between
/// Xe-LPG, Xe2 and Xe3 (the generation-dependent ones, bfloat16 conversions and bindless images,
/// need modules and images). `ZE_experimental_immediate_command_list_append` only from build 32224.
pub fn gpu_extensions() -> Vec<(&'static str, u32)> {
    let v1_0 = make_version(1, 0);
    let build = crate::profile::current().gpu_driver_build;
    let mut v = vec![
        // Standard core extensions.
        ("ZE_extension_device_ip_version", v1_0), // ze_device_ip_version_ext_t
        ("ZE_extension_eu_count", v1_0),          // ze_eu_count_ext_t
        ("ZE_extension_external_memmap_sysmem", v1_0), // host allocation over the caller's pages
        ("ZE_extension_float_atomics", v1_0),     // ze_float_atomic_ext_properties_t
        ("ZE_extension_memory_free_policies", v1_0), // zeMemFreeExt
        ("ZE_extension_pci_properties", v1_0),    // zeDevicePciGetPropertiesExt
        // Experimental extensions.
        ("ZE_experimental_event_pool_counter_based", v1_0), // ze_event_pool_counter_based_exp_desc_t
    ];
    if build >= crate::profile::GPU_IMMEDIATE_APPEND_ADVERTISED_FROM_BUILD {
        v.push(("ZE_experimental_immediate_command_list_append", v1_0)); // zeCommandListImmediateAppendCommandListsExp
    }
    v.push(("ZE_experimental_relaxed_allocation_limits", v1_0)); // ze_relaxed_allocation_limits_exp_desc_t
                                                                 // Intel experimental: the copy-offload hint a queue descriptor may chain (copies may run on a
                                                                 // copy engine; here every engine copies alike).
    v.push(("ZEX_intel_experimental_queue_copy_operations_offload_hint", v1_0));
    v
}

/// What the GPU's `zeDriverGetExtensionFunctionAddress` answers: compute-runtime's table
/// (`extension_function_address.cpp` `ExtensionFunctionAddressHelper::getExtensionFunctionAddress`)
/// for the names this platform implements (the queue and list getters, priorities included), which
/// the table has only from build 26.18.38308 ([`GPU_QUEUE_GETTERS_FROM_BUILD`](crate::profile::GPU_QUEUE_GETTERS_FROM_BUILD)). Every other name there
/// belongs to a withheld extension (see [`gpu_extensions`]) and is `INVALID_ARGUMENT` with NULL, as
/// compute-runtime answers an unknown name.
fn gpu_extension_function(name: &CStr) -> Option<*mut c_void> {
    use crate::api::cmd::*;
    if crate::profile::current().gpu_driver_build < crate::profile::GPU_QUEUE_GETTERS_FROM_BUILD {
        return None;
    }
    let f: *mut c_void = match name.to_bytes() {
        b"zeCommandQueueGetOrdinal" => zeCommandQueueGetOrdinal as *mut c_void,
        b"zeCommandQueueGetIndex" => zeCommandQueueGetIndex as *mut c_void,
        b"zeCommandQueueGetPriority" => zeCommandQueueGetPriority as *mut c_void,
        b"zeCommandListGetDeviceHandle" => zeCommandListGetDeviceHandle as *mut c_void,
        b"zeCommandListGetContextHandle" => zeCommandListGetContextHandle as *mut c_void,
        b"zeCommandListGetOrdinal" => zeCommandListGetOrdinal as *mut c_void,
        b"zeCommandListIsImmediate" => zeCommandListIsImmediate as *mut c_void,
        b"zeCommandListImmediateGetPriority" => zeCommandListImmediateGetPriority as *mut c_void,
        _ => return None,
    };
    Some(f)
}

/// The GPU driver's default context (its address), made once.
///
/// compute-runtime creates one context per driver over every device it exposes when the driver
/// initialises (`level_zero/core/source/driver/driver_handle.cpp` `DriverHandle::initialize`:
/// `createContext(&DefaultDescriptors::contextDesc, .. devicesToExpose .., &defaultContext)`), and
/// `zeDriverGetDefaultContext` returns that handle (`api/core/ze_driver_api_entrypoints.cpp`,
/// `DriverHandle::getDefaultContext`; exported since 25.22.33944, in the driver's DDI table,
/// `ze_core_loader.cpp` `pfnGetDefaultContext`, since 25.44.36015). Made on first use here, which
/// no caller can tell apart: no handle of this driver exists before `zeInit`/`zeInitDrivers`.
/// It is an ordinary context: `zeContextDestroy` on it destroys it as any other (`context.cpp`
/// `Context::destroy` is `delete this`, with no check for the default context), and the driver
/// keeps answering the same, now dead, handle (its `defaultContext` member is not cleared), which
/// this platform reports as `INVALID_ARGUMENT` wherever it is used.
fn gpu_default_context() -> ze_context_handle_t {
    static DEFAULT: OnceLock<usize> = OnceLock::new();
    *DEFAULT.get_or_init(|| {
        let all = vec![device(DriverKind::Gpu).handle::<c_void>() as usize];
        objects::create::<Context, c_void>(DriverKind::Gpu, Context { devices: all }) as usize
    }) as ze_context_handle_t
}

ze_api_ptr! {
    /// GPU: the driver's default context (see [`gpu_default_context`]). NPU: NULL. linux-npu-driver
    /// 1.32.1 has no `zeDriverGetDefaultContext`: its driver table (`api/ze_driver.cpp`
    /// `zeGetDriverProcAddrTable`) fills no `pfnGetDefaultContext`, for which the loader answers NULL.
    /// An invalid driver handle: NULL (the function reports no error code).
    fn zeDriverGetDefaultContext(h: ze_driver_handle_t) -> ze_context_handle_t {
        // SAFETY: the handle is validated before use.
        match unsafe { driver_from(h) }.map(|d| d.driver()) {
            Ok(DriverKind::Gpu) => gpu_default_context(),
            _ => std::ptr::null_mut(),
        }
    }
}
