//! Export of SYCL device memory and import into SYCL of a dma-buf fd (Linux) or an NT handle
//! (Windows).
//!
//! # Who closes which handle
//! - `ExportableDeviceMemory::export_dma_buf` (`export_nt_handle`) returns a **new** fd (NT handle)
//!   per call as an `OwnedFd` (`OwnedHandle`): the caller owns it and it is closed when that value is
//!   dropped (or by whoever the caller hands it to). It is a duplicate: the runtime's own belongs to
//!   the GPU driver (compute-runtime keeps one per allocation and closes it when the memory is freed).
//! - `ImportedMemory::import_dma_buf` (`import_nt_handle`) takes the handle **by value** and keeps it
//!   open until after `unmap_external_linear_memory` and `release_external_memory` have run in
//!   `Drop`; then it closes it. A GPU driver that closes imported fds (compute-runtime 26.14.37833 on,
//!   Linux) is given a duplicate, so this fd is never closed twice; on Windows compute-runtime never
//!   closes an imported handle. Pass a `try_clone()` if you need to keep one.

use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use cxx::UniquePtr;

use super::ffi::bridge;
use super::usm::check_allocation;
use super::{sycl_error, Error, Result, SyclContext, SyclDevice};
use crate::memory::{handle_value, owned_from_value, OwnedShared};

/// Device memory allocated with `alloc_exportable_device_mem(…, external_mem_handle_type::dma_buf, …)`
/// and freed with `free_exportable_memory` in `Drop`. Host code reaches it only through a
/// [`Queue`](super::Queue) or through an exported dma-buf.
pub struct ExportableDeviceMemory {
    ptr: NonNull<u8>,
    len: usize,
    alignment: usize,
    device_slot: usize,
    device: SyclDevice,
    context: Arc<SyclContext>,
    /// Set once the program exported it: another owner may then reach the pages.
    exported: AtomicBool,
    /// Memory the program allocated ([`from_raw`](ExportableDeviceMemory::from_raw)): dropping this
    /// owner releases it, instead of the free here.
    owner: Option<crate::ownership::KeepAlive>,
}

// SAFETY: the value exclusively owns its allocation; the bridge calls it makes (export, free) take the
// context and device by `const&` and are thread-safe in SYCL; the context is `Send + Sync`.
unsafe impl Send for ExportableDeviceMemory {}
// SAFETY: `&self` only exports (a runtime query) or reads through a queue that waits.
unsafe impl Sync for ExportableDeviceMemory {}

impl fmt::Debug for ExportableDeviceMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExportableDeviceMemory").field("ptr", &self.ptr).field("len", &self.len).finish()
    }
}

impl ExportableDeviceMemory {
    /// Allocates `len` bytes of exportable device memory on `device` (one of `context`'s devices),
    /// aligned to `alignment` (a power of two, or 0 for the runtime's default).
    pub fn new(context: &Arc<SyclContext>, device: &SyclDevice, len: usize, alignment: usize) -> Result<Self> {
        let (device_slot, sd) = check_allocation("ExportableDeviceMemory", context, device, len, alignment)?;
        let p = bridge::alloc_exportable_device_mem(len, alignment, sd, context.raw())
            .map_err(sycl_error("alloc_exportable_device_mem"))?;
        let ptr = NonNull::new(p).ok_or_else(|| Error::sycl("alloc_exportable_device_mem returned nullptr"))?;
        Ok(ExportableDeviceMemory {
            ptr,
            len,
            alignment,
            device_slot,
            device: device.clone(),
            context: Arc::clone(context),
            exported: AtomicBool::new(false),
            owner: None,
        })
    }

