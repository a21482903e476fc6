//! The card path: a SYCL context made from the NPU's own Level Zero context, `malloc_shared` in it,
//! and that memory given to the NPU as CPU_VA.
//!
//! **The card path** (the forum snippet): take the NPU plugin's Level Zero context
//! ([`NpuContext::level_zero_context`](crate::npu::NpuContext::level_zero_context)), find the SYCL platform of its driver, make a SYCL context
//! from it with `ownership::keep` (`make_context<backend::ext_oneapi_level_zero>`), `malloc_shared`
//! in it (page-aligned, size rounded up to 4096), and wrap that memory as an NPU CPU_VA tensor.
//!
//! # When it works on real hardware
//! **Never on stock DPC++.** DPC++ builds SYCL platforms only from Level Zero drivers that have a
//! GPU device; the NPU has its own driver with a VPU device, so no SYCL platform or device matches
//! the NPU's context, and a SYCL context of one driver with devices of another is invalid (UR
//! adapter v2 throws `UR_RESULT_ERROR_INVALID_ARGUMENT` in `make_context`; v1 accepts it, then
//! `malloc_shared` returns null and teardown crashes). [`CardPath::from_npu`] therefore returns
//! [`Unsupported { path: Path::CardPath }`](ErrorKind::Unsupported) with that explanation, and
//! names the strategies that work: `DmaBuf` and `CpuVa`.
//!
//! The rest of the path is real code: [`Strategy::card_path`](super::Strategy::card_path) takes **any** Level Zero context, and for
//! a context of a driver SYCL does list (e.g. the iGPU's own driver) it runs to the end — SYCL
//! context from the native handle, shared USM, NPU CPU_VA tensor over it. In that case the NPU
//! imports the page-aligned shared USM as system memory (like `CpuVa`); in the
//! hypothetical NPU-context case the memory would already be an allocation of the plugin's
//! context and the plugin would reuse it without importing.
//!
//! # What it costs
//! Making the SYCL context once (the runtime probes its USM pools); per tensor a `zeMemAllocShared`
//! and the NPU's one-time import (page pinning and IOMMU mapping on real hardware). Steady state:
//! no copy. Shared USM may migrate between host and device on discrete GPUs; on the iGPU it is
//! plain system memory.
//!
//! # Who owns what
//! - The Level Zero context stays owned by its owner: the SYCL context is made with `keep` and
//!   holds the `Arc<level_zero::L0Context>` as its keep-alive (for the NPU's context that `Arc`
//!   keeps the OpenVINO remote context, and so the Core, alive). Nothing here ever destroys it,
//!   and the SYCL context cannot outlive it.
//! - Each tensor's [`UsmBuffer`](crate::sycl::UsmBuffer) lives in the NPU remote tensor's
//!   keep-alive; it holds the SYCL context. `sycl::free` runs after OpenVINO and every request let
//!   go of the tensor.

use std::sync::Arc;

use crate::error::{Error, Path, Reason, Result};
use crate::level_zero;
use crate::npu::NpuContext;
use crate::sycl::{self, DeviceType, Platform};

/// The SYCL context (made from `l0_context` with `ownership::keep`) and GPU device of the card
/// path, or the typed error saying why there is none.
pub(super) fn open(
    l0_context: &Arc<level_zero::L0Context>,
    npu: &NpuContext,
) -> Result<(Arc<sycl::SyclContext>, sycl::SyclDevice)> {
    let driver = l0_context.driver();
    let Some(platform) = Platform::find_by_native_driver(driver.as_raw())? else {
        return Err(no_sycl_platform(l0_context, npu));
    };
    let devices: Vec<sycl::SyclDevice> = platform
        .devices()?
        .into_iter()
        .filter(|d| d.is_level_zero() && d.device_type == DeviceType::Gpu && d.native_driver() == Some(driver.as_raw()))
        .collect();
    if devices.is_empty() {
        return Err(Error::unsupported(
            Path::CardPath,
            Reason::NoLevelZeroGpu,
            format!(
                "SYCL platform '{}' wraps the context's Level Zero driver ({:p}) but lists no GPU device of it",
                platform.name,
                driver.as_raw()
            ),
        ));
    }
    let context = sycl::SyclContext::from_level_zero_context(l0_context, &devices)
        .map_err(|e| e.context("card path: make_context(keep) from the Level Zero context"))?;
    Ok((context, devices[0].clone()))
}

fn no_sycl_platform(l0_context: &level_zero::L0Context, npu: &NpuContext) -> Error {
    let driver = l0_context.driver().as_raw();
    let is_npu = driver == npu.driver().as_raw();
    let whose = if l0_context.as_raw() == npu.level_zero_context().as_raw() {
        "the NPU plugin's Level Zero context (L0_CONTEXT) belongs to the NPU's driver"
    } else if is_npu {
        "the Level Zero context belongs to the NPU's driver"
    } else {
        "the Level Zero context belongs to a driver"
    };
    Error::unsupported(
        Path::CardPath,
        Reason::NoSyclPlatform,
        format!("{whose} ({driver:p}), and no SYCL platform wraps that driver"),
    )
}
