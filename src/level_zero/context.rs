//! Level Zero contexts: owned (created here) or borrowed (wrapped from another runtime).

use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use super::{api, check, require, sys, AllocationInfo, Driver, HostMemFlags, L0Allocation, L0Device, MemoryType};
use crate::error::{Error, Path, Reason, Result};
use crate::memory::OwnedShared;
use crate::ownership::{DeferredErrors, Foreign};

/// A Level Zero context (`ze_context_handle_t`).
///
/// Two kinds, decided when it is made (as wgpu-hal's `keep` vs `transfer`):
/// - **owned**: made by [`L0Context::create`] or adopted with
///   `raw::level_zero::context` and [`Foreign::Owned`];
///   destroyed exactly once, by `Drop`, with `zeContextDestroy`;
/// - **borrowed**: wrapped with [`Foreign::Borrowed`]; never destroyed here. It may keep an
///   `owner` value alive (for example the OpenVINO remote context that owns the handle) and drops it
///   when the wrapper is dropped, like wgpu-hal's drop callback.
///
/// Allocations ([`L0Allocation`]) hold an `Arc<L0Context>`, so a context is never destroyed while
/// memory allocated in it is still alive.
pub struct L0Context {
    handle: sys::ze_context_handle_t,
    driver: Driver,
    ownership: Foreign,
    /// Errors of `Drop` impls of allocations made in this context (a failing `zeMemFree`), returned
    /// by the next allocation call or by [`take_deferred_errors`](Self::take_deferred_errors).
    deferred: DeferredErrors,
}

// SAFETY: Level Zero context handles may be used from any thread (the spec makes every API except
// command-list recording free-threaded); the owner value is itself Send + Sync.
unsafe impl Send for L0Context {}
// SAFETY: `&Context` only passes the handle to free-threaded calls.
unsafe impl Sync for L0Context {}

impl L0Context {
    /// `zeContextCreate` on `driver`: an owned context, destroyed in `Drop`.
    pub fn create(driver: Driver) -> Result<L0Context> {
        let api = api()?;
        let desc =
            sys::ze_context_desc_t { stype: sys::ZE_STRUCTURE_TYPE_CONTEXT_DESC, pNext: std::ptr::null(), flags: 0 };
        let mut handle = std::ptr::null_mut();
        // SAFETY: a valid driver handle, descriptor and output pointer.
        check(unsafe { api.zeContextCreate(driver.as_raw(), &desc, &mut handle) }, "zeContextCreate")?;
        Ok(L0Context::wrap(handle, driver, Foreign::Owned))
    }

    /// Wraps a context made elsewhere, owned or borrowed as `ownership` says.
    ///
    /// # Safety
    /// As `raw::level_zero::context`, the public door to it.
    pub(crate) unsafe fn from_raw(handle: sys::ze_context_handle_t, driver: Driver, ownership: Foreign) -> L0Context {
        L0Context::wrap(handle, driver, ownership)
    }

    fn wrap(handle: sys::ze_context_handle_t, driver: Driver, ownership: Foreign) -> L0Context {
        L0Context { handle, driver, ownership, deferred: DeferredErrors::default() }
    }

    /// Errors recorded by `Drop` impls of allocations made in this context (a failing `zeMemFree`),
    /// oldest first; the list is emptied. The next allocation call in the context returns the oldest
    /// one instead of allocating, so such an error is never lost silently.
    pub fn take_deferred_errors(&self) -> Vec<Error> {
        self.deferred.take_all()
    }

    pub(crate) fn defer_error(&self, e: Error) {
        self.deferred.push(e);
    }

    /// Returns the oldest deferred error, if any.
    fn check_deferred(&self) -> Result<()> {
        self.deferred.check()
    }

    /// The raw handle. It stays valid while `self` lives; do not destroy it.
    pub(crate) fn as_raw(&self) -> sys::ze_context_handle_t {
        self.handle
    }

    /// The driver the context belongs to.
    pub fn driver(&self) -> Driver {
        self.driver
    }