    /// Exportable device memory the program allocated itself (`alloc_exportable_device_mem` on
    /// `device` in `context`). It is never freed here: `owner` is dropped instead, once nothing
    /// uses the memory (its `Drop` is the program's release callback).
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a null pointer, a zero length, a
    /// device that is not one of the context's, or memory the context does not know as device memory
    /// (host or shared USM, plain process memory: `get_pointer_type` tells, before anything exports it).
    ///
    /// # Safety
    /// `ptr` is `len` bytes of exportable device memory of `device` in `context`, valid until
    /// `owner` is dropped, and nothing else writes it while an inference or a SYCL copy of the
    /// crate uses it.
    pub(crate) unsafe fn from_raw(
        context: &Arc<SyclContext>,
        device: &SyclDevice,
        ptr: *mut u8,
        len: usize,
        owner: crate::ownership::KeepAlive,
    ) -> Result<Self> {
        let ptr = NonNull::new(ptr)
            .ok_or_else(|| Error::invalid_argument("ExportableDeviceMemory::from_raw: the pointer is null"))?;
        if len == 0 {
            return Err(Error::invalid_argument("ExportableDeviceMemory::from_raw: the length is 0"));
        }
        let (device_slot, _) = context.sycl_device(device)?;
        match context.pointer_kind(ptr.as_ptr().cast())? {
            Some(super::UsmKind::Device) => {}
            kind => {
                return Err(Error::invalid_argument(format!(
                    "ExportableDeviceMemory::from_raw: {ptr:p} is {} in this SYCL context, not device memory; \
                     allocate it with alloc_exportable_device_mem (or hand host memory over as page-aligned \
                     host memory instead)",
                    kind.map_or("unknown memory".to_string(), |k| format!("{k:?} USM"))
                )));
            }
        }
        Ok(ExportableDeviceMemory {
            ptr,
            len,
            alignment: 0,
            device_slot,
            device: device.clone(),
            context: Arc::clone(context),
            exported: AtomicBool::new(false),
            owner: Some(owner),
        })
    }

    /// `export_device_mem_handle<external_mem_handle_type::dma_buf>`: a new dma-buf fd for the whole
    /// allocation. The caller owns it and closes it (by dropping the
    /// `OwnedFd`); the allocation neither keeps it open nor needs it to stay open.
    ///
    /// Once exported, the pages have another way in, so an NPU tensor imported from this memory
    /// afterwards has no host views.
    #[cfg(unix)]
    pub fn export_dma_buf(&self) -> Result<std::os::fd::OwnedFd> {
        let fd = self.export_for_import()?;
        self.exported.store(true, Ordering::Release);
        Ok(fd)
    }

    /// `export_device_mem_handle<external_mem_handle_type::win32_nt_handle>` (Windows): a new NT
    /// handle for the whole allocation, which the caller owns, as `export_dma_buf` on Linux.
    #[cfg(windows)]
    pub fn export_nt_handle(&self) -> Result<std::os::windows::io::OwnedHandle> {
        let h = self.export_for_import()?;
        self.exported.store(true, Ordering::Release);
        Ok(h)
    }

    /// Whether the program exported the memory (`export_dma_buf` / `export_nt_handle`).
    pub(crate) fn was_exported(&self) -> bool {
        self.exported.load(Ordering::Acquire)
    }

    /// An export made by the crate for the NPU import, which the import owns.
    pub(crate) fn export_for_import(&self) -> Result<OwnedShared> {
        let sd = self.context.sycl_device_at(self.device_slot);
        // SAFETY: `ptr` is a live exportable allocation of this context and device.
        let value = unsafe { bridge::export_shared_handle(self.ptr.as_ptr(), sd, self.context.raw()) }
            .map_err(sycl_error("export_device_mem_handle"))?;
        // SAFETY: the shim returns a duplicate it made of the runtime's handle (which stays the GPU
        // driver's, closed when the memory is freed); nobody else holds or closes the duplicate.
        Ok(unsafe { owned_from_value(value) })
    }

    /// The alignment asked for.
    pub fn alignment(&self) -> usize {
        self.alignment
    }

    /// The device the memory lives on.
    pub fn device(&self) -> &SyclDevice {
        &self.device
    }
}

sycl_memory!(ExportableDeviceMemory);

impl Drop for ExportableDeviceMemory {
    fn drop(&mut self) {
        if self.owner.is_some() {
            // The program's memory: its owner (dropped with this value) releases it.
            return;
        }
        let sd = self.context.sycl_device_at(self.device_slot);
        // SAFETY: `ptr` was allocated by `alloc_exportable_device_mem` on this device and context, is
        // freed exactly once (here), and the context is alive (we hold an Arc).
        if let Err(e) = unsafe { bridge::free_exportable_device_mem(self.ptr.as_ptr(), sd, self.context.raw()) } {
            self.context.defer_error(Error::sycl(format!("free_exportable_memory of {:p}: {}", self.ptr, e.what())));
        }
    }
}

