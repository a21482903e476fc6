//! Laptop profiles: which real laptop the virtual platform presents (`VL0_PROFILE`).
//!
//! Each profile is one Core Ultra generation as its drivers present it: the NPU of that laptop as
//! linux-npu-driver 1.32.1 reports it and the iGPU as compute-runtime reports it. Every value that
//! differs between generations lives here; the API modules read [`current`] and never test the
//! profile's name.
//!
//! | `VL0_PROFILE` | laptop | NPU | iGPU |
//! |---|---|---|---|
//! | `lnl` (default) | Lunar Lake | 0x643E, NPU 40xx | 0x64A0 Xe2-LPG, IP 20.4.4 |
//! | `mtl` | Meteor Lake (H) | 0x7D1D, NPU 37xx | 0x7D55 Xe-LPG, IP 12.71.4 |
//! | `arl` | Arrow Lake (H) | 0xAD1D, NPU 37xx | 0x7D51 Xe-LPG+, IP 12.74.4 |
//! | `ptl` | Panther Lake (H) | 0xB03E, NPU 50xx | 0xB080 Xe3-LPG, IP 30.0.4 |
//!
//! Knobs on top of a profile (each read once):
//! - `VL0_NPU_USERPTR=0`: a kernel without `DRM_IVPU_CAP_BO_CREATE_FROM_USERPTR` (an NPU 40xx+
//!   laptop on an older kernel): no system-memory (CPU_VA) import. NPU 37xx never has it
//!   (linux-npu-driver `umd/vpu_driver/source/device/vpu_device.cpp`: userptr disabled for 37XX).
//! - `VL0_GPU_SHARED_SYSTEM=1`: the iGPU reports shared-system USM (plain process memory the GPU
//!   reaches directly). compute-runtime reports it only on Xe2+ (Lunar, Panther Lake) with an xe
//!   kernel that mirrors CPU addresses and `EnableSharedSystemUsmSupport=1`
//!   (`shared/source/os_interface/linux/drm_neo.cpp` `adjustSharedSystemMemCapabilities`); 0 by
//!   default everywhere, never on Meteor/Arrow Lake.
//! - `VL0_GPU_DRIVER_BUILD=N`: the compute-runtime build the GPU driver reports (default: the
//!   profile's), which decides whether a dma-buf import closes the caller's fd (builds ≥ 37833).
//! - `VL0_GPU_IP_VERSION`: overrides the profile's GPU IP version.
//! - `VL0_NPU_HWS=0`: the kernel schedules NPU work in the OS (an older kernel, `sched_mode=0`, or
//!   firmware older than JSM API 3.24): no `DRM_IVPU_CAP_MANAGE_CMDQ`, so
//!   `ZE_extension_command_queue_npu` 1.0 instead of 1.1, on any generation.
//!
//! An unknown `VL0_PROFILE` (or a malformed knob) is an error at load: `zeInit`, `zeInitDrivers`
//! and `zeLoaderInit` fail with `ZE_RESULT_ERROR_UNINITIALIZED` and one line on stderr says why.
use std::sync::OnceLock;

/// The NPU generation (the `NPU_PLATFORM` the plugin derives from the device id).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NpuGeneration {
    /// NPU 37xx (Meteor Lake, Arrow Lake): platform 3720.
    Npu37xx,
    /// NPU 40xx (Lunar Lake): platform 4000.
    Npu40xx,
    /// NPU 50xx (Panther Lake): platform 5010.
    Npu50xx,
}

