//! NT handles to shareable memory (Windows): [`NtHandleMemory`], and whether a handle is open.

use std::os::windows::io::{AsRawHandle, IntoRawHandle, OwnedHandle, RawHandle};

use super::{sealed, MemoryKind, NpuMemory, Region, SharedHandle};
use crate::error::{Error, ErrorKind, Result};

/// Shareable memory behind an NT handle (a GPU driver's `OPAQUE_WIN32` export, a D3D12 shared
/// heap), with its size: Windows tells a program no size for such a handle, so the caller does.
/// The NPU imports it as SHARED_BUF; the tensor keeps the handle open for as long as the import
/// lives and closes it once after that (the NPU plugin never closes what it imports).
#[derive(Debug)]
pub struct NtHandleMemory {
    handle: OwnedHandle,
    len: usize,
}

impl NtHandleMemory {
    /// `len` bytes of the memory behind `handle`, which this takes over (it is closed when the
    /// last tensor over it is gone, or when this is dropped unimported).
    pub fn new(handle: OwnedHandle, len: usize) -> NtHandleMemory {
        NtHandleMemory { handle, len }
    }
    /// The handle.
    pub fn handle(&self) -> &OwnedHandle {
        &self.handle
    }
    /// Gives the handle back.
    pub fn into_handle(self) -> OwnedHandle {
        self.handle
    }
}

/// `Ok` when `handle` is an open handle of this process (`GetHandleInformation` succeeds).
pub(crate) fn check_open(handle: RawHandle) -> Result<()> {
    use windows_sys::Win32::Foundation::GetHandleInformation;
    let mut flags = 0u32;
    // SAFETY: GetHandleInformation only reads the handle table; any value is allowed and a closed
    // or foreign one fails with ERROR_INVALID_HANDLE.
    if unsafe { GetHandleInformation(handle, &mut flags) } == 0 {
        let err = std::io::Error::last_os_error();
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "NT handle {handle:?} is not an open handle of this process ({err}); pass a handle exported by \
                 the GPU (e.g. L0Allocation::export_nt_handle) and keep it open until it is handed over"
            ),
        )
        .with_source(err));
    }
    Ok(())
}

impl sealed::Sealed for NtHandleMemory {
    fn region(&self) -> Result<Region> {
        Ok(Region::Shared { handle: SharedHandle::Borrowed(self.handle.as_raw_handle()), len: self.len })
    }
    fn exclusive(&self) -> bool {
        false
    }
    fn check(&self) -> Result<()> {
        check_open(self.handle.as_raw_handle())
    }
    fn discard(self) {
        // Not open: closing it would close someone else's handle value, so forget it.
        let _ = self.handle.into_raw_handle();
    }
}
impl NpuMemory for NtHandleMemory {
    fn memory_kind(&self) -> MemoryKind {
        MemoryKind::NtHandle
    }
    fn byte_len(&self) -> usize {
        self.len
    }
}
