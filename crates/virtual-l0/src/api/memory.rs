//! USM allocation, free, properties (incl. dma-buf export fds), address ranges, and memory IPC
//! handles (GPU on Linux: [`crate::ipc`]; the NPU driver has none, nor has the Windows GPU here).
use crate::export::{chain, out, ZeResult};
use crate::memory::{self, MemKind, Request, PAGE};
use crate::objects::{context_from, device_in, DriverKind};
use crate::stypes;
use crate::sys::*;
use std::ffi::c_void;

#[allow(clippy::too_many_arguments)]
unsafe fn alloc(
    ctx: ze_context_handle_t,
    kind: MemKind,
    dev: ze_device_handle_t,
    host_flags: u32,
    chains: &[*const c_void],
    size: usize,
    align: usize,
    pptr: *mut *mut c_void,
) -> ZeResult {
    // SAFETY: handles validated; out-parameter from the caller.
    let (c, pptr) = unsafe { (context_from(ctx)?, out(pptr)?) };
    *pptr = std::ptr::null_mut();
    let driver = c.driver();
    let device = if dev.is_null() {
        if kind == MemKind::Device {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_HANDLE);
        }
        0
    } else {
        // SAFETY: validated; a device of another driver is INVALID_ARGUMENT.
        unsafe { device_in(driver, dev) }?;
        dev as usize
    };
    let req = Request { driver, context: ctx as usize, device, kind, size, align, host_flags };
    // SAFETY: the chains come from the caller's descriptors.
    *pptr = unsafe { memory::allocate(req, chains) }?;
    Ok(())
}

fn next<T>(desc: *const T) -> *const c_void {
    if desc.is_null() {
        std::ptr::null()
    } else {
        // SAFETY: a non-null descriptor from the caller starts with {stype, pNext}.
        unsafe { crate::export::next_of(desc as *const c_void) }
    }
}

unsafe fn free(ctx: ze_context_handle_t, ptr: *mut c_void) -> ZeResult {
    // SAFETY: handle validated.
    let c = unsafe { context_from(ctx) }?;
    memory::free(c.driver(), ptr)?;
    #[cfg(unix)]
    if c.driver() == DriverKind::Gpu {
        crate::ipc::forget(ptr as usize);
    }
    Ok(())
}