/// One laptop generation as its drivers present it.
#[derive(Clone, Debug)]
pub struct Profile {
    /// `lnl`, `mtl`, `arl` or `ptl`.
    pub name: &'static str,
    /// "Lunar Lake", …
    pub laptop: &'static str,
    /// NPU PCI device id.
    pub npu_device_id: u32,
    /// NPU generation.
    pub npu_generation: NpuGeneration,
    /// Whether the NPU driver can import system memory (userptr): NPU 40xx+ and a kernel with the
    /// userptr ioctl.
    pub npu_userptr: bool,
    /// `ZE_extension_command_queue_npu` minor version: 1.1 where every device has the kernel's
    /// `DRM_IVPU_CAP_MANAGE_CMDQ` (linux-npu-driver 1.32.1 `umd/level_zero_driver/source/driver_handle.cpp`
    /// `getSupportedCmdQueueExtVersion`), which the kernel reports only under hardware scheduling
    /// (`ivpu_drv.c` `ivpu_is_capable`). The scheduling mode is the kernel's and the firmware's, not
    /// the generation's: kernels with "accel/ivpu: Turn on HWS by default on all platforms" schedule
    /// in hardware on every NPU (37xx too) given firmware with JSM API ≥ 3.24; older kernels, the
    /// `sched_mode` module parameter or old firmware schedule in the OS. `VL0_NPU_HWS=0|1` (default 1,
    /// a current kernel on all four laptops).
    pub npu_command_queue_ext_minor: u32,
    /// iGPU PCI device id (compute-runtime `shared/source/dll/devices/devices_base.inl`).
    pub gpu_device_id: u32,
    /// iGPU `ze_device_ip_version_ext_t::ipVersion` (architecture << 22 | release << 14 | revision;
    /// compute-runtime `shared/source/helpers/hw_ip_version.h`): the B0 stepping of the H/V SKU.
    pub gpu_ip_version: u32,
    /// iGPU name as compute-runtime reports it.
    pub gpu_name: &'static str,
    /// Execution units and their layout (slices, subslices per slice, EUs per subslice, threads per EU,
    /// SIMD width) of the profile's typical SKU (the kernel reports the topology; SKU values).
    pub gpu_topology: [u32; 5],
    /// Xe2 and later: on-demand paging (`ZE_DEVICE_PROPERTY_FLAG_ONDEMANDPAGING`), 64-bit timestamps,
    /// no 4 GiB allocation cap (compute-runtime capability tables `hw_info_{mtl,arl,lnl,ptl}.cpp`).
    pub gpu_xe2_or_later: bool,
    /// Whether the iGPU reports shared-system USM capabilities.
    pub gpu_shared_system_usm: bool,
    /// compute-runtime build number (the low 16 bits of `driverVersion`).
    pub gpu_driver_build: u32,
    /// Whether compute-runtime exposes the render engine (RCS) as a queue group of its own.
    /// Xe-LPG (Meteor/Arrow Lake) does: `ftrRcsNode` stays set (`sku_info_base.h`) because its
    /// release helper (26.14: `release_helper_base.inl` `isRcsExposureDisabled`, used by
    /// release_helper_1271/1274) answers false; Xe2 and Xe3 answer true
    /// (`release_helper_common_xe2.inl`, `release_helper_common_xe3_and_later.inl`), so
    /// `RootDeviceEnvironment::setRcsExposure` clears `ftrRcsNode`. (The `release_helpers/caps/`
    /// headers that say the same exist only on master from 2026-08-18.)
    pub gpu_render_group: bool,
    /// `maxMemoryFillPatternSize` of the copy-only (blitter) group and the largest pattern a fill on
    /// it takes (compute-runtime `L0GfxCoreHelperHw::getMaxFillPatternSizeForCopyEngine`: 16 bytes in
    /// `l0_gfx_core_helper_tgllp_to_dg2.inl`, used by Xe-HPG/Xe-LPG; 1 byte in
    /// `l0_gfx_core_helper_pvc_to_xe3p.inl`, used by Xe2-HPG and Xe3).
    pub gpu_copy_fill_pattern_max: usize,
}

/// First compute-runtime build whose dma-buf import closes the caller's fd after a successful import
/// (compute-runtime `level_zero/core/source/context/context.cpp`, `allocDeviceMem`/`allocHostMem`:
/// `closeExternalHandle` after the import, first released in 26.14.37833.4).
pub const GPU_IMPORT_CLOSES_FD_FROM_BUILD: u32 = 37833;

/// First compute-runtime build with the queue and list getters (`zeCommandQueueGetPriority`,
/// `zeCommandListImmediateGetPriority` in its DDI table, and all eight queue/list getters answered by
/// `zeDriverGetExtensionFunctionAddress`): commit 509f37b275, first released in 26.18.38308.1
/// (`level_zero/core/source/driver/extension_function_address.cpp`; absent in 26.14.37833.4).
pub const GPU_QUEUE_GETTERS_FROM_BUILD: u32 = 38308;

