//! Level Zero memory: allocation queries and owning allocations.

use std::ffi::c_void;
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use super::context::non_null;
use super::{api, sys, L0Context, L0Device};
use crate::error::{Error, Result};
use crate::memory::OwnedShared;

/// `ze_memory_type_t`: what kind of allocation a pointer is in.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemoryType {
    /// Not an allocation of this context's driver (plain process memory, another driver's memory).
    Unknown,
    /// Host memory (`zeMemAllocHost`, or an import the driver reports as host).
    Host,
    /// Device memory.
    Device,
    /// Shared memory.
    Shared,
    /// `ZE_MEMORY_TYPE_HOST_IMPORTED` (4, spec ≥ 1.13): imported system memory.
    HostImported,
    /// Another value.
    Other(u32),
}

impl MemoryType {
    pub(crate) fn from_raw(t: sys::ze_memory_type_t) -> Self {
        match t {
            sys::ZE_MEMORY_TYPE_UNKNOWN => Self::Unknown,
            sys::ZE_MEMORY_TYPE_HOST => Self::Host,
            sys::ZE_MEMORY_TYPE_DEVICE => Self::Device,
            sys::ZE_MEMORY_TYPE_SHARED => Self::Shared,
            4 => Self::HostImported,
            other => Self::Other(other),
        }
    }

    /// Whether the CPU can read and write such memory directly.
    pub fn is_host_accessible(&self) -> bool {
        matches!(self, Self::Host | Self::Shared | Self::HostImported)
    }
}

/// What `zeMemGetAllocProperties` says about a pointer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationInfo {
    /// The allocation's kind (`Unknown` for memory the driver does not know).
    pub kind: MemoryType,
    /// The driver's unique id of the allocation (0 when unknown).
    pub id: u64,
    /// The page size of the allocation, in bytes.
    pub page_size: u64,
    /// The device of a device or shared allocation.
    pub device: Option<L0Device>,
}

/// `ze_host_mem_alloc_flags_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HostMemFlags(u32);

impl HostMemFlags {
    /// No flags.
    pub const NONE: Self = Self(0);
    /// `ZE_HOST_MEM_ALLOC_FLAG_BIAS_CACHED`.
    pub const BIAS_CACHED: Self = Self(sys::ZE_HOST_MEM_ALLOC_FLAG_BIAS_CACHED);
    /// `ZE_HOST_MEM_ALLOC_FLAG_BIAS_UNCACHED`.
    pub const BIAS_UNCACHED: Self = Self(sys::ZE_HOST_MEM_ALLOC_FLAG_BIAS_UNCACHED);
    /// `ZE_HOST_MEM_ALLOC_FLAG_BIAS_WRITE_COMBINED`: fast streaming CPU writes, very slow CPU reads.
    pub const BIAS_WRITE_COMBINED: Self = Self(sys::ZE_HOST_MEM_ALLOC_FLAG_BIAS_WRITE_COMBINED);

    /// The raw bits.
    pub fn bits(&self) -> u32 {
        self.0
    }
}

impl std::ops::BitOr for HostMemFlags {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// Memory allocated (or imported) in a Level Zero [`L0Context`], freed exactly once with `zeMemFree`
/// when dropped.
///
/// It holds an `Arc<L0Context>`: the context cannot be destroyed first. An allocation imported from
/// an owned fd (NT handle) also keeps it open and closes it after `zeMemFree`. A `zeMemFree` that fails
/// in `Drop` is recorded on the context and returned by its next allocation call (or by
/// [`L0Context::take_deferred_errors`]).
pub struct L0Allocation {
    ptr: NonNull<c_void>,
    size: usize,
    kind: MemoryType,
    device: Option<L0Device>,
    // Field order: the fd (NT handle) is closed after Drop::drop has freed the memory; the context
    // after that.
    imported_from: Option<OwnedShared>,
    context: Arc<L0Context>,
}

// SAFETY: the allocation is plain memory plus an Arc'd, thread-safe context; `&self` methods only
// read through the pointer, and writes need `&mut self`.
unsafe impl Send for L0Allocation {}
// SAFETY: as above.
unsafe impl Sync for L0Allocation {}

impl L0Allocation {
    /// Takes ownership of memory allocated in `context` (it will be freed with `zeMemFree`).
    ///
    /// # Safety
    /// `ptr` was returned by a `zeMemAlloc*` call (or import) on `context` for `size` bytes, of
    /// kind `kind`, and nobody else frees it.
    pub(crate) unsafe fn from_raw(
        context: Arc<L0Context>,
        ptr: *mut c_void,
        size: usize,
        kind: MemoryType,
        device: Option<L0Device>,
    ) -> Result<L0Allocation> {
        // SAFETY: forwarded contract.
        unsafe { Self::adopt(context, ptr, size, kind, device, None, "L0Allocation::from_raw") }
    }