ze_api! {
    fn zeMemAllocHost(ctx: ze_context_handle_t, host_desc: *const ze_host_mem_alloc_desc_t, size: usize, align: usize, pptr: *mut *mut c_void) {
        if host_desc.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's pointers.
        unsafe { alloc(ctx, MemKind::Host, std::ptr::null_mut(), (*host_desc).flags, &[next(host_desc)], size, align, pptr) }
    }
    fn zeMemAllocDevice(ctx: ze_context_handle_t, dev_desc: *const ze_device_mem_alloc_desc_t, size: usize, align: usize, dev: ze_device_handle_t, pptr: *mut *mut c_void) {
        if dev_desc.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's pointers.
        unsafe { alloc(ctx, MemKind::Device, dev, 0, &[next(dev_desc)], size, align, pptr) }
    }
    fn zeMemAllocShared(ctx: ze_context_handle_t, dev_desc: *const ze_device_mem_alloc_desc_t, host_desc: *const ze_host_mem_alloc_desc_t, size: usize, align: usize, dev: ze_device_handle_t, pptr: *mut *mut c_void) {
        if dev_desc.is_null() || host_desc.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's pointers.
        unsafe { alloc(ctx, MemKind::Shared, dev, (*host_desc).flags, &[next(dev_desc), next(host_desc)], size, align, pptr) }
    }
    fn zeMemFree(ctx: ze_context_handle_t, ptr: *mut c_void) {
        // SAFETY: caller's handle.
        unsafe { free(ctx, ptr) }
    }
    /// Every policy frees at once (execution is synchronous, nothing can still be in flight).
    fn zeMemFreeExt(ctx: ze_context_handle_t, desc: *const ze_memory_free_ext_desc_t, ptr: *mut c_void) {
        if desc.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: caller's handle.
        unsafe { free(ctx, ptr) }
    }
    /// GPU (compute-runtime 26.14 `level_zero/core/source/context/context.cpp`
    /// `Context::getMemAllocProperties`): a pointer it does not know is SUCCESS with
    /// `ZE_MEMORY_TYPE_UNKNOWN`, returned before `phDevice` and the `pNext` chain are touched; an
    /// export-fd entry anywhere in the chain exports (flags not checked, see `memory::export_fd`).
    /// NPU (linux-npu-driver 1.32.1 `umd/level_zero_driver/source/memory.cpp`): looked up in this
    /// context only; unknown → `ZE_RESULT_ERROR_NOT_AVAILABLE` with nothing written, and `phDevice`
    /// is never written; only the **first** `pNext` entry is read, and it exports only when it is an
    /// export-fd entry with flags exactly `DMA_BUF` (else SUCCESS, no fd); a buffer object that is
    /// not exportable → `NOT_AVAILABLE`, the fd untouched.
    fn zeMemGetAllocProperties(ctx: ze_context_handle_t, ptr: *const c_void, props: *mut ze_memory_allocation_properties_t, dev: *mut ze_device_handle_t) {
        // SAFETY: handle validated; out-parameters from the caller.
        let (c, p) = unsafe { (context_from(ctx)?, out(props)?) };
        let driver = c.driver();
        let npu = driver == DriverKind::Npu;
        let info = if npu { memory::lookup_in(driver, ctx as usize, ptr) } else { memory::lookup(driver, ptr) };
        let Some(i) = info else {
            if npu {
                return Err(ZE_RESULT_ERROR_NOT_AVAILABLE);
            }
            p.type_ = ZE_MEMORY_TYPE_UNKNOWN;
            return Ok(());
        };
        p.type_ = i.kind as ze_memory_type_t;
        p.id = i.id;
        p.pageSize = PAGE as u64;
        if !dev.is_null() && !npu {
            // SAFETY: a non-null out-parameter from the caller.
            unsafe { *dev = i.device as ze_device_handle_t };
        }
        // SAFETY: the caller's chain of property structures.
        let entries = unsafe { chain(p.pNext) };
        // Windows reads only the first entry (compute-runtime 26.31.39395.13 `context.cpp`
        // `handleAllocationExtensions`; the NPU inferred as on Linux).
        let first_only = npu || cfg!(windows);
        for e in entries.into_iter().take(if first_only { 1 } else { usize::MAX }) {
            #[cfg(unix)]
            if e.stype == stypes::EXTERNAL_MEMORY_EXPORT_FD {
                // SAFETY: stype says ze_external_memory_export_fd_t.
                let x = unsafe { &mut *(e.ptr as *mut ze_external_memory_export_fd_t) };
                if npu && x.flags != stypes::EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF {
                    continue;
                }
                let fd = match driver {
                    DriverKind::Gpu => crate::ipc::export_fd(ptr)?,
                    DriverKind::Npu => memory::export_handle(driver, ptr).transpose()?.flatten(),
                };
                if let Some(fd) = fd {
                    x.fd = fd;
                }
            }
            // Windows GPU (`handleAllocationExtensions`): flags other than exactly OPAQUE_WIN32 are
            // UNSUPPORTED_ENUMERATION, any other structure INVALID_ENUMERATION; the handle is written
            // (0 for memory that is not shareable). The NPU's answers are inferred
            // (`memory::export_handle`), its other structures ignored as on Linux.
            #[cfg(windows)]
            if e.stype == stypes::EXTERNAL_MEMORY_EXPORT_WIN32 {
                // SAFETY: stype says ze_external_memory_export_win32_handle_t.
                let x = unsafe { &mut *(e.ptr as *mut ze_external_memory_export_win32_handle_t) };
                if x.flags != ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32 {
                    if npu {
                        continue;
                    }
                    return Err(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION);
                }
                if let Some(h) = memory::export_handle(driver, ptr).transpose()? {
                    x.handle = h.unwrap_or(std::ptr::null_mut());
                }
            } else if !npu {
                return Err(ZE_RESULT_ERROR_INVALID_ENUMERATION);
            }
        }
        Ok(())
    }
    /// GPU: the allocation's base (its GPU address is its CPU address for USM) and size. NPU
    /// (linux-npu-driver `memory.cpp` `getMemAddressRange`): the NPU-side address of the buffer, not
    /// the CPU pointer, and its size; unknown → `ZE_RESULT_ERROR_NOT_AVAILABLE`.
    fn zeMemGetAddressRange(ctx: ze_context_handle_t, ptr: *const c_void, base: *mut *mut c_void, size: *mut usize) {
        // SAFETY: handle validated.
        let c = unsafe { context_from(ctx) }?;
        if ptr.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        let (b, n) = match c.driver() {
            DriverKind::Npu => {
                let i = memory::lookup_in(DriverKind::Npu, ctx as usize, ptr).ok_or(ZE_RESULT_ERROR_NOT_AVAILABLE)?;
                (i.device_va as usize, i.size)
            }
            DriverKind::Gpu => {
                let i = memory::lookup(DriverKind::Gpu, ptr).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
                (i.base, i.size)
            }
        };
        // SAFETY: optional out-parameters from the caller.
        unsafe {
            if !base.is_null() {
                *base = b as *mut c_void;
            }
            if !size.is_null() {
                *size = n;
            }
        }
        Ok(())
    }
}

