//! Level Zero drivers: discovery and properties.

use std::ffi::CStr;
use std::fmt;

use super::{api, check, require, sys, L0Device};
use crate::error::Result;

/// The `uuid` Intel's NPU driver reports in `ze_driver_properties_t` (`ze_intel_npu_driver_uuid`
/// from intel/level-zero-npu-extensions); OpenVINO's NPU plugin only accepts a driver with it.
pub const INTEL_NPU_DRIVER_UUID: [u8; 16] = sys::npu::ZE_INTEL_NPU_DRIVER_UUID;

/// A Level Zero driver (`ze_driver_handle_t`).
///
/// Driver handles are valid for the life of the process (Level Zero never destroys them), so this
/// is a `Copy` value and needs no `Drop`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Driver {
    handle: sys::ze_driver_handle_t,
}

// SAFETY: a driver handle is an immutable identifier of a process-lifetime object; Level Zero's
// driver APIs are free-threaded (spec: "all APIs are thread-safe" except command lists).
unsafe impl Send for Driver {}
// SAFETY: as above, shared references only pass the handle value to thread-safe calls.
unsafe impl Sync for Driver {}

/// `ze_driver_properties_t`, plus the API version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverProperties {
    /// The driver's uuid (Intel's NPU driver: [`INTEL_NPU_DRIVER_UUID`]).
    pub uuid: [u8; 16],
    /// The vendor-specific driver version.
    pub driver_version: u32,
}

/// A Level Zero API version (`ze_api_version_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// One entry of `zeDriverGetExtensionProperties`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Extension {
    /// The extension's name, e.g. `"ZE_experimental_mutable_command_list"`.
    pub name: String,
    /// Its version (`ZE_MAKE_VERSION(major, minor)`).
    pub version: u32,
}

/// Who owns the dma-buf fds of a driver's exports and imports: it differs between Intel's drivers
/// (and compute-runtime releases), so the crate asks [`Driver::fd_rules`] instead of assuming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdRules {
    /// The export query returns the driver's own fd (the same number every time, closed by
    /// `zeMemFree`): compute-runtime (`DrmAllocation::peekInternalHandle`). Otherwise every query
    /// returns a new fd the caller owns: linux-npu-driver (`VPUBufferObject::exportToFd`).
    pub export_fd_owned_by_driver: bool,
    /// A successful import closes the fd it was given: compute-runtime from build 37833
    /// (26.14.37833.4, `L0Context::allocDeviceMem` / `allocHostMem` → `closeExternalHandle`). The NPU
    /// driver never closes it.
    pub import_closes_fd: bool,
}

/// The first compute-runtime build whose dma-buf imports close the caller's fd.
pub const COMPUTE_RUNTIME_IMPORT_CLOSES_FD_BUILD: u32 = 37833;

impl Driver {
    /// The fd rules of this driver: the NPU driver (by its uuid) owns nothing the caller gets;
    /// any other (Intel's GPU driver, compute-runtime) owns its export fds and, from build 37833 (the
    /// low 16 bits of `driverVersion`), closes imported fds.
    pub fn fd_rules(&self) -> Result<FdRules> {
        let p = self.properties()?;
        if p.uuid == INTEL_NPU_DRIVER_UUID {
            return Ok(FdRules { export_fd_owned_by_driver: false, import_closes_fd: false });
        }
        Ok(FdRules {
            export_fd_owned_by_driver: true,
            import_closes_fd: p.driver_version & 0xffff >= COMPUTE_RUNTIME_IMPORT_CLOSES_FD_BUILD,
        })
    }

    /// Every GPU and NPU driver: `zeInitDrivers(GPU|NPU)` when the loader has it (≥ 1.18), otherwise
    /// `zeInit(0)` and `zeDriverGet`. Calling this again is cheap and returns the same handles.
    ///
    /// No driver at all is an empty list, not an error.
    pub fn all() -> Result<Vec<Driver>> {
        let api = api()?;
        if api.zeInitDrivers.is_ok() {
            let mut desc = sys::ze_init_driver_type_desc_t {
                stype: sys::ZE_STRUCTURE_TYPE_INIT_DRIVER_TYPE_DESC,
                pNext: std::ptr::null(),
                flags: sys::ZE_INIT_DRIVER_TYPE_FLAG_GPU | sys::ZE_INIT_DRIVER_TYPE_FLAG_NPU,
            };
            let mut count = 0u32;
            // SAFETY: count query: a valid count pointer, a null handle array, a valid desc.
            let r = unsafe { api.zeInitDrivers(&mut count, std::ptr::null_mut(), &mut desc) };
            if r == sys::ZE_RESULT_ERROR_UNINITIALIZED {
                return Ok(Vec::new()); // no driver of these types
            }
            check(r, "zeInitDrivers")?;
            let mut handles = vec![std::ptr::null_mut(); count as usize];
            // SAFETY: `handles` has room for `count` handles.
            let r = unsafe { api.zeInitDrivers(&mut count, handles.as_mut_ptr(), &mut desc) };
            check(r, "zeInitDrivers")?;
            handles.truncate(count as usize);
            return Ok(handles.into_iter().map(|handle| Driver { handle }).collect());
        }
        require!(api, zeInit);
        // SAFETY: zeInit takes plain flags; 0 = every driver type.
        let r = unsafe { api.zeInit(0) };
        if r == sys::ZE_RESULT_ERROR_UNINITIALIZED {
            return Ok(Vec::new());
        }
        check(r, "zeInit")?;
        let mut count = 0u32;
        // SAFETY: count query with a null handle array.
        check(unsafe { api.zeDriverGet(&mut count, std::ptr::null_mut()) }, "zeDriverGet")?;
        let mut handles = vec![std::ptr::null_mut(); count as usize];
        // SAFETY: `handles` has room for `count` handles.
        check(unsafe { api.zeDriverGet(&mut count, handles.as_mut_ptr()) }, "zeDriverGet")?;
        handles.truncate(count as usize);
        Ok(handles.into_iter().map(|handle| Driver { handle }).collect())
    }

