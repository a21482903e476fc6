//! Contexts and residency.
use crate::export::{out, ZeResult};
use crate::objects::{self, context_from, device, device_in, driver_from, Context};
use crate::sys::*;
use std::ffi::c_void;

unsafe fn create(
    h: ze_driver_handle_t,
    n: u32,
    devs: *mut ze_device_handle_t,
    o: *mut ze_context_handle_t,
) -> ZeResult {
    // SAFETY: handle validated; out-parameter from the caller.
    let (d, o) = unsafe { (driver_from(h)?, out(o)?) };
    let kind = d.driver();
    // compute-runtime's `Context` constructor (`isDrmOpaqueHandleSupported`): importers of this
    // process's IPC handles take their fds out of it.
    #[cfg(unix)]
    if kind == crate::objects::DriverKind::Gpu {
        crate::os::allow_fd_takers();
    }
    let mut devices = Vec::new();
    if n == 0 || devs.is_null() {
        devices.push(device(kind).handle::<c_void>() as usize);
    } else {
        for i in 0..n as usize {
            // SAFETY: the caller provides n device handles.
            let dh = unsafe { *devs.add(i) };
            // SAFETY: validated handle of this driver (foreign → INVALID_ARGUMENT).
            unsafe { device_in(kind, dh) }?;
            devices.push(dh as usize);
        }
    }
    *o = objects::create::<Context, _>(kind, Context { devices });
    if kind == objects::DriverKind::Npu {
        crate::npu::idle::reset(*o as usize);
    }
    Ok(())
}

unsafe fn resident(ctx: ze_context_handle_t, dev: ze_device_handle_t) -> ZeResult {
    // SAFETY: handles validated; the device must belong to the context's driver.
    unsafe {
        let c = context_from(ctx)?;
        device_in(c.driver(), dev)?;
    }
    Ok(())
}

ze_api! {
    fn zeContextCreate(h: ze_driver_handle_t, desc: *const ze_context_desc_t, o: *mut ze_context_handle_t) {
        if desc.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's pointers.
        unsafe { create(h, 0, std::ptr::null_mut(), o) }
    }
    fn zeContextCreateEx(h: ze_driver_handle_t, desc: *const ze_context_desc_t, n: u32, devs: *mut ze_device_handle_t, o: *mut ze_context_handle_t) {
        if desc.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // The spec: `(nullptr == phDevices) && (0 < numDevices)` is INVALID_SIZE, not "all devices".
        if n > 0 && devs.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_SIZE);
        }
        // SAFETY: caller's pointers.
        unsafe { create(h, n, devs, o) }
    }
    /// Also frees the context's allocations (the spec allows it; see [`crate::memory::free_context`]).
    fn zeContextDestroy(h: ze_context_handle_t) {
        // SAFETY: handle validated; the application no longer uses the context (L0 rule). The
        // allocations go first, while no new context can have been given the same address.
        let c = unsafe { context_from(h) }?;
        crate::memory::free_context(c.driver(), h as usize);
        // SAFETY: as above.
        unsafe { objects::destroy::<Context, _>(h) }.map(drop)
    }
    fn zeContextGetStatus(h: ze_context_handle_t) {
        // SAFETY: handle validated.
        unsafe { context_from(h) }.map(|_| ())
    }
    fn zeContextSystemBarrier(h: ze_context_handle_t, dev: ze_device_handle_t) {
        // SAFETY: caller's handles.
        unsafe { resident(h, dev) }
    }
    fn zeContextMakeMemoryResident(h: ze_context_handle_t, dev: ze_device_handle_t, _ptr: *mut c_void, _size: usize) {
        // SAFETY: caller's handles.
        unsafe { resident(h, dev) }
    }
    fn zeContextEvictMemory(h: ze_context_handle_t, dev: ze_device_handle_t, _ptr: *mut c_void, _size: usize) {
        // SAFETY: caller's handles.
        unsafe { resident(h, dev) }
    }
    fn zeContextMakeImageResident(_h: ze_context_handle_t, _dev: ze_device_handle_t, _img: ze_image_handle_t) {
        ZE_RESULT_ERROR_UNSUPPORTED_FEATURE
    }
    fn zeContextEvictImage(_h: ze_context_handle_t, _dev: ze_device_handle_t, _img: ze_image_handle_t) {
        ZE_RESULT_ERROR_UNSUPPORTED_FEATURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::memory::{zeMemAllocHost, zeMemFree};
    use crate::objects::{driver, DriverKind};

    /// A context destroyed with allocations still live frees them: no leak over create/destroy
    /// cycles, and the pointers are no longer the driver's (as on a driver that frees them).
    #[test]
    fn destroying_a_context_frees_its_allocations() {
        // SAFETY: plain-C descriptors; valid handles and out-parameters throughout.
        unsafe {
            let desc: ze_context_desc_t = std::mem::zeroed();
            let hd: ze_host_mem_alloc_desc_t = std::mem::zeroed();
            let (mut keep, mut other) = (std::ptr::null_mut(), std::ptr::null_mut());
            assert_eq!(zeContextCreate(driver(DriverKind::Gpu).handle(), &desc, &mut other), ZE_RESULT_SUCCESS);
            assert_eq!(zeMemAllocHost(other, &hd, 4096, 0, &mut keep), ZE_RESULT_SUCCESS);
            let mut last = std::ptr::null_mut();
            for _ in 0..1000 {
                let mut c = std::ptr::null_mut();
                assert_eq!(zeContextCreate(driver(DriverKind::Gpu).handle(), &desc, &mut c), ZE_RESULT_SUCCESS);
                let mut p = std::ptr::null_mut();
                assert_eq!(zeMemAllocHost(c, &hd, 1 << 20, 0, &mut p), ZE_RESULT_SUCCESS);
                assert!(crate::memory::lookup(DriverKind::Gpu, p).is_some());
                assert_eq!(zeContextDestroy(c), ZE_RESULT_SUCCESS);
                assert!(crate::memory::lookup(DriverKind::Gpu, p).is_none(), "freed with its context");
                last = p;
            }
            let _ = last;
            assert!(crate::memory::lookup(DriverKind::Gpu, keep).is_some(), "another context's memory stays");
            assert_eq!(zeMemFree(other, keep), ZE_RESULT_SUCCESS);
            assert_eq!(zeContextDestroy(other), ZE_RESULT_SUCCESS);
        }
    }

    #[test]
    fn context_create_ex_with_a_count_and_no_devices_is_invalid_size() {
        // SAFETY: plain-C descriptor; valid handle and out-parameter.
        unsafe {
            let desc: ze_context_desc_t = std::mem::zeroed();
            let mut c = std::ptr::null_mut();
            let d = driver(DriverKind::Npu).handle();
            assert_eq!(zeContextCreateEx(d, &desc, 1, std::ptr::null_mut(), &mut c), ZE_RESULT_ERROR_INVALID_SIZE);
        }
    }
}