    /// # Safety
    /// As [`from_raw`](Self::from_raw); `imported_from` (if any) is the fd or NT handle the memory
    /// was imported from.
    pub(crate) unsafe fn adopt(
        context: Arc<L0Context>,
        ptr: *mut c_void,
        size: usize,
        kind: MemoryType,
        device: Option<L0Device>,
        imported_from: Option<OwnedShared>,
        call: &'static str,
    ) -> Result<L0Allocation> {
        let ptr = non_null(ptr, call)?;
        Ok(L0Allocation { ptr, size, kind, device, imported_from, context })
    }

    /// The start of the allocation (a device VA for device memory).
    pub fn as_ptr(&self) -> *mut c_void {
        self.ptr.as_ptr()
    }

    /// Its size in bytes, as requested.
    pub fn len(&self) -> usize {
        self.size
    }

    /// Whether the size is 0.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// Host, device or shared.
    pub fn kind(&self) -> MemoryType {
        self.kind
    }

    /// The device of a device or shared allocation.
    pub fn device(&self) -> Option<L0Device> {
        self.device
    }

    /// The context it was allocated in.
    pub fn context(&self) -> &Arc<L0Context> {
        &self.context
    }

    /// `zeMemGetAllocProperties` on the allocation.
    pub fn info(&self) -> Result<AllocationInfo> {
        self.context.memory_properties(self.as_ptr())
    }

    fn range_check(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(Error::size(
                format!("L0 allocation access at offset {offset}"),
                offset.saturating_add(len),
                self.size,
            )),
        }
    }

    /// Copies `dst.len()` bytes at `offset` out of the allocation: a `memcpy` for host-accessible
    /// memory, a blocking device copy for device memory.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.range_check(offset, dst.len())?;
        // SAFETY: in bounds (checked); ptr is valid for `size` bytes while self lives.
        let src = unsafe { self.ptr.as_ptr().cast::<u8>().add(offset) };
        if self.kind.is_host_accessible() {
            // SAFETY: host-accessible memory, in bounds, disjoint from `dst` (a Rust slice).
            unsafe { std::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), dst.len()) };
            Ok(())
        } else {
            let device = self.device_for_copy()?;
            // SAFETY: device memory of this context, in bounds; dst is host memory we own.
            unsafe { self.context.copy_blocking(device, dst.as_mut_ptr().cast(), src.cast(), dst.len()) }
        }
    }

    /// Copies `src` into the allocation at `offset` (see [`read`](Self::read)).
    pub fn write(&mut self, offset: usize, src: &[u8]) -> Result<()> {
        self.range_check(offset, src.len())?;
        // SAFETY: in bounds (checked).
        let dst = unsafe { self.ptr.as_ptr().cast::<u8>().add(offset) };
        if self.kind.is_host_accessible() {
            // SAFETY: host-accessible memory, in bounds, exclusively borrowed through &mut self.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
            Ok(())
        } else {
            let device = self.device_for_copy()?;
            // SAFETY: device memory of this context, in bounds, exclusively borrowed.
            unsafe { self.context.copy_blocking(device, dst.cast(), src.as_ptr().cast(), src.len()) }
        }
    }

    fn device_for_copy(&self) -> Result<L0Device> {
        self.device
            .ok_or_else(|| Error::invalid_argument("this allocation is neither host-accessible nor tied to a device"))
    }
}

impl Drop for L0Allocation {
    fn drop(&mut self) {
        if let Ok(api) = api() {
            // SAFETY: we own the allocation, its context is alive (we hold an Arc to it), and it is
            // freed exactly once, here.
            let r = unsafe { api.zeMemFree(self.context.as_raw(), self.ptr.as_ptr()) };
            if r != sys::ZE_RESULT_SUCCESS {
                // Drop cannot return it: the context keeps it for its next allocation call.
                self.context.defer_error(Error::level_zero(
                    r,
                    "zeMemFree",
                    format!(
                        "{} (dropping the {:?} allocation {:p}, {} bytes)",
                        super::result_name(r),
                        self.kind,
                        self.ptr,
                        self.size
                    ),
                ));
            }
        }
    }
}

impl fmt::Debug for L0Allocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("L0Allocation")
            .field("ptr", &self.ptr)
            .field("size", &self.size)
            .field("kind", &self.kind)
            .field("imported_from", &self.imported_from)
            .finish()
    }
}
