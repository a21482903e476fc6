//! Memory the NPU can use: one sealed trait, [`NpuMemory`], for every kind of memory a program may
//! already own, and one call, [`NpuContext::import`](crate::npu::NpuContext::import), that turns
//! any of them into an NPU tensor with the crate's checks in one place.
//!
//! | memory | [`MemoryKind`] | how the NPU imports it (`MEM_TYPE`) | host views of the tensor | its owner once imported |
//! |--------|----------------|-------------------------------------|--------------------------|-------------------------|
//! | [`PageAlignedBuffer`] | `PageAligned` | CPU_VA (NPU 40xx+) | yes | the tensor |
//! | `OwnedFd` of a dma-buf (Linux) | `DmaBuf` | SHARED_BUF | no: the exporter may still write it | the tensor keeps the fd open and closes it once |
//! | `NtHandleMemory` (Windows) | `NtHandle` | SHARED_BUF | no: the exporter may still write it | the tensor keeps the handle open and closes it once |
//! | [`L0Allocation`] host/shared | `LevelZero(..)` | CPU_VA | yes | the tensor |
//! | [`L0Allocation`] device (exportable) | `LevelZero(Device)` | SHARED_BUF of a fresh export | no: the driver's export may be imported elsewhere | the tensor (allocation and the export's fd or handle) |
//! | [`RawMemory`] (`unsafe`) | `Raw` | CPU_VA | yes (the caller promised exclusivity) | the keep-alive the caller gave |
//! | `sycl::UsmBuffer` host/shared | `SyclUsm(..)` | CPU_VA | yes | the tensor |
//! | `sycl::ExportableDeviceMemory` | `SyclExportable` | SHARED_BUF of a fresh export | yes, unless the program exported it itself | the tensor (allocation and the export's fd) |
//!
//! CPU_VA needs a page-aligned pointer and a page-multiple tensor size, exists only where the NPU
//! driver imports system memory ([`NpuCapabilities::sysmem_import`](crate::npu::NpuCapabilities::sysmem_import)),
//! and on real Intel laptops cannot pin the GPU driver's USM (SYCL or Level Zero host/shared
//! memory): the import then fails with [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)
//! naming dma-buf as the way that works. SHARED_BUF needs the driver's `DMA_BUF` import type on
//! Linux and `OPAQUE_WIN32` on Windows. SYCL device USM and Level Zero device memory that was not
//! allocated exportable have no CPU address, no fd and no NT handle: they are refused with the reason.
#[cfg(unix)]
use std::os::fd::{AsRawFd, OwnedFd};
use std::ptr::NonNull;

use crate::error::{Error, Path, Reason, Result};
use crate::level_zero::{self, L0Allocation};
use crate::openvino::{KeepAlive, MemType};

#[cfg(unix)]
mod fd;
#[cfg(windows)]
mod nt_handle;
mod page_aligned;
mod shared_handle;
mod size;

#[cfg(unix)]
pub(crate) use self::fd::{check_open, fd_buffer};
#[cfg(windows)]
pub use self::nt_handle::NtHandleMemory;
pub use self::page_aligned::{PageAlignedBuffer, PAGE_SIZE};
#[cfg(feature = "sycl")]
pub(crate) use self::shared_handle::{handle_value, owned_from_value};
pub(crate) use self::shared_handle::{OwnedShared, SharedHandle};
pub(crate) use self::size::{round_up_to_page, tensor_bytes};

/// Memory the NPU can use: turned into an NPU tensor by
/// [`NpuContext::import`](crate::npu::NpuContext::import). Sealed: implemented for the kinds in the
/// [module table](self), each of which knows how the NPU imports it and who owns it.
pub trait NpuMemory: sealed::Sealed + Send + Sync + 'static {
    /// What kind of memory this is.
    fn memory_kind(&self) -> MemoryKind;
    /// The bytes the NPU may use.
    fn byte_len(&self) -> usize;
}

