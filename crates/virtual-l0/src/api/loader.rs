//! The loader surface: `zeLoaderInit`, component versions, handle translation (identity), the
//! tracing handle, and the DDI-table getters (which write nothing: the front ends inside the UR
//! adapters overwrite every slot with `dlsym` of the same name, and writing slots beyond the
//! caller's version would overrun its table).
use crate::export::{out, set_cstr, ZeResult};
use crate::stypes::make_version;
use crate::sys::*;
use std::ffi::c_void;

/// Reported loader version: 1.32.0 (≥ 1.18.5 for the NPU plugin's zeInitDrivers path, ≥ 1.19.2 for UR's).
pub const LOADER_VERSION: (i32, i32, i32) = (1, 32, 0);
/// Reported spec version of the loader component.
pub const LOADER_SPEC: u32 = make_version(1, 17);

fn fill_component(v: &mut zel_component_version_t) {
    set_cstr(&mut v.component_name, "loader");
    v.spec_version = LOADER_SPEC as ze_api_version_t;
    v.component_lib_version =
        zel_version_t { major: LOADER_VERSION.0, minor: LOADER_VERSION.1, patch: LOADER_VERSION.2 };
}

unsafe fn versions(num: *mut usize, versions: *mut zel_component_version_t) -> ZeResult {
    // SAFETY: the caller passes a valid size_t*.
    let num = unsafe { out(num) }?;
    if versions.is_null() || *num == 0 {
        *num = 1;
        return Ok(());
    }
    // SAFETY: the caller provides *num >= 1 elements.
    fill_component(unsafe { &mut *versions });
    *num = 1;
    Ok(())
}

unsafe fn translate(out_: *mut *mut c_void, h: *mut c_void) -> ZeResult {
    // SAFETY: the caller passes a valid void**.
    *unsafe { out(out_) }? = h;
    Ok(())
}

ze_api! {
    /// Idempotent: the platform is static. Fails (UNINITIALIZED) for an unknown `VL0_PROFILE`.
    fn zeLoaderInit() {
        crate::profile::check().map_err(|_| ZE_RESULT_ERROR_UNINITIALIZED)?;
        let _ = crate::objects::driver(crate::objects::DriverKind::Gpu);
        Ok(())
    }
    fn zelLoaderGetVersionsInternal(num: *mut usize, v: *mut zel_component_version_t) {
        // SAFETY: pointers from the caller, checked for NULL.
        unsafe { versions(num, v) }
    }
    fn zelLoaderGetVersions(num: *mut usize, v: *mut zel_component_version_t) {
        // SAFETY: as above.
        unsafe { versions(num, v) }
    }
    fn zelGetLoaderVersion(v: *mut zel_component_version_t) {
        // SAFETY: the caller passes a valid struct pointer (checked for NULL).
        fill_component(unsafe { out(v) }?);
        Ok(())
    }
    fn zelLoaderTranslateHandleInternal(_t: u32, h: *mut c_void, o: *mut *mut c_void) {
        // SAFETY: the caller passes a valid void**.
        unsafe { translate(o, h) }
    }
    fn zelLoaderTranslateHandle(_t: u32, h: *mut c_void, o: *mut *mut c_void) {
        // SAFETY: as above.
        unsafe { translate(o, h) }
    }
    fn zelSetDriverTeardown() { ZE_RESULT_SUCCESS }
}

ze_api_ptr! {
    /// No tracing layer: NULL (the symbol must exist).
    fn zeLoaderGetTracingHandle() -> *mut c_void { std::ptr::null_mut() }
}

/// DDI getters `(ze_api_version_t, table*) -> SUCCESS`, writing nothing.
macro_rules! ddi_getters {
    ($($name:ident)*) => { ze_api! { $( fn $name(_version: ze_api_version_t, _table: *mut c_void) { ZE_RESULT_SUCCESS } )* } };
}

ddi_getters! {
    zeGetGlobalProcAddrTable zeGetDriverProcAddrTable zeGetDeviceProcAddrTable zeGetContextProcAddrTable
    zeGetCommandQueueProcAddrTable zeGetCommandListProcAddrTable zeGetEventProcAddrTable
    zeGetEventPoolProcAddrTable zeGetFenceProcAddrTable zeGetImageProcAddrTable zeGetKernelProcAddrTable
    zeGetMemProcAddrTable zeGetModuleProcAddrTable zeGetModuleBuildLogProcAddrTable
    zeGetPhysicalMemProcAddrTable zeGetSamplerProcAddrTable zeGetVirtualMemProcAddrTable
    zetGetDeviceProcAddrTable zetGetContextProcAddrTable zetGetCommandListProcAddrTable
    zetGetKernelProcAddrTable zetGetModuleProcAddrTable zetGetDebugProcAddrTable zetGetMetricProcAddrTable
    zetGetMetricGroupProcAddrTable zetGetMetricQueryProcAddrTable zetGetMetricQueryPoolProcAddrTable
    zetGetMetricStreamerProcAddrTable zetGetTracerExpProcAddrTable
    zesGetDeviceProcAddrTable zesGetDriverProcAddrTable zesGetDiagnosticsProcAddrTable zesGetEngineProcAddrTable
    zesGetFabricPortProcAddrTable zesGetFanProcAddrTable zesGetFirmwareProcAddrTable zesGetFrequencyProcAddrTable
    zesGetLedProcAddrTable zesGetMemoryProcAddrTable zesGetPerformanceFactorProcAddrTable zesGetPowerProcAddrTable
    zesGetPsuProcAddrTable zesGetRasProcAddrTable zesGetSchedulerProcAddrTable zesGetStandbyProcAddrTable
    zesGetTemperatureProcAddrTable
    zelGetTracerApiProcAddrTable
}
