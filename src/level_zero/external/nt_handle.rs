//! NT-handle export and import (Windows).
//!
//! **Who owns the handle** (compute-runtime's WDDM code; the NPU driver on Windows is closed source,
//! so its side is inferred from what OpenVINO's NPU plugin does with it):
//! - [`L0Allocation::export_nt_handle`] returns an [`OwnedHandle`] the caller owns and closes. The
//!   driver's own handle is made with the allocation and closed by `zeMemFree` (compute-runtime
//!   `WddmMemoryManager::freeGraphicsMemoryImpl`; every export query returns that same value,
//!   `WddmAllocation::peekInternalHandle`), so the caller gets a duplicate (`DuplicateHandle`),
//!   valid after the allocation is freed.
//! - [`L0Context::import_nt_handle`] borrows the handle: compute-runtime opens the resource behind
//!   it (`Wddm::openNTHandle`) and never closes the caller's handle; the NPU plugin never closes
//!   what it imports either (`ZeroMem::~ZeroMem` only calls `zeMemFree`).
//! - [`L0Context::import_nt_handle_owned`] takes the handle by value and keeps it open for as long
//!   as the allocation lives; it is closed exactly once, after `zeMemFree`.

use std::ffi::c_void;
use std::os::windows::io::{AsRawHandle, BorrowedHandle, OwnedHandle, RawHandle};
use std::sync::Arc;

use crate::error::{Error, Path, Reason, Result};
use crate::level_zero::{api, check, sys, L0Allocation, L0Context, L0Device};

impl L0Context {
    /// Imports an NT handle: `zeMemAllocDevice` on `device` (or `zeMemAllocHost` when `device` is
    /// `None`) with `ze_external_memory_import_win32_handle_t{OPAQUE_WIN32, handle}`, mapping
    /// `size` bytes of it.
    ///
    /// The handle is borrowed: the caller keeps it and may close it once this returns (see the
    /// module docs). `size` must not exceed the memory behind it.
    pub fn import_nt_handle(
        self: &Arc<Self>,
        device: Option<L0Device>,
        handle: BorrowedHandle<'_>,
        size: usize,
    ) -> Result<L0Allocation> {
        // SAFETY: a borrowed, open handle for the duration of the call; nothing is kept.
        unsafe { self.import_win32(device, handle.as_raw_handle(), size, None) }
    }

    /// Like [`import_nt_handle`](Self::import_nt_handle), but takes ownership of `handle`: it
    /// stays open while the allocation lives and is closed once, after `zeMemFree`. On error it is
    /// closed before this returns.
    pub fn import_nt_handle_owned(
        self: &Arc<Self>,
        device: Option<L0Device>,
        handle: OwnedHandle,
        size: usize,
    ) -> Result<L0Allocation> {
        let raw = handle.as_raw_handle();
        // SAFETY: `handle` is open and moves into the allocation.
        unsafe { self.import_win32(device, raw, size, Some(handle)) }
    }

    /// # Safety
    /// `handle` is open for the duration of the call; `keep` is `handle` itself or `None`.
    unsafe fn import_win32(
        self: &Arc<Self>,
        device: Option<L0Device>,
        handle: RawHandle,
        size: usize,
        keep: Option<OwnedHandle>,
    ) -> Result<L0Allocation> {
        let import = sys::ze_external_memory_import_win32_handle_t {
            stype: sys::ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMPORT_WIN32,
            pNext: std::ptr::null(),
            flags: sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32,
            handle,
            name: std::ptr::null(),
        };
        // SAFETY: one import descriptor whose handle is open (caller contract); `keep` is the caller's.
        unsafe { self.alloc_imported(device, std::ptr::addr_of!(import).cast(), size, keep) }
    }

    /// Exports the allocation of this context that starts at `ptr` as an NT handle the caller owns
    /// (`zeMemGetAllocProperties` with `ze_external_memory_export_win32_handle_t{OPAQUE_WIN32}`,
    /// duplicated: the driver's handle is closed by `zeMemFree`).
    ///
    /// # Errors
    /// [`Unsupported { path: NtHandle, reason: NotExportable }`](crate::ErrorKind::Unsupported)
    /// when the driver returns no handle (compute-runtime returns NULL for memory allocated without
    /// an export descriptor); the driver's error for a pointer that is no allocation of this context.
    // As memory_properties: the driver looks the address up, never dereferences it.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn export_nt_handle(&self, ptr: *const c_void) -> Result<OwnedHandle> {
        let api = api()?;
        let mut export = sys::ze_external_memory_export_win32_handle_t {
            stype: sys::ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_WIN32,
            pNext: std::ptr::null(),
            flags: sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32,
            handle: std::ptr::null_mut(),
        };
        let mut props = sys::ze_memory_allocation_properties_t {
            stype: sys::ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES,
            pNext: std::ptr::addr_of_mut!(export).cast(),
            ..Default::default()
        };
        let mut device = std::ptr::null_mut();
        // SAFETY: a live context; the driver only looks `ptr` up (any value is allowed); the chain is
        // one export struct alive for the call.
        let r = unsafe { api.zeMemGetAllocProperties(self.as_raw(), ptr, &mut props, &mut device) };
        check(r, "zeMemGetAllocProperties")?;
        if export.handle.is_null() {
            return Err(Error::unsupported(
                Path::NtHandle,
                Reason::NotExportable,
                "the driver returned no NT handle for the export: allocate the memory exportable \
                 (L0Context::alloc_device_exportable)",
            ));
        }
        // SAFETY: the driver's own open handle, valid while the allocation lives (the caller's
        // allocation is alive for this call); it is only duplicated, never closed here.
        let driver_owned = unsafe { BorrowedHandle::borrow_raw(export.handle) };
        driver_owned.try_clone_to_owned().map_err(|e| Error::io("duplicating the driver's NT handle", e))
    }
}

impl L0Allocation {
    /// Exports the allocation as an NT handle the caller owns and closes (a duplicate of the
    /// driver's, which `zeMemFree` closes). The allocation must have been made exportable
    /// ([`L0Context::alloc_device_exportable`], [`L0Context::alloc_host_exportable`]).
    pub fn export_nt_handle(&self) -> Result<OwnedHandle> {
        self.context().export_nt_handle(self.as_ptr())
    }
}