/// First compute-runtime build that reports `OPAQUE_FD` beside `DMA_BUF` among its external-memory
/// import and export types (`level_zero/core/source/device/device_imp_drm/device_imp_drm.cpp`
/// `getExternalMemoryProperties`: DMA_BUF only in 26.14.37833.4 and 26.18.38308.x, both from
/// 26.22.38646.7 on).
pub const GPU_OPAQUE_FD_TYPES_FROM_BUILD: u32 = 38646;

/// First compute-runtime build that lists `ZE_experimental_immediate_command_list_append` among its
/// extensions (`driver_handle_helper.cpp` `extensionsSupported`, first released in 24.52.32224).
pub const GPU_IMMEDIATE_APPEND_ADVERTISED_FROM_BUILD: u32 = 32224;
/// First compute-runtime build with a working `zeCommandListImmediateAppendCommandListsExp`
/// (`ze_cmdlist_api_entrypoints.cpp`, 24.22.29735); before it the entry point answers
/// `UNSUPPORTED_FEATURE` here.
pub const GPU_IMMEDIATE_APPEND_FROM_BUILD: u32 = 29735;

impl Profile {
    /// Whether a GPU dma-buf import closes the caller's fd (as the profile's compute-runtime does).
    pub fn gpu_import_closes_fd(&self) -> bool {
        self.gpu_driver_build >= GPU_IMPORT_CLOSES_FD_FROM_BUILD
    }
}

fn base(name: &str) -> Option<Profile> {
    // The compute-runtime build each laptop gets by default: a current release (26.14+) everywhere;
    // VL0_GPU_DRIVER_BUILD gives an older one.
    const BUILD: u32 = 37833;
    Some(match name {
        "lnl" => Profile {
            name: "lnl",
            laptop: "Lunar Lake",
            npu_device_id: 0x643E,
            npu_generation: NpuGeneration::Npu40xx,
            npu_userptr: true,
            npu_command_queue_ext_minor: 1,
            gpu_device_id: 0x64A0,
            gpu_ip_version: (20 << 22) | (4 << 14) | 4,
            gpu_name: "Intel(R) Arc(TM) Graphics",
            gpu_topology: [1, 8, 8, 8, 16],
            gpu_xe2_or_later: true,
            gpu_shared_system_usm: false,
            gpu_driver_build: BUILD,
            gpu_render_group: false,
            gpu_copy_fill_pattern_max: 1,
        },
        "mtl" => Profile {
            name: "mtl",
            laptop: "Meteor Lake",
            npu_device_id: 0x7D1D,
            npu_generation: NpuGeneration::Npu37xx,
            npu_userptr: false,
            npu_command_queue_ext_minor: 1,
            gpu_device_id: 0x7D55,
            gpu_ip_version: (12 << 22) | (71 << 14) | 4,
            gpu_name: "Intel(R) Arc(TM) Graphics",
            gpu_topology: [1, 8, 16, 8, 8],
            gpu_xe2_or_later: false,
            gpu_shared_system_usm: false,
            gpu_driver_build: BUILD,
            gpu_render_group: true,
            gpu_copy_fill_pattern_max: 16,
        },
        // Arrow Lake-H: Meteor Lake's NPU 37xx under another id, an Xe-LPG+ iGPU.
        "arl" => Profile {
            name: "arl",
            laptop: "Arrow Lake",
            npu_device_id: 0xAD1D,
            gpu_device_id: 0x7D51,
            gpu_ip_version: (12 << 22) | (74 << 14) | 4,
            ..base("mtl")?
        },
        // Panther Lake-H: NPU 50xx, an Xe3-LPG iGPU; the kernel features of Lunar Lake.
        "ptl" => Profile {
            name: "ptl",
            laptop: "Panther Lake",
            npu_device_id: 0xB03E,
            npu_generation: NpuGeneration::Npu50xx,
            gpu_device_id: 0xB080,
            gpu_ip_version: (30 << 22) | 4,
            gpu_name: "Intel(R) Arc(TM) B390 GPU",
            gpu_topology: [1, 12, 8, 10, 16],
            ..base("lnl")?
        },
        _ => return None,
    })
}

fn flag(var: &str) -> Result<Option<bool>, String> {
    match std::env::var(var) {
        Err(_) => Ok(None),
        Ok(v) => match v.trim() {
            "0" => Ok(Some(false)),
            "1" => Ok(Some(true)),
            other => Err(format!("{var}={other:?} is not 0 or 1")),
        },
    }
}

