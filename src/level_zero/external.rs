//! External memory: the import and export types, and the OS's handles to shareable memory —
//! dma-buf fds on Linux (`external/dma_buf.rs`), NT handles on Windows (`external/nt_handle.rs`). Each module says who
//! owns and closes each handle, following what the drivers do.

use std::fmt;
use std::sync::Arc;

use super::{sys, L0Allocation, L0Context, L0Device};
use crate::error::{Error, Path, Reason, Result};
use crate::memory::OwnedShared;

#[cfg(unix)]
mod dma_buf;
#[cfg(windows)]
mod nt_handle;

#[cfg(unix)]
pub use self::dma_buf::dup_fd;

/// `ze_external_memory_type_flags_t`.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ExternalMemoryTypes(u32);

impl ExternalMemoryTypes {
    /// No type.
    pub const NONE: Self = Self(0);
    /// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD`.
    pub const OPAQUE_FD: Self = Self(sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD);
    /// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF`: Linux dma-buf fds.
    pub const DMA_BUF: Self = Self(sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF);
    /// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32`: Windows NT handles.
    pub const OPAQUE_WIN32: Self = Self(sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_WIN32);
    /// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_D3D12_HEAP`: D3D12 heaps (NT handles).
    pub const D3D12_HEAP: Self = Self(sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_D3D12_HEAP);
    /// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_D3D12_RESOURCE`: D3D12 resources (NT handles).
    pub const D3D12_RESOURCE: Self = Self(sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_D3D12_RESOURCE);
    /// The handle type of shareable memory on this OS: [`DMA_BUF`](Self::DMA_BUF) on Linux,
    /// [`OPAQUE_WIN32`](Self::OPAQUE_WIN32) on Windows.
    pub const SHARED_HANDLE: Self = if cfg!(windows) { Self::OPAQUE_WIN32 } else { Self::DMA_BUF };
    /// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_STANDARD_ALLOCATION` (0x100): ordinary page-aligned process
    /// memory (the NPU's system-memory import, OpenVINO's CPU_VA).
    pub const STANDARD_ALLOCATION: Self = Self(sys::ZE_EXTERNAL_MEMORY_TYPE_FLAG_STANDARD_ALLOCATION);

    /// From raw bits.
    pub fn from_bits(bits: u32) -> Self {
        Self(bits)
    }
    /// The raw bits.
    pub fn bits(&self) -> u32 {
        self.0
    }
    /// Whether every flag of `other` is set.
    pub fn contains(&self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for ExternalMemoryTypes {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl fmt::Debug for ExternalMemoryTypes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names = Vec::new();
        let mut known = 0;
        for (flag, name) in [
            (Self::OPAQUE_FD, "OPAQUE_FD"),
            (Self::OPAQUE_WIN32, "OPAQUE_WIN32"),
            (Self::D3D12_HEAP, "D3D12_HEAP"),
            (Self::D3D12_RESOURCE, "D3D12_RESOURCE"),
            (Self::DMA_BUF, "DMA_BUF"),
            (Self::STANDARD_ALLOCATION, "STANDARD_ALLOCATION"),
        ] {
            known |= flag.0;
            if self.contains(flag) {
                names.push(name.to_string());
            }
        }
        let rest = self.0 & !known;
        if rest != 0 {
            names.push(format!("{rest:#x}"));
        }
        write!(f, "ExternalMemoryTypes({})", if names.is_empty() { "NONE".into() } else { names.join("|") })
    }
}

impl L0Context {
    /// `zeMemAllocDevice` with `ze_external_memory_export_desc_t{DMA_BUF}` (`{OPAQUE_WIN32}` on
    /// Windows): device memory that `L0Allocation::export_dma_buf` (`export_nt_handle`) can export.
    /// compute-runtime makes an NT handle only for memory allocated so (its WDDM
    /// `Context::isShareableMemory`).
    ///
    /// # Errors
    /// [`Unsupported`](crate::ErrorKind::Unsupported) when the device does not list DMA_BUF
    /// (OPAQUE_WIN32) in its export types; [`LevelZero`](crate::ErrorKind::LevelZero) when the allocation fails.
    pub fn alloc_device_exportable(
        self: &Arc<Self>,
        device: L0Device,
        size: usize,
        align: usize,
    ) -> Result<L0Allocation> {
        let export = export_desc(device)?;
        let desc = sys::ze_device_mem_alloc_desc_t {
            stype: sys::ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC,
            pNext: std::ptr::addr_of!(export).cast(),
            flags: 0,
            ordinal: 0,
        };
        // SAFETY: the chain is one export descriptor, valid for zeMemAllocDevice, alive for the call.
        unsafe { self.alloc_device_with(&desc, device, size, align, None) }
    }