    /// Wraps a raw driver handle.
    ///
    /// # Safety
    /// `handle` is a driver handle returned by `zeDriverGet`/`zeInitDrivers` of the loader this
    /// process uses (driver handles never become invalid).
    pub(crate) unsafe fn from_raw(handle: sys::ze_driver_handle_t) -> Driver {
        Driver { handle }
    }

    /// The raw handle (still valid: drivers are never destroyed).
    pub(crate) fn as_raw(&self) -> sys::ze_driver_handle_t {
        self.handle
    }

    /// `zeDriverGetProperties`.
    pub fn properties(&self) -> Result<DriverProperties> {
        let api = api()?;
        let mut p =
            sys::ze_driver_properties_t { stype: sys::ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES, ..Default::default() };
        // SAFETY: a valid driver handle and a properly initialised output struct.
        check(unsafe { api.zeDriverGetProperties(self.handle, &mut p) }, "zeDriverGetProperties")?;
        Ok(DriverProperties { uuid: p.uuid.id, driver_version: p.driverVersion })
    }

    /// `zeDriverGetApiVersion`.
    pub fn api_version(&self) -> Result<ApiVersion> {
        let api = api()?;
        let mut v: sys::ze_api_version_t = 0;
        // SAFETY: a valid driver handle and output pointer.
        check(unsafe { api.zeDriverGetApiVersion(self.handle, &mut v) }, "zeDriverGetApiVersion")?;
        Ok(ApiVersion { major: sys::ze_major_version(v), minor: sys::ze_minor_version(v) })
    }

    /// `zeDriverGetExtensionProperties`: every extension the driver advertises.
    pub fn extensions(&self) -> Result<Vec<Extension>> {
        let api = api()?;
        let mut count = 0u32;
        // SAFETY: count query with a null array.
        let r = unsafe { api.zeDriverGetExtensionProperties(self.handle, &mut count, std::ptr::null_mut()) };
        check(r, "zeDriverGetExtensionProperties")?;
        // SAFETY: ze_driver_extension_properties_t is plain data (a char array and an integer).
        let mut list: Vec<sys::ze_driver_extension_properties_t> = vec![unsafe { std::mem::zeroed() }; count as usize];
        // SAFETY: `list` has room for `count` entries.
        let r = unsafe { api.zeDriverGetExtensionProperties(self.handle, &mut count, list.as_mut_ptr()) };
        check(r, "zeDriverGetExtensionProperties")?;
        list.truncate(count as usize);
        Ok(list.iter().map(|e| Extension { name: c_chars_to_string(&e.name), version: e.version }).collect())
    }

    /// Whether the driver advertises the extension `name`.
    pub fn has_extension(&self, name: &str) -> Result<bool> {
        Ok(self.extensions()?.iter().any(|e| e.name == name))
    }

    /// `zeDeviceGet`: the driver's devices.
    pub fn devices(&self) -> Result<Vec<L0Device>> {
        let api = api()?;
        let mut count = 0u32;
        // SAFETY: count query with a null array.
        check(unsafe { api.zeDeviceGet(self.handle, &mut count, std::ptr::null_mut()) }, "zeDeviceGet")?;
        let mut handles = vec![std::ptr::null_mut(); count as usize];
        // SAFETY: `handles` has room for `count` handles.
        check(unsafe { api.zeDeviceGet(self.handle, &mut count, handles.as_mut_ptr()) }, "zeDeviceGet")?;
        handles.truncate(count as usize);
        // SAFETY: the handles were just returned by zeDeviceGet for this driver.
        Ok(handles.into_iter().map(|h| unsafe { L0Device::from_raw(h, *self) }).collect())
    }
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Driver").field(&self.handle).finish()
    }
}

/// A NUL-terminated (or full) C char array as a String.
pub(crate) fn c_chars_to_string(chars: &[std::ffi::c_char]) -> String {
    // SAFETY: c_char and u8 have the same size and alignment; the slice stays in bounds.
    let bytes = unsafe { std::slice::from_raw_parts(chars.as_ptr().cast::<u8>(), chars.len()) };
    match CStr::from_bytes_until_nul(bytes) {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}