/// The GPU context of `ctx` for an IPC call; the NPU driver (linux-npu-driver 1.32.1) has no memory
/// IPC: `UNSUPPORTED_FEATURE`.
#[cfg(unix)]
unsafe fn ipc_context(ctx: ze_context_handle_t) -> ZeResult<()> {
    // SAFETY: per the caller.
    match unsafe { context_from(ctx) }?.driver() {
        DriverKind::Gpu => Ok(()),
        DriverKind::Npu => Err(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE),
    }
}

#[cfg(unix)]
fn handle_bytes(h: &ze_ipc_mem_handle_t) -> [u8; crate::ipc::HANDLE_SIZE] {
    h.data.map(|c| c as u8)
}

#[cfg(unix)]
ze_api! {
    fn zeMemGetIpcHandle(ctx: ze_context_handle_t, ptr: *const c_void, h: *mut ze_ipc_mem_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let h = unsafe { ipc_context(ctx)?; out(h)? };
        if ptr.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        h.data = crate::ipc::get(ptr)?.map(|b| b as _);
        Ok(())
    }
    /// compute-runtime `getIpcMemHandlesImpl`: a `pNext` other than an IPC handle-type descriptor is
    /// `INVALID_ARGUMENT`; the descriptor's flags ask for fabric handles, not modelled (ignored).
    fn zeMemGetIpcHandleWithProperties(ctx: ze_context_handle_t, ptr: *const c_void, next: *mut c_void, h: *mut ze_ipc_mem_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let h = unsafe { ipc_context(ctx)?; out(h)? };
        if ptr.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: a non-null pNext from the caller starts with its stype.
        if !next.is_null() && unsafe { *(next as *const u32) } != stypes::IPC_MEM_HANDLE_TYPE_EXT_DESC {
            return Err(ZE_RESULT_ERROR_INVALID_ARGUMENT);
        }
        h.data = crate::ipc::get(ptr)?.map(|b| b as _);
        Ok(())
    }
    fn zeMemPutIpcHandle(ctx: ze_context_handle_t, h: ze_ipc_mem_handle_t) {
        // SAFETY: handle validated.
        unsafe { ipc_context(ctx) }?;
        crate::ipc::put(&handle_bytes(&h));
        Ok(())
    }
    fn zeMemOpenIpcHandle(ctx: ze_context_handle_t, dev: ze_device_handle_t, h: ze_ipc_mem_handle_t, _flags: ze_ipc_memory_flags_t, pptr: *mut *mut c_void) {
        // SAFETY: handles validated; out-parameter from the caller.
        let pptr = unsafe { ipc_context(ctx)?; device_in(DriverKind::Gpu, dev)?; out(pptr)? };
        *pptr = crate::ipc::open(ctx as usize, dev as usize, &handle_bytes(&h))?;
        Ok(())
    }
    /// `Context::closeIpcMemHandle` is `freeMem`.
    fn zeMemCloseIpcHandle(ctx: ze_context_handle_t, ptr: *const c_void) {
        // SAFETY: caller's handle.
        unsafe { ipc_context(ctx)?; free(ctx, ptr as *mut c_void) }
    }
    fn zeMemGetFileDescriptorFromIpcHandleExp(ctx: ze_context_handle_t, h: ze_ipc_mem_handle_t, fd: *mut u64) {
        // SAFETY: handle validated; out-parameter from the caller.
        let fd = unsafe { ipc_context(ctx)?; out(fd)? };
        *fd = crate::ipc::fd_of(&handle_bytes(&h))?;
        Ok(())
    }
    fn zeMemGetIpcHandleFromFileDescriptorExp(ctx: ze_context_handle_t, fd: u64, h: *mut ze_ipc_mem_handle_t) {
        // SAFETY: handle validated; out-parameter from the caller.
        let h = unsafe { ipc_context(ctx)?; out(h)? };
        h.data = crate::ipc::handle_of(fd)?.map(|b| b as _);
        Ok(())
    }
}

// Windows: NT-handle IPC (compute-runtime `context_wddm.cpp`) is not modelled.
#[cfg(windows)]
ze_unsupported! {
    zeMemGetIpcHandle zeMemGetIpcHandleWithProperties zeMemOpenIpcHandle zeMemCloseIpcHandle zeMemPutIpcHandle
    zeMemGetIpcHandleFromFileDescriptorExp zeMemGetFileDescriptorFromIpcHandleExp
}