/// The kinds of memory [`NpuMemory`] covers.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// A [`PageAlignedBuffer`].
    PageAligned,
    /// A dma-buf fd from any exporter (a GPU driver, a camera, a video decoder).
    DmaBuf,
    /// An NT handle to shareable memory (Windows: a GPU driver's `OPAQUE_WIN32` export).
    NtHandle,
    /// A Level Zero allocation of this kind.
    LevelZero(level_zero::MemoryType),
    /// [`RawMemory`]: a pointer, a length and a keep-alive from the caller.
    Raw,
    /// SYCL USM of this kind.
    #[cfg(feature = "sycl")]
    SyclUsm(crate::sycl::UsmKind),
    /// SYCL exportable device memory (`alloc_exportable_device_mem`).
    #[cfg(feature = "sycl")]
    SyclExportable,
}

impl MemoryKind {
    /// How the NPU imports this kind (`None`: it cannot).
    pub fn mem_type(self) -> Option<MemType> {
        match self {
            MemoryKind::PageAligned | MemoryKind::Raw => Some(MemType::CpuVa),
            MemoryKind::DmaBuf | MemoryKind::NtHandle => Some(MemType::SharedBuf),
            MemoryKind::LevelZero(k) if k.is_host_accessible() => Some(MemType::CpuVa),
            MemoryKind::LevelZero(level_zero::MemoryType::Device) => Some(MemType::SharedBuf),
            MemoryKind::LevelZero(_) => None,
            #[cfg(feature = "sycl")]
            MemoryKind::SyclUsm(k) => k.is_host_accessible().then_some(MemType::CpuVa),
            #[cfg(feature = "sycl")]
            MemoryKind::SyclExportable => Some(MemType::SharedBuf),
        }
    }
}

/// Memory given as a pointer, a length and the owner that keeps it alive: the `unsafe` way in for
/// memory no other [`NpuMemory`] kind covers. The NPU imports it as CPU_VA.
pub struct RawMemory {
    ptr: NonNull<u8>,
    len: usize,
    // Held, never read: the tensor holds the whole `RawMemory`, and so the memory's owner.
    _keepalive: Option<KeepAlive>,
}

// SAFETY: the constructor's contract makes the memory usable from any thread; the keep-alive is
// `Send + Sync`.
unsafe impl Send for RawMemory {}
// SAFETY: as above; `&RawMemory` gives no access to the bytes.
unsafe impl Sync for RawMemory {}

impl std::fmt::Debug for RawMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawMemory").field("ptr", &self.ptr).field("len", &self.len).finish()
    }
}

impl RawMemory {
    /// `len` bytes at `ptr`, kept alive by `keepalive` (dropped only after OpenVINO freed every
    /// tensor over the memory and every request that bound one let go of it).
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a null `ptr`.
    ///
    /// # Safety
    /// - `ptr` is valid for reads and writes of `len` bytes until `keepalive` is dropped (with
    ///   `None`: until every tensor over it and every request that bound one are dropped);
    /// - nothing else accesses the memory while an inference that uses it runs, no Rust reference
    ///   to it is alive while a tensor's host views or the device write it, and nothing else
    ///   writes it while a host view of a tensor over it is alive.
    pub unsafe fn new(ptr: *mut u8, len: usize, keepalive: Option<KeepAlive>) -> Result<RawMemory> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::invalid_argument("CPU_VA: the pointer is null"))?;
        Ok(RawMemory { ptr, len, _keepalive: keepalive })
    }
}

/// The SYCL side of a tensor imported from SYCL memory: what
/// [`SharedTensor`](crate::strategy::SharedTensor) needs to reach it from a queue.
#[cfg(feature = "sycl")]
#[derive(Clone)]
pub(crate) struct SyclOrigin {
    /// The SYCL pointer (an address: the tensor keeps the memory alive).
    pub(crate) addr: usize,
    pub(crate) context: std::sync::Arc<crate::sycl::SyclContext>,
    pub(crate) kind: MemoryKind,
    /// The memory's size in bytes.
    pub(crate) len: usize,
}

pub(crate) use self::sealed::Region;

pub(crate) mod sealed {
    use super::*;

