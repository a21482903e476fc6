//! dma-buf export and import (Linux).
//!
//! **Who owns the fd** (the drivers differ; [`Driver::fd_rules`](super::Driver::fd_rules) says which
//! rule a driver follows, and these functions follow it):
//! - [`L0Allocation::export_dma_buf`] returns an [`OwnedFd`]: the caller owns it and closes it
//!   (dropping it does). Where the driver's export fd is its own (compute-runtime: one fd per
//!   allocation, closed by `zeMemFree`) the caller gets a duplicate; the NPU driver's export is a new
//!   fd already. The exported buffer stays valid while either the allocation or any fd to it (or
//!   any import of it) lives.
//! - [`L0Context::import_dma_buf`] borrows the fd: the driver makes its own reference to the buffer,
//!   so the caller keeps ownership and may close the fd after the call returns. A driver that closes
//!   what it imports (compute-runtime 26.14.37833 on) is given a duplicate.
//! - [`L0Context::import_dma_buf_owned`] takes the fd by value and keeps it open for as long as the
//!   allocation lives; it is closed exactly once, after `zeMemFree`. Use it when you do not want to
//!   rely on the driver's reference.

use std::ffi::c_void;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::sync::Arc;

use crate::error::{Error, Path, Reason, Result};
use crate::level_zero::{api, check, sys, L0Allocation, L0Context, L0Device};

impl L0Context {
    /// Imports a dma-buf: `zeMemAllocDevice` on `device` (or `zeMemAllocHost` when `device` is
    /// `None`) with `ze_external_memory_import_fd_t{DMA_BUF, fd}`, mapping `size` bytes of it.
    ///
    /// The fd is borrowed: the caller keeps it and may close it once this returns (see the
    /// module docs). `size` must not exceed the buffer.
    pub fn import_dma_buf(
        self: &Arc<Self>,
        device: Option<L0Device>,
        fd: BorrowedFd<'_>,
        size: usize,
    ) -> Result<L0Allocation> {
        // SAFETY: a borrowed, open fd for the duration of the call; nothing is kept.
        unsafe { self.import_fd(device, fd.as_raw_fd(), size, None) }
    }

    /// Like [`import_dma_buf`](Self::import_dma_buf), but takes ownership of `fd`: it stays open
    /// while the allocation lives and is closed once, after `zeMemFree`. On error it is closed
    /// before this returns.
    pub fn import_dma_buf_owned(
        self: &Arc<Self>,
        device: Option<L0Device>,
        fd: OwnedFd,
        size: usize,
    ) -> Result<L0Allocation> {
        let raw = fd.as_raw_fd();
        // SAFETY: `fd` is open and moves into the allocation.
        unsafe { self.import_fd(device, raw, size, Some(fd)) }
    }

    /// # Safety
    /// `fd` is open for the duration of the call; `keep` is `fd` itself or `None`.
    unsafe fn import_fd(
        self: &Arc<Self>,
        device: Option<L0Device>,
        fd: i32,
        size: usize,
        keep: Option<OwnedFd>,
    ) -> Result<L0Allocation> {
        // A driver that closes the fd of a successful import gets a duplicate of ours; on failure the
        // duplicate is still ours and closes when `given` drops.
        let mut given = None;
        if self.driver().fd_rules()?.import_closes_fd {
            // SAFETY: `fd` is open for the duration of the call (caller contract).
            given = Some(dup_fd(unsafe { BorrowedFd::borrow_raw(fd) })?);
        }
        let import = sys::ze_external_memory_import_fd_t {
            stype: sys::ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_IMPORT_FD,
            pNext: std::ptr::null(),
            flags: sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF,
            fd: given.as_ref().map_or(fd, |g| g.as_raw_fd()),
        };
        // SAFETY: one import descriptor whose fd is open (caller contract); `keep` is the caller's.
        let result = unsafe { self.alloc_imported(device, std::ptr::addr_of!(import).cast(), size, keep) };
        if let (Ok(_), Some(g)) = (&result, given) {
            // The driver closed it.
            let _ = g.into_raw_fd();
        }
        result
    }
}

