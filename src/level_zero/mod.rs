//! A safe layer over Level Zero (`level-zero-sys`, loaded at run time).
//!
//! | type | is | lifetime |
//! |------|----|----------|
//! | [`Driver`] | a `ze_driver_handle_t` | drivers live as long as the process: `Copy` |
//! | [`L0Device`] | a `ze_device_handle_t` plus its [`Driver`] | as long as the process: `Copy` |
//! | [`L0Context`] | a `ze_context_handle_t`, **owned** (created here, destroyed once in `Drop`) or **borrowed** (wrapped from a raw handle, never destroyed here) | shared through `Arc<L0Context>` |
//! | [`L0Allocation`] | memory from `zeMemAlloc{Host,Device,Shared}` or an import, freed once in `Drop` | holds an `Arc<L0Context>`, so the context outlives it |
//!
//! Ownership of foreign handles follows wgpu-hal's `keep` vs `transfer`: [`L0Context::create`] and
//! a raw handle wrapped as [`Foreign::Owned`](crate::ownership::Foreign::Owned) destroy the context
//! in `Drop`; one wrapped as [`Foreign::Borrowed`](crate::ownership::Foreign::Borrowed) never does
//! (it keeps its owner, such as the OpenVINO object that owns the handle, alive as long as it lives).
//! Raw handles go in and out through `raw::level_zero` (a floor above this one).
//!
//! Every failing call is an [`ErrorKind::LevelZero`](crate::ErrorKind::LevelZero) carrying the
//! `ze_result_t` and the name of the call. A failure inside `Drop` (`zeMemFree` of an
//! [`L0Allocation`]) is recorded on its [`L0Context`] and returned by the context's next allocation
//! call ([`L0Context::take_deferred_errors`] collects them).
//!
//! ```no_run
//! use std::sync::Arc;
//! use npu_sycl_bridge::level_zero::{L0Context, DeviceType, Driver};
//!
//! # fn main() -> npu_sycl_bridge::Result<()> {
//! for driver in Driver::all()? {
//!     let props = driver.properties()?;
//!     for device in driver.devices()? {
//!         let p = device.properties()?;
//!         println!("{:?} {} {:x?}", p.device_type, p.name, props.uuid);
//!         if p.device_type == DeviceType::Gpu {
//!             let ctx = Arc::new(L0Context::create(driver)?);
//!             let mem = ctx.alloc_device_exportable(device, 1 << 20, 4096)?;
//!             let fd = mem.export_dma_buf()?; // an OwnedFd: ours to close
//!             # drop(fd);
//!         }
//!     }
//! }
//! # Ok(()) }
//! ```

mod context;
mod device;
mod driver;
mod external;
mod memory;

pub use self::context::L0Context;
pub use self::device::{DeviceProperties, DeviceType, ExternalMemoryProperties, L0Device, QueueGroup};
pub use self::driver::{ApiVersion, Driver, DriverProperties, Extension, INTEL_NPU_DRIVER_UUID};
#[cfg(unix)]
pub use self::external::dup_fd;
pub use self::external::ExternalMemoryTypes;
pub use self::memory::{AllocationInfo, HostMemFlags, L0Allocation, MemoryType};

pub(crate) use level_zero_sys as sys;

use crate::error::{Error, Result};

/// The loader's entry points, as a crate [`Error`] of kind
/// [`Library`](crate::ErrorKind::Library) when `libze_loader.so.1` cannot be opened.
pub(crate) fn api() -> Result<&'static sys::ZeApi> {
    sys::loader::api().map_err(|e| {
        Error::library(format!(
            "{e}. Install a Level Zero loader (libze_loader.so.1 ≥ 1.18.5), or call \
             testkit::virtual_platform::activate() (crate npu-sycl-bridge-testkit) first in tests"
        ))
    })
}

/// Turns a `ze_result_t` into a `Result`: anything but `ZE_RESULT_SUCCESS` is an
/// [`ErrorKind::LevelZero`](crate::ErrorKind::LevelZero) naming `call`.
pub(crate) fn check(result: sys::ze_result_t, call: &'static str) -> Result<()> {
    if result == sys::ZE_RESULT_SUCCESS {
        Ok(())
    } else {
        Err(Error::level_zero(result, call, result_name(result)))
    }
}

/// Errors out with a LevelZero error (ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) when the loader does not
/// export `call`, instead of letting the generated wrapper panic.
macro_rules! require {
    ($api:expr, $name:ident) => {
        if $api.$name.is_err() {
            return Err($crate::error::Error::level_zero(
                $crate::level_zero::sys::ZE_RESULT_ERROR_UNSUPPORTED_FEATURE,
                stringify!($name),
                "the Level Zero loader does not export this function (it is too old)",
            ));
        }
    };
}
pub(crate) use require;

/// The symbolic name of a `ze_result_t`, for messages.
pub fn result_name(result: sys::ze_result_t) -> &'static str {
    match result {
        sys::ZE_RESULT_SUCCESS => "ZE_RESULT_SUCCESS",
        sys::ZE_RESULT_NOT_READY => "ZE_RESULT_NOT_READY",
        sys::ZE_RESULT_ERROR_DEVICE_LOST => "ZE_RESULT_ERROR_DEVICE_LOST",
        sys::ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY => "ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY",
        sys::ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY => "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY",
        sys::ZE_RESULT_ERROR_UNINITIALIZED => "ZE_RESULT_ERROR_UNINITIALIZED",
        sys::ZE_RESULT_ERROR_UNSUPPORTED_VERSION => "ZE_RESULT_ERROR_UNSUPPORTED_VERSION",
        sys::ZE_RESULT_ERROR_UNSUPPORTED_FEATURE => "ZE_RESULT_ERROR_UNSUPPORTED_FEATURE",
        sys::ZE_RESULT_ERROR_INVALID_ARGUMENT => "ZE_RESULT_ERROR_INVALID_ARGUMENT",
        sys::ZE_RESULT_ERROR_INVALID_NULL_HANDLE => "ZE_RESULT_ERROR_INVALID_NULL_HANDLE",
        sys::ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE => "ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE",
        sys::ZE_RESULT_ERROR_INVALID_NULL_POINTER => "ZE_RESULT_ERROR_INVALID_NULL_POINTER",
        sys::ZE_RESULT_ERROR_INVALID_SIZE => "ZE_RESULT_ERROR_INVALID_SIZE",
        sys::ZE_RESULT_ERROR_UNSUPPORTED_SIZE => "ZE_RESULT_ERROR_UNSUPPORTED_SIZE",
        sys::ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT => "ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT",
        sys::ZE_RESULT_ERROR_INVALID_ENUMERATION => "ZE_RESULT_ERROR_INVALID_ENUMERATION",
        sys::ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION => "ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION",
        sys::ZE_RESULT_ERROR_UNKNOWN => "ZE_RESULT_ERROR_UNKNOWN",
        _ => "",
    }
}
