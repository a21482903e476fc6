//! SYCL platforms and devices as plain data (`Clone`, `Send`, `Sync`).
//!
//! A [`SyclDevice`] names a root device by its position (`platform_index`, `index`) in
//! `sycl::platform::get_platforms()` / `get_devices()`, which is fixed for the life of the process;
//! the shim resolves it to a `sycl::device` when a context or allocation needs one.

use super::ffi::bridge;
use super::{sycl_error, Result};
use level_zero_sys::{ze_device_handle_t, ze_driver_handle_t};

/// The SYCL backend of a platform or device.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Backend {
    /// `backend::ext_oneapi_level_zero`.
    LevelZero,
    /// `backend::opencl`.
    OpenCl,
    /// `backend::ext_oneapi_cuda`.
    Cuda,
    /// `backend::ext_oneapi_hip`.
    Hip,
    /// `backend::ext_oneapi_native_cpu`.
    NativeCpu,
    /// `backend::ext_oneapi_offload`.
    Offload,
    /// Anything else, by the shim's name for it.
    Other(String),
}

impl Backend {
    fn from_name(name: &str) -> Self {
        match name {
            "level_zero" => Backend::LevelZero,
            "opencl" => Backend::OpenCl,
            "cuda" => Backend::Cuda,
            "hip" => Backend::Hip,
            "native_cpu" => Backend::NativeCpu,
            "offload" => Backend::Offload,
            other => Backend::Other(other.to_string()),
        }
    }
}

/// `sycl::info::device_type` of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeviceType {
    /// `cpu`.
    Cpu,
    /// `gpu`.
    Gpu,
    /// `accelerator`.
    Accelerator,
    /// `custom`.
    Custom,
    /// Anything else.
    Unknown,
}

impl From<bridge::DeviceType> for DeviceType {
    fn from(t: bridge::DeviceType) -> Self {
        match t {
            bridge::DeviceType::Cpu => DeviceType::Cpu,
            bridge::DeviceType::Gpu => DeviceType::Gpu,
            bridge::DeviceType::Accelerator => DeviceType::Accelerator,
            bridge::DeviceType::Custom => DeviceType::Custom,
            _ => DeviceType::Unknown,
        }
    }
}

/// One SYCL platform.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Platform {
    /// Position in `sycl::platform::get_platforms()`.
    pub index: usize,
    /// The backend.
    pub backend: Backend,
    /// `info::platform::name`.
    pub name: String,
    /// `info::platform::vendor`.
    pub vendor: String,
    /// `info::platform::version`.
    pub version: String,
    /// Number of root devices.
    pub device_count: usize,
    native_driver: usize,
}

impl Platform {
    fn from_record(r: bridge::PlatformRecord) -> Self {
        Platform {
            index: r.index,
            backend: Backend::from_name(&r.backend),
            name: r.name,
            vendor: r.vendor,
            version: r.version,
            device_count: r.device_count,
            native_driver: if r.is_level_zero { r.native_driver } else { 0 },
        }
    }

    /// `get_native<backend::ext_oneapi_level_zero>(platform)`: the Level Zero driver behind a Level
    /// Zero platform, `None` for other backends. The handle stays owned by the runtime.
    pub fn native_driver(&self) -> Option<ze_driver_handle_t> {
        (self.native_driver != 0).then_some(self.native_driver as ze_driver_handle_t)
    }

    /// The root devices of this platform.
    pub fn devices(&self) -> Result<Vec<SyclDevice>> {
        Ok(devices()?.into_iter().filter(|d| d.platform_index == self.index).collect())
    }

    /// The Level Zero platform whose native driver is `ze_driver`. `Ok(None)` when no SYCL platform
    /// wraps that driver (for example the NPU's driver, which SYCL never lists).
    pub fn find_by_native_driver(ze_driver: ze_driver_handle_t) -> Result<Option<Platform>> {
        let r = bridge::find_platform_by_native_driver(ze_driver as usize)
            .map_err(sycl_error("find_platform_by_native_driver"))?;
        Ok(r.found.then(|| Platform::from_record(r.platform)))
    }
}