/// `fcntl(F_DUPFD_CLOEXEC)`: a new fd for the same open file, owned by the caller. Use it to give
/// an fd away (to the NPU's import, which takes it by value) while keeping yours.
pub fn dup_fd(fd: BorrowedFd<'_>) -> Result<OwnedFd> {
    fd.try_clone_to_owned().map_err(|e| Error::io(format!("duplicating fd {}", fd.as_raw_fd()), e))
}

impl L0Allocation {
    /// Exports the allocation as a dma-buf fd (`zeMemGetAllocProperties` with
    /// `ze_external_memory_export_fd_t{DMA_BUF}`). Each call returns a new fd that the caller owns
    /// and closes (a duplicate where the driver keeps its export fd). On the NPU driver the
    /// allocation must have been made exportable ([`L0Context::alloc_host_exportable`],
    /// [`L0Context::alloc_device_exportable`]) or be a dma-buf import.
    pub fn export_dma_buf(&self) -> Result<OwnedFd> {
        self.context().export_dma_buf(self.as_ptr())
    }
}

impl L0Context {
    /// Exports the allocation of this context that starts at `ptr` as a dma-buf fd the caller owns
    /// (`zeMemGetAllocProperties` with `ze_external_memory_export_fd_t{DMA_BUF}`; a duplicate where
    /// the driver keeps its own export fd). The NPU driver exports only buffer objects allocated
    /// with an export descriptor and its dma-buf imports, a new fd per call; any other allocation is
    /// `NOT_AVAILABLE` (linux-npu-driver 1.32.1 `L0Context::getMemAllocProperties`,
    /// `VPUBufferObject::exportToFd`). compute-runtime exports any host or device allocation (pooled
    /// USM exports its pool's buffer: allocate exportable to get one of its own) and no shared USM.
    ///
    /// # Errors
    /// [`Unsupported { path: DmaBuf, reason: NotExportable }`](crate::ErrorKind::Unsupported) when the driver returns no
    /// fd; the driver's error for a pointer that is no allocation of this context.
    // As memory_properties: the driver looks the address up, never dereferences it.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub fn export_dma_buf(&self, ptr: *const c_void) -> Result<OwnedFd> {
        let api = api()?;
        // Who owns the fd is known before the driver makes one: nothing can fail between the export
        // and taking ownership of it (a failure there would leak the fd).
        let driver_owns_fd = self.driver().fd_rules()?.export_fd_owned_by_driver;
        let mut export = sys::ze_external_memory_export_fd_t {
            stype: sys::ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_FD,
            pNext: std::ptr::null(),
            flags: sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF,
            fd: -1,
        };
        let mut props = sys::ze_memory_allocation_properties_t {
            stype: sys::ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES,
            pNext: std::ptr::addr_of_mut!(export).cast(),
            ..Default::default()
        };
        let mut device = std::ptr::null_mut();
        // SAFETY: a live context; the driver only looks `ptr` up (any value is allowed); the chain is
        // one export-fd struct alive for the call.
        let r = unsafe { api.zeMemGetAllocProperties(self.as_raw(), ptr, &mut props, &mut device) };
        check(r, "zeMemGetAllocProperties")?;
        if export.fd < 0 {
            return Err(Error::unsupported(
                Path::DmaBuf,
                Reason::NotExportable,
                "the driver returned no fd for the export",
            ));
        }
        if driver_owns_fd {
            // SAFETY: the driver's own open fd, valid while the allocation lives (the caller's
            // allocation is alive for this call); we duplicate it at once.
            return dup_fd(unsafe { BorrowedFd::borrow_raw(export.fd) });
        }
        // SAFETY: this driver returned a new fd that the caller (we) owns (module docs).
        Ok(unsafe { OwnedFd::from_raw_fd(export.fd) })
    }
}