    /// Where the NPU finds the memory: what [`NpuContext::import`](crate::npu::NpuContext::import)
    /// needs from each kind.
    pub enum Region {
        /// CPU-addressable memory, imported as CPU_VA.
        Host { ptr: NonNull<u8>, len: usize },
        /// Shareable memory (a dma-buf fd, an NT handle), imported as SHARED_BUF: a handle that is
        /// open for the import (owned by the import when it is a fresh export, else kept open by
        /// the memory), and the bytes that may be used.
        Shared { handle: SharedHandle, len: usize },
    }

    /// How the crate imports each kind: the [`Region`], whether a tensor over it may have host
    /// views, and, for SYCL memory, the SYCL side of it.
    pub trait Sealed {
        /// The region to import.
        fn region(&self) -> Result<Region>;
        /// Whether, once the memory is moved into a tensor, nothing but the tensor can write it:
        /// then the tensor may have host views.
        fn exclusive(&self) -> bool;
        /// The Level Zero context the memory was allocated in, for Level Zero allocations.
        fn level_zero_context(&self) -> Option<usize> {
            None
        }
        /// Checks made before the memory is wrapped (an fd that is not open).
        fn check(&self) -> Result<()> {
            Ok(())
        }
        /// Drops memory that failed [`check`](Self::check) without releasing what it does not own.
        fn discard(self)
        where
            Self: Sized,
        {
        }
        /// The SYCL pointer and context of SYCL memory.
        #[cfg(feature = "sycl")]
        fn sycl(&self) -> Option<(NonNull<u8>, std::sync::Arc<crate::sycl::SyclContext>)> {
            None
        }
    }
}

impl sealed::Sealed for PageAlignedBuffer {
    fn region(&self) -> Result<Region> {
        let ptr = NonNull::new(self.as_ptr().cast_mut().cast::<u8>()).expect("a mapping is never null");
        Ok(Region::Host { ptr, len: self.len() })
    }
    fn exclusive(&self) -> bool {
        true
    }
}
impl NpuMemory for PageAlignedBuffer {
    fn memory_kind(&self) -> MemoryKind {
        MemoryKind::PageAligned
    }
    fn byte_len(&self) -> usize {
        self.len()
    }
}

#[cfg(unix)]
impl sealed::Sealed for OwnedFd {
    fn region(&self) -> Result<Region> {
        // The import measures the buffer behind the fd; nothing smaller limits it.
        Ok(Region::Shared { handle: SharedHandle::Borrowed(self.as_raw_fd()), len: usize::MAX })
    }
    fn exclusive(&self) -> bool {
        false
    }
    fn check(&self) -> Result<()> {
        check_open(self.as_raw_fd())
    }
    fn discard(self) {
        // Not open: closing it would close someone else's fd number (or trip std's I/O-safety
        // check), so forget it.
        let _ = std::os::fd::IntoRawFd::into_raw_fd(self);
    }
}
#[cfg(unix)]
impl NpuMemory for OwnedFd {
    fn memory_kind(&self) -> MemoryKind {
        MemoryKind::DmaBuf
    }
    /// The size of the buffer behind the fd (0 if it cannot be found out).
    fn byte_len(&self) -> usize {
        fd_buffer(self.as_raw_fd()).map_or(0, |(len, _)| len)
    }
}

impl sealed::Sealed for L0Allocation {
    fn region(&self) -> Result<Region> {
        let kind = self.kind();
        if kind.is_host_accessible() {
            let ptr = NonNull::new(self.as_ptr().cast::<u8>()).expect("an allocation is never null");
            return Ok(Region::Host { ptr, len: self.len() });
        }
        if kind == level_zero::MemoryType::Device {
            let handle = self.export_shared().map_err(|e| {
                Error::unsupported(
                    Path::SHARED_HANDLE,
                    Reason::NotExportable,
                    format!(
                        "Level Zero device memory reaches the NPU only as {}, and this allocation cannot be \
                         exported: allocate it with Context::alloc_device_exportable",
                        Path::SHARED_HANDLE.as_str()
                    ),
                )
                .with_source(e)
            })?;
            return Ok(Region::Shared { handle: SharedHandle::Owned(handle), len: self.len() });
        }
        Err(Error::invalid_argument(format!("a Level Zero allocation of kind {kind:?} cannot be imported by the NPU")))
    }
    fn exclusive(&self) -> bool {
        // Device memory is reached through an export that the program could also make.
        self.kind().is_host_accessible()
    }
    fn level_zero_context(&self) -> Option<usize> {
        Some(self.context().as_raw() as usize)
    }
}
impl NpuMemory for L0Allocation {
    fn memory_kind(&self) -> MemoryKind {
        MemoryKind::LevelZero(self.kind())
    }
    fn byte_len(&self) -> usize {
        self.len()
    }
}