    /// Whether `Drop` destroys the context.
    pub fn is_owned(&self) -> bool {
        self.ownership.is_owned()
    }

    /// `zeContextGetStatus`: `Ok` while the context is usable. Loaders without the function, or
    /// drivers answering `ZE_RESULT_ERROR_UNSUPPORTED_FEATURE`, fall back to a
    /// `zeMemGetAllocProperties` probe dispatched on the context.
    pub fn status(&self) -> Result<()> {
        let api = api()?;
        if api.zeContextGetStatus.is_ok() {
            // SAFETY: a live context handle (guaranteed by the constructors' contracts).
            let r = unsafe { api.zeContextGetStatus(self.handle) };
            if r != sys::ZE_RESULT_ERROR_UNSUPPORTED_FEATURE {
                return check(r, "zeContextGetStatus");
            }
        }
        let probe = 0u8;
        self.memory_properties(std::ptr::addr_of!(probe).cast()).map(|_| ())
    }

    /// `zeMemGetAllocProperties`: what the driver knows about `ptr` in this context. A pointer it
    /// does not know (plain process memory, another driver's or another context's memory) is
    /// `kind: Unknown, id: 0`: GPU drivers answer that with SUCCESS and `ZE_MEMORY_TYPE_UNKNOWN`, the
    /// NPU driver with `ZE_RESULT_ERROR_NOT_AVAILABLE` (linux-npu-driver `memory.cpp`), and both mean
    /// the same. Interior pointers resolve to their allocation. The NPU driver never reports the
    /// device, so `device` is `None` there.
    // The driver only looks the address up; it never dereferences it, so any value is safe.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn memory_properties(&self, ptr: *const c_void) -> Result<AllocationInfo> {
        let api = api()?;
        let mut p = sys::ze_memory_allocation_properties_t {
            stype: sys::ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES,
            ..Default::default()
        };
        let mut device: sys::ze_device_handle_t = std::ptr::null_mut();
        // SAFETY: a live context, any pointer value (it is only looked up), valid outputs.
        let r = unsafe { api.zeMemGetAllocProperties(self.handle, ptr, &mut p, &mut device) };
        if r == sys::ZE_RESULT_ERROR_NOT_AVAILABLE {
            return Ok(AllocationInfo { kind: MemoryType::Unknown, id: 0, page_size: 0, device: None });
        }
        check(r, "zeMemGetAllocProperties")?;
        Ok(AllocationInfo {
            kind: MemoryType::from_raw(p.type_),
            id: p.id,
            page_size: p.pageSize,
            // SAFETY: a device handle the driver of this context returned.
            device: (!device.is_null()).then(|| unsafe { L0Device::from_raw(device, self.driver) }),
        })
    }

    /// `zeMemGetAddressRange`: the base and size of the allocation that contains `ptr`, **in the
    /// device's address space**: on the GPU that is the CPU address of USM, on the NPU it is the
    /// NPU's own address of the buffer (linux-npu-driver `getMemAddressRange`), not a CPU pointer.
    // As memory_properties: a lookup, never a dereference.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn address_range(&self, ptr: *const c_void) -> Result<(*mut c_void, usize)> {
        let api = api()?;
        require!(api, zeMemGetAddressRange);
        let mut base = std::ptr::null_mut();
        let mut size = 0usize;
        // SAFETY: a live context, any pointer value, valid outputs.
        let r = unsafe { api.zeMemGetAddressRange(self.handle, ptr, &mut base, &mut size) };
        check(r, "zeMemGetAddressRange")?;
        Ok((base, size))
    }

    /// `zeMemAllocHost`: host memory (CPU-accessible) of `size` bytes aligned to `align` (0 lets
    /// the driver choose), freed when the returned allocation is dropped.
    pub fn alloc_host(self: &Arc<Self>, size: usize, align: usize, flags: HostMemFlags) -> Result<L0Allocation> {
        let desc = sys::ze_host_mem_alloc_desc_t {
            stype: sys::ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC,
            pNext: std::ptr::null(),
            flags: flags.bits(),
        };
        // SAFETY: a valid host descriptor with an empty chain.
        unsafe { self.alloc_host_with(&desc, size, align, None) }
    }

    /// `zeMemAllocDevice` on `device`.
    pub fn alloc_device(self: &Arc<Self>, device: L0Device, size: usize, align: usize) -> Result<L0Allocation> {
        let desc = sys::ze_device_mem_alloc_desc_t {
            stype: sys::ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC,
            pNext: std::ptr::null(),
            flags: 0,
            ordinal: 0,
        };
        // SAFETY: a valid device descriptor with an empty chain.
        unsafe { self.alloc_device_with(&desc, device, size, align, None) }
    }

    /// `zeMemAllocShared` on `device` (host and device accessible).
    pub fn alloc_shared(self: &Arc<Self>, device: L0Device, size: usize, align: usize) -> Result<L0Allocation> {
        let api = api()?;
        self.check_device(device)?;
        self.check_deferred()?;
        let ddesc = sys::ze_device_mem_alloc_desc_t {
            stype: sys::ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC,
            pNext: std::ptr::null(),
            flags: 0,
            ordinal: 0,
        };
        let hdesc = sys::ze_host_mem_alloc_desc_t {
            stype: sys::ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC,
            pNext: std::ptr::null(),
            flags: 0,
        };
        let mut ptr = std::ptr::null_mut();
        // SAFETY: live context and device, valid descriptors and output pointer.
        let r = unsafe { api.zeMemAllocShared(self.handle, &ddesc, &hdesc, size, align, device.as_raw(), &mut ptr) };
        check(r, "zeMemAllocShared")?;
        // SAFETY: ptr was just allocated in this context with `size` bytes.
        unsafe {
            L0Allocation::adopt(self.clone(), ptr, size, MemoryType::Shared, Some(device), None, "zeMemAllocShared")
        }
    }

    /// `zeMemAllocHost` with a caller-built descriptor (whose chain may import memory).
    ///
    /// # Safety
    /// `desc` and its `pNext` chain are valid Level Zero structures for `zeMemAllocHost`; if the
    /// chain imports an fd or NT handle, `keep` is that handle (or the caller keeps it open as
    /// documented).
    pub(crate) unsafe fn alloc_host_with(
        self: &Arc<Self>,
        desc: &sys::ze_host_mem_alloc_desc_t,
        size: usize,
        align: usize,
        keep: Option<OwnedShared>,
    ) -> Result<L0Allocation> {
        let api = api()?;
        self.check_deferred()?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: live context; desc validity is the caller's contract.
        let r = unsafe { api.zeMemAllocHost(self.handle, desc, size, align, &mut ptr) };
        check(r, "zeMemAllocHost")?;
        // SAFETY: ptr was just allocated in this context with `size` bytes.
        unsafe { L0Allocation::adopt(self.clone(), ptr, size, MemoryType::Host, None, keep, "zeMemAllocHost") }
    }

    /// `zeMemAllocDevice` with a caller-built descriptor.
    ///
    /// # Safety
    /// As [`alloc_host_with`](Self::alloc_host_with), for `zeMemAllocDevice`.
    pub(crate) unsafe fn alloc_device_with(
        self: &Arc<Self>,
        desc: &sys::ze_device_mem_alloc_desc_t,
        device: L0Device,
        size: usize,
        align: usize,
        keep: Option<OwnedShared>,
    ) -> Result<L0Allocation> {
        let api = api()?;
        self.check_device(device)?;
        self.check_deferred()?;
        let mut ptr = std::ptr::null_mut();
        // SAFETY: live context and device; desc validity is the caller's contract.
        let r = unsafe { api.zeMemAllocDevice(self.handle, desc, size, align, device.as_raw(), &mut ptr) };
        check(r, "zeMemAllocDevice")?;
        // SAFETY: ptr was just allocated in this context with `size` bytes.
        unsafe {
            L0Allocation::adopt(self.clone(), ptr, size, MemoryType::Device, Some(device), keep, "zeMemAllocDevice")
        }
    }

    fn check_device(&self, device: L0Device) -> Result<()> {
        if device.driver() != self.driver {
            return Err(Error::invalid_argument(format!(
                "{device:?} belongs to another driver than this context ({:?}); Level Zero contexts \
                 cannot use devices of another driver",
                self.driver
            )));
        }
        Ok(())
    }

    /// Copies `len` bytes from `src` to `dst` on `device` with a synchronous immediate command list
    /// (`zeCommandListCreateImmediate` + `zeCommandListAppendMemoryCopy` +
    /// `zeCommandListHostSynchronize`), and returns when the copy has finished.
    ///
    /// # Safety
    /// `dst` and `src` are valid for `len` bytes for `device` in this context (host, shared or
    /// device memory of this context, or host memory the device can reach), and nothing else
    /// accesses `dst` during the copy.
    pub unsafe fn copy_blocking(
        &self,
        device: L0Device,
        dst: *mut c_void,
        src: *const c_void,
        len: usize,
    ) -> Result<()> {
        let api = api()?;
        self.check_device(device)?;
        require!(api, zeCommandListCreateImmediate);
        let groups = device.queue_groups()?;
        let ordinal = groups
            .iter()
            .find(|g| g.is_copy())
            .or_else(|| groups.iter().find(|g| g.is_compute()))
            .map(|g| g.ordinal)
            .ok_or_else(|| {
                Error::unsupported(
                    Path::DeviceCopy,
                    Reason::NoCopyQueue,
                    format!("{device:?} has no copy or compute queue group"),
                )
            })?;
        let desc = sys::ze_command_queue_desc_t {
            stype: sys::ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
            pNext: std::ptr::null(),
            ordinal,
            index: 0,
            flags: 0,
            mode: sys::ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS,
            priority: sys::ZE_COMMAND_QUEUE_PRIORITY_NORMAL,
        };
        let mut list = std::ptr::null_mut();
        // SAFETY: live context and device, valid descriptor and output.
        let r = unsafe { api.zeCommandListCreateImmediate(self.handle, device.as_raw(), &desc, &mut list) };
        check(r, "zeCommandListCreateImmediate")?;
        struct ListGuard(&'static sys::ZeApi, sys::ze_command_list_handle_t);
        impl Drop for ListGuard {
            fn drop(&mut self) {
                // SAFETY: the list was created above and is destroyed once, here.
                unsafe { self.0.zeCommandListDestroy(self.1) };
            }
        }
        let guard = ListGuard(api, list);
        // SAFETY: dst/src validity is the caller's contract; no events.
        let r = unsafe {
            api.zeCommandListAppendMemoryCopy(guard.1, dst, src, len, std::ptr::null_mut(), 0, std::ptr::null_mut())
        };
        check(r, "zeCommandListAppendMemoryCopy")?;
        if api.zeCommandListHostSynchronize.is_ok() {
            // SAFETY: a live immediate list.
            check(unsafe { api.zeCommandListHostSynchronize(guard.1, u64::MAX) }, "zeCommandListHostSynchronize")?;
        }
        Ok(())
    }
}

impl Drop for L0Context {
    fn drop(&mut self) {
        if self.ownership.is_owned() {
            if let Ok(api) = api() {
                // SAFETY: we own the handle and every allocation (which holds an Arc to us) is gone;
                // it is destroyed exactly once, here. An error cannot be reported from Drop.
                let _ = unsafe { api.zeContextDestroy(self.handle) };
            }
        }
    }
}

impl fmt::Debug for L0Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("L0Context")
            .field("handle", &self.handle)
            .field("driver", &self.driver)
            .field("owned", &self.is_owned())
            .finish()
    }
}

/// A non-null pointer from a successful allocation call, or an error naming `call`.
pub(crate) fn non_null(ptr: *mut c_void, call: &'static str) -> Result<NonNull<c_void>> {
    NonNull::new(ptr)
        .ok_or_else(|| Error::level_zero(sys::ZE_RESULT_ERROR_UNKNOWN, call, "returned success but a null pointer"))
}