fn number(var: &str) -> Result<Option<u32>, String> {
    match std::env::var(var) {
        Err(_) => Ok(None),
        Ok(v) => {
            let s = v.trim();
            let n = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(h) => u32::from_str_radix(h, 16).ok(),
                None => s.parse().ok(),
            };
            n.map(Some).ok_or_else(|| format!("{var}={s:?} is not a number"))
        }
    }
}

/// The profile named by `VL0_PROFILE` with its knobs applied, or why it cannot be.
pub fn from_env() -> Result<Profile, String> {
    let name = std::env::var("VL0_PROFILE").unwrap_or_else(|_| "lnl".into());
    let mut p = base(name.trim()).ok_or_else(|| {
        format!("VL0_PROFILE={name:?} is not a laptop profile (lnl = Lunar Lake, mtl = Meteor Lake, arl = Arrow Lake, ptl = Panther Lake)")
    })?;
    if flag("VL0_NPU_USERPTR")? == Some(false) {
        p.npu_userptr = false;
    }
    if flag("VL0_NPU_USERPTR")? == Some(true) && p.npu_generation == NpuGeneration::Npu37xx {
        return Err(format!("VL0_NPU_USERPTR=1: the {} NPU (37xx) never imports user memory", p.laptop));
    }
    if let Some(s) = flag("VL0_GPU_SHARED_SYSTEM")? {
        if s && !p.gpu_xe2_or_later {
            return Err(format!(
                "VL0_GPU_SHARED_SYSTEM=1: the {} iGPU (Xe-LPG) never reports shared-system USM",
                p.laptop
            ));
        }
        p.gpu_shared_system_usm = s;
    }
    if let Some(b) = number("VL0_GPU_DRIVER_BUILD")? {
        if b > 0xffff {
            return Err(format!("VL0_GPU_DRIVER_BUILD={b} does not fit driverVersion's 16 build bits"));
        }
        p.gpu_driver_build = b;
    }
    if let Some(hws) = flag("VL0_NPU_HWS")? {
        p.npu_command_queue_ext_minor = u32::from(hws);
    }
    if let Some(v) = number("VL0_GPU_IP_VERSION")? {
        p.gpu_ip_version = v;
    }
    Ok(p)
}

fn loaded() -> &'static Result<Profile, String> {
    static P: OnceLock<Result<Profile, String>> = OnceLock::new();
    P.get_or_init(|| {
        let p = from_env();
        if let Err(e) = &p {
            eprintln!("virtual-l0: {e}; every zeInit/zeInitDrivers fails with ZE_RESULT_ERROR_UNINITIALIZED");
        }
        p
    })
}

/// The profile in force, or why there is none (an unknown `VL0_PROFILE`).
pub fn check() -> Result<&'static Profile, &'static str> {
    loaded().as_ref().map_err(|e| e.as_str())
}

/// The profile in force. Only the init entry points can fail on a bad profile; once they
/// succeeded every other call sees a valid one (before that, no handle exists to call with), so the
/// fallback here is never reached through the API.
pub fn current() -> &'static Profile {
    static FALLBACK: OnceLock<Profile> = OnceLock::new();
    check().unwrap_or_else(|_| FALLBACK.get_or_init(|| base("lnl").expect("lnl is a profile")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_is_consistent() {
        for n in ["lnl", "mtl", "arl", "ptl"] {
            let p = base(n).unwrap();
            assert_eq!(p.npu_userptr, p.npu_generation >= NpuGeneration::Npu40xx, "{n}");
            assert!(!p.gpu_shared_system_usm, "{n}: off by default on every laptop");
            assert_eq!(p.gpu_xe2_or_later, p.gpu_ip_version >= 0x0500_4000, "{n}");
            assert!(p.gpu_driver_build <= 0xffff);
            // Xe-LPG exposes its render engine and takes 16-byte blitter fills; Xe2+ neither.
            assert_eq!(p.gpu_render_group, !p.gpu_xe2_or_later, "{n}");
            assert_eq!(p.gpu_copy_fill_pattern_max, if p.gpu_xe2_or_later { 1 } else { 16 }, "{n}");
        }
        assert!(base("xyz").is_none());
    }
}