/// NPU memory made exportable in the crate's own NPU context
/// ([`NpuContext::export_context`](crate::npu::NpuContext::export_context)), imported by the
/// plugin as SHARED_BUF through a fresh export (its own kernel handle in the plugin's context).
/// Only the shared tensor that made it reaches it (its SYCL side is that tensor's), so host views
/// are allowed.
#[cfg(feature = "sycl")]
pub(crate) struct NpuExportable(pub(crate) L0Allocation);

#[cfg(feature = "sycl")]
impl sealed::Sealed for NpuExportable {
    fn region(&self) -> Result<Region> {
        Ok(Region::Shared { handle: SharedHandle::Owned(self.0.export_shared()?), len: self.0.len() })
    }
    fn exclusive(&self) -> bool {
        true
    }
}
#[cfg(feature = "sycl")]
impl NpuMemory for NpuExportable {
    fn memory_kind(&self) -> MemoryKind {
        MemoryKind::LevelZero(self.0.kind())
    }
    fn byte_len(&self) -> usize {
        self.0.len()
    }
}

impl sealed::Sealed for RawMemory {
    fn region(&self) -> Result<Region> {
        Ok(Region::Host { ptr: self.ptr, len: self.len })
    }
    fn exclusive(&self) -> bool {
        true
    }
}
impl NpuMemory for RawMemory {
    fn memory_kind(&self) -> MemoryKind {
        MemoryKind::Raw
    }
    fn byte_len(&self) -> usize {
        self.len
    }
}

#[cfg(feature = "sycl")]
mod sycl_kinds {
    use std::sync::Arc;

    use super::*;
    use crate::sycl::{self, ExportableDeviceMemory, SyclMemory, UsmBuffer};

    impl sealed::Sealed for UsmBuffer {
        fn region(&self) -> Result<Region> {
            if !self.kind().is_host_accessible() {
                return Err(Error::unsupported(
                    Path::CpuVa,
                    Reason::NoHostAddress,
                    "SYCL device USM has no CPU address the NPU could import and no fd: use host or shared USM \
                     (CPU_VA) or SYCL exportable device memory (a dma-buf)",
                ));
            }
            let ptr = NonNull::new(self.as_ptr().cast_mut()).expect("a UsmBuffer is never null");
            Ok(Region::Host { ptr, len: self.len() })
        }
        fn exclusive(&self) -> bool {
            true
        }
        fn sycl(&self) -> Option<(NonNull<u8>, Arc<sycl::SyclContext>)> {
            NonNull::new(self.as_ptr().cast_mut()).map(|p| (p, Arc::clone(self.context())))
        }
    }
    impl NpuMemory for UsmBuffer {
        fn memory_kind(&self) -> MemoryKind {
            MemoryKind::SyclUsm(self.kind())
        }
        fn byte_len(&self) -> usize {
            self.len()
        }
    }

    impl sealed::Sealed for ExportableDeviceMemory {
        fn region(&self) -> Result<Region> {
            let fd = self.export_for_import()?;
            Ok(Region::Shared { handle: SharedHandle::Owned(fd), len: self.len() })
        }
        fn exclusive(&self) -> bool {
            !self.was_exported()
        }
        fn sycl(&self) -> Option<(NonNull<u8>, Arc<sycl::SyclContext>)> {
            NonNull::new(self.as_ptr().cast_mut()).map(|p| (p, Arc::clone(self.context())))
        }
    }
    impl NpuMemory for ExportableDeviceMemory {
        fn memory_kind(&self) -> MemoryKind {
            MemoryKind::SyclExportable
        }
        fn byte_len(&self) -> usize {
            self.len()
        }
    }
}