    /// `zeMemAllocHost` with `ze_external_memory_export_desc_t{DMA_BUF}` (`{OPAQUE_WIN32}` on
    /// Windows; the chain's first entry, the only one the NPU driver reads): host memory that
    /// `L0Allocation::export_dma_buf` (`export_nt_handle`) can export. The NPU driver exports only memory allocated so (and its imports): linux-npu-driver
    /// 1.32.1 `umd/level_zero_driver/api/ze_memory.cpp` `zeMemAllocHost` → `Location::ExternalHost`,
    /// `VPUBufferObject::exportToFd`.
    ///
    /// # Errors
    /// [`Unsupported`](crate::ErrorKind::Unsupported) when `device` does not list DMA_BUF
    /// (OPAQUE_WIN32) in its export types; [`LevelZero`](crate::ErrorKind::LevelZero) when the allocation fails.
    pub fn alloc_host_exportable(
        self: &Arc<Self>,
        device: L0Device,
        size: usize,
        align: usize,
    ) -> Result<L0Allocation> {
        let export = export_desc(device)?;
        let desc = sys::ze_host_mem_alloc_desc_t {
            stype: sys::ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC,
            pNext: std::ptr::addr_of!(export).cast(),
            flags: 0,
        };
        // SAFETY: the chain is one export descriptor, valid for zeMemAllocHost, alive for the call.
        unsafe { self.alloc_host_with(&desc, size, align, None) }
    }
}

impl L0Context {
    /// Imports through `import` (one import descriptor of this OS's handle type): `zeMemAllocDevice`
    /// on `device`, once the device lists that type among its import types, or `zeMemAllocHost`
    /// when `device` is `None`; `size` bytes mapped.
    ///
    /// # Safety
    /// `import` is a valid import descriptor whose handle is open for the call; `keep` is that
    /// handle or `None`.
    pub(super) unsafe fn alloc_imported(
        self: &Arc<Self>,
        device: Option<L0Device>,
        import: *const std::ffi::c_void,
        size: usize,
        keep: Option<OwnedShared>,
    ) -> Result<L0Allocation> {
        let Some(device) = device else {
            let desc = sys::ze_host_mem_alloc_desc_t {
                stype: sys::ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC,
                pNext: import,
                flags: 0,
            };
            // SAFETY: the chain is one import descriptor whose handle is open (caller contract).
            return unsafe { self.alloc_host_with(&desc, size, 4096, keep) };
        };
        let ext = device.external_memory_properties()?;
        if !ext.import.contains(ExternalMemoryTypes::SHARED_HANDLE) {
            let reason = if cfg!(windows) { Reason::NoNtHandleImport } else { Reason::NoDmaBufImport };
            return Err(Error::unsupported(
                Path::SHARED_HANDLE,
                reason,
                format!("{device:?} cannot import {} memory (import types {:?})", Path::SHARED_HANDLE, ext.import),
            ));
        }
        let desc = sys::ze_device_mem_alloc_desc_t {
            stype: sys::ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC,
            pNext: import,
            flags: 0,
            ordinal: 0,
        };
        // SAFETY: as above.
        unsafe { self.alloc_device_with(&desc, device, size, 0, keep) }
    }
}

/// `ze_external_memory_export_desc_t` of this OS's handle type, once `device` says it exports it.
fn export_desc(device: L0Device) -> Result<sys::ze_external_memory_export_desc_t> {
    let ext = device.external_memory_properties()?;
    let wanted = ExternalMemoryTypes::SHARED_HANDLE;
    if !ext.export.contains(wanted) {
        return Err(Error::unsupported(
            Path::SHARED_HANDLE,
            Reason::NotExportable,
            format!("{device:?} cannot export {} memory (export types {:?})", Path::SHARED_HANDLE, ext.export),
        ));
    }
    Ok(sys::ze_external_memory_export_desc_t {
        stype: sys::ZE_STRUCTURE_TYPE_EXTERNAL_MEMORY_EXPORT_DESC,
        pNext: std::ptr::null(),
        flags: wanted.bits(),
    })
}

impl L0Allocation {
    /// Exports the allocation as this OS's shareable-memory handle, owned by the caller: a dma-buf
    /// fd on Linux, an NT handle on Windows.
    pub(crate) fn export_shared(&self) -> Result<OwnedShared> {
        #[cfg(unix)]
        return self.export_dma_buf();
        #[cfg(windows)]
        return self.export_nt_handle();
    }
}