/// A dma-buf (NT handle) imported into SYCL (`import_external_memory` + `map_external_linear_memory`):
/// device memory of the context, reached through a [`Queue`](super::Queue). `Drop` unmaps and
/// releases, then closes the handle.
pub struct ImportedMemory {
    // Drop order: `raw` is released explicitly in `Drop::drop`, then freed; the handle closes after it.
    raw: UniquePtr<bridge::SyclImported>,
    ptr: NonNull<u8>,
    len: usize,
    device_slot: usize,
    device: SyclDevice,
    handle: OwnedShared,
    context: Arc<SyclContext>,
}

// SAFETY: the value exclusively owns the import and the fd; the C++ object is only touched through
// `&`/`Pin<&mut>` from `&self`/`&mut self` methods and `Drop`, and SYCL's release calls are thread-safe.
unsafe impl Send for ImportedMemory {}
// SAFETY: `&self` methods only read the mapped pointer value or copy out through a queue that waits.
unsafe impl Sync for ImportedMemory {}

impl fmt::Debug for ImportedMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImportedMemory")
            .field("ptr", &self.ptr)
            .field("len", &self.len)
            .field("handle", &self.handle)
            .finish()
    }
}

impl ImportedMemory {
    /// Imports the first `len` bytes of the dma-buf `fd` on `device` (one of `context`'s devices) and
    /// maps them linearly. Takes the fd by value: it stays open until the import has been released in
    /// `Drop`, then it is closed (also on `Err`).
    #[cfg(unix)]
    pub fn import_dma_buf(
        context: &Arc<SyclContext>,
        device: &SyclDevice,
        fd: std::os::fd::OwnedFd,
        len: usize,
    ) -> Result<Self> {
        Self::import(context, device, fd, len)
    }

    /// Imports the first `len` bytes behind the NT handle `handle` (Windows), as `import_dma_buf`
    /// does an fd on Linux; the handle is closed once, after the import is released (also on `Err`).
    #[cfg(windows)]
    pub fn import_nt_handle(
        context: &Arc<SyclContext>,
        device: &SyclDevice,
        handle: std::os::windows::io::OwnedHandle,
        len: usize,
    ) -> Result<Self> {
        Self::import(context, device, handle, len)
    }

    /// Imports this OS's shareable-memory handle (what the NPU export path hands SYCL).
    pub(crate) fn import(
        context: &Arc<SyclContext>,
        device: &SyclDevice,
        handle: OwnedShared,
        len: usize,
    ) -> Result<Self> {
        if len == 0 {
            return Err(Error::invalid_argument("ImportedMemory: zero-length import"));
        }
        context.check_deferred()?;
        let (device_slot, sd) = context.sycl_device(device)?;
        // SAFETY: `handle` is owned here and stays open until after the import is released in `Drop`
        // (it is a field of the result), or until this returns on error.
        let mut raw = unsafe { bridge::import_shared_handle(handle_value(&handle), len, sd, context.raw()) }
            .map_err(sycl_error("import_external_memory / map_external_linear_memory"))?;
        let (p, size) = (bridge::imported_ptr(&raw), bridge::imported_size(&raw));
        match NonNull::new(p) {
            Some(ptr) if size == len => Ok(ImportedMemory {
                raw,
                ptr,
                len,
                device_slot,
                device: device.clone(),
                handle,
                context: Arc::clone(context),
            }),
            _ => {
                // Not a usable mapping: release the import before the handle closes (no leak on this path).
                let _ = bridge::release_imported(raw.pin_mut(), sd, context.raw());
                Err(Error::sycl(format!("map_external_linear_memory returned {p:p} for {size} of {len} bytes")))
            }
        }
    }

    /// The imported fd (still owned by this value).
    #[cfg(unix)]
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.handle.as_fd()
    }

    /// The imported NT handle (still owned by this value).
    #[cfg(windows)]
    pub fn handle(&self) -> std::os::windows::io::BorrowedHandle<'_> {
        use std::os::windows::io::AsHandle;
        self.handle.as_handle()
    }

    /// The device the memory is mapped on.
    pub fn device(&self) -> &SyclDevice {
        &self.device
    }
}

sycl_memory!(ImportedMemory);

impl Drop for ImportedMemory {
    fn drop(&mut self) {
        let sd = self.context.sycl_device_at(self.device_slot);
        if let Err(e) = bridge::release_imported(self.raw.pin_mut(), sd, self.context.raw()) {
            self.context.defer_error(Error::sycl(format!("releasing imported memory: {}", e.what())));
        }
        // `raw`, then `handle` (closed only now, after the release), then the context Arc drop after this.
    }
}