/// One root device of a SYCL platform.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyclDevice {
    /// Position of the device's platform in `get_platforms()`.
    pub platform_index: usize,
    /// Position in the platform's `get_devices()`.
    pub index: usize,
    /// The backend.
    pub backend: Backend,
    /// `info::device::device_type`.
    pub device_type: DeviceType,
    /// `info::device::name`.
    pub name: String,
    /// `info::device::vendor`.
    pub vendor: String,
    /// `info::device::vendor_id` (0x8086 for Intel).
    pub vendor_id: u32,
    /// `aspect::usm_system_allocations`: the device reaches ordinary process memory (`malloc`,
    /// `mmap`) directly, as shared-system USM. Level Zero GPUs report it through their shared-system
    /// allocation capabilities: on Intel laptops only Xe2 and later with a kernel that mirrors CPU
    /// page tables, and not by default.
    pub usm_system_allocations: bool,
    native_device: usize,
    native_driver: usize,
}

impl SyclDevice {
    pub(crate) fn from_record(r: bridge::DeviceRecord) -> Self {
        SyclDevice {
            platform_index: r.platform_index,
            index: r.device_index,
            backend: Backend::from_name(&r.backend),
            device_type: r.device_type.into(),
            name: r.name,
            vendor: r.vendor,
            vendor_id: r.vendor_id,
            usm_system_allocations: r.usm_system_allocations,
            native_device: if r.is_level_zero { r.native_device } else { 0 },
            native_driver: if r.is_level_zero { r.native_driver } else { 0 },
        }
    }

    pub(crate) fn location(&self) -> bridge::DeviceLocation {
        bridge::DeviceLocation { platform_index: self.platform_index, device_index: self.index }
    }

    /// Whether `self` and `other` are the same SYCL device.
    pub(crate) fn same_as(&self, other: &SyclDevice) -> bool {
        self.platform_index == other.platform_index && self.index == other.index
    }

    /// `get_native<backend::ext_oneapi_level_zero>(device)`, `None` for other backends. The handle
    /// stays owned by the runtime.
    pub fn native_device(&self) -> Option<ze_device_handle_t> {
        (self.native_device != 0).then_some(self.native_device as ze_device_handle_t)
    }

    /// The Level Zero driver of the device's platform, `None` for other backends.
    pub fn native_driver(&self) -> Option<ze_driver_handle_t> {
        (self.native_driver != 0).then_some(self.native_driver as ze_driver_handle_t)
    }

    /// Whether this is a Level Zero device.
    pub fn is_level_zero(&self) -> bool {
        self.backend == Backend::LevelZero
    }

    /// The SYCL device whose native Level Zero device is `ze_device`. `Ok(None)` is the normal answer
    /// for a device SYCL does not list (an NPU, or a device of a driver SYCL skipped).
    pub fn find_by_native(ze_device: ze_device_handle_t) -> Result<Option<SyclDevice>> {
        let r = bridge::find_device_by_native(ze_device as usize).map_err(sycl_error("find_device_by_native"))?;
        Ok(r.found.then(|| SyclDevice::from_record(r.device)))
    }

    /// Opens the `sycl::device` behind this description.
    pub(crate) fn open(&self) -> Result<cxx::UniquePtr<bridge::SyclDevice>> {
        bridge::device_at(self.location()).map_err(sycl_error("device_at"))
    }
}

/// All SYCL platforms, in `sycl::platform::get_platforms()` order. An empty list is a normal answer
/// (no usable Level Zero loader or no GPU driver).
pub fn platforms() -> Result<Vec<Platform>> {
    let list = bridge::list_platforms().map_err(sycl_error("get_platforms"))?;
    Ok(list.into_iter().map(Platform::from_record).collect())
}

/// All root devices of all platforms.
pub fn devices() -> Result<Vec<SyclDevice>> {
    let list = bridge::list_devices().map_err(sycl_error("get_devices"))?;
    Ok(list.into_iter().map(SyclDevice::from_record).collect())
}
