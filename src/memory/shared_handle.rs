//! The OS handle that carries shareable memory from one driver to another: a dma-buf fd on Linux,
//! an NT handle on Windows. One type for each, so the import code reads the same on both.

use std::sync::Arc;

use crate::ownership::KeepAlive;

/// An owned handle to shareable memory: `OwnedFd` (a dma-buf) on Linux, `OwnedHandle` (an NT
/// handle) on Windows. Dropping it closes it.
#[cfg(unix)]
pub(crate) type OwnedShared = std::os::fd::OwnedFd;
/// An owned handle to shareable memory: `OwnedFd` (a dma-buf) on Linux, `OwnedHandle` (an NT
/// handle) on Windows. Dropping it closes it.
#[cfg(windows)]
pub(crate) type OwnedShared = std::os::windows::io::OwnedHandle;

/// The raw value of an [`OwnedShared`].
#[cfg(unix)]
pub(crate) type RawShared = std::os::fd::RawFd;
/// The raw value of an [`OwnedShared`].
#[cfg(windows)]
pub(crate) type RawShared = std::os::windows::io::RawHandle;

/// The handle of a [`Region::Shared`](super::Region::Shared).
pub enum SharedHandle {
    /// A fresh handle (an export made for this import): the tensor keeps it and closes it once.
    Owned(OwnedShared),
    /// The memory's own handle: open while the memory (which the tensor keeps) lives.
    Borrowed(RawShared),
}

impl SharedHandle {
    pub(crate) fn raw(&self) -> RawShared {
        #[cfg(unix)]
        use std::os::fd::AsRawFd as _;
        #[cfg(windows)]
        use std::os::windows::io::AsRawHandle as _;
        match self {
            #[cfg(unix)]
            SharedHandle::Owned(h) => h.as_raw_fd(),
            #[cfg(windows)]
            SharedHandle::Owned(h) => h.as_raw_handle(),
            SharedHandle::Borrowed(raw) => *raw,
        }
    }

    /// What the tensor must keep to keep the handle open: a fresh export's handle (a borrowed one
    /// is kept open by the memory, which the tensor keeps anyway).
    pub(crate) fn into_keepalive(self) -> Option<KeepAlive> {
        match self {
            SharedHandle::Owned(h) => Some(Arc::new(h)),
            SharedHandle::Borrowed(_) => None,
        }
    }
}

/// The handle's value as the C++ shim carries it (an fd number, or an NT handle's bits).
#[cfg_attr(not(feature = "sycl"), allow(dead_code))]
pub(crate) fn handle_value(h: &OwnedShared) -> u64 {
    #[cfg(unix)]
    return std::os::fd::AsRawFd::as_raw_fd(h) as u64;
    #[cfg(windows)]
    return std::os::windows::io::AsRawHandle::as_raw_handle(h) as usize as u64;
}

/// Takes ownership of the handle whose value the C++ shim returned.
///
/// # Safety
/// `v` is an open fd (NT handle) of this process that nothing else owns or closes.
#[cfg_attr(not(feature = "sycl"), allow(dead_code))]
pub(crate) unsafe fn owned_from_value(v: u64) -> OwnedShared {
    #[cfg(unix)]
    // SAFETY: the caller's contract; an fd number fits in i32 (the shim checks before returning).
    return unsafe { std::os::fd::FromRawFd::from_raw_fd(v as i32) };
    #[cfg(windows)]
    // SAFETY: the caller's contract.
    return unsafe { std::os::windows::io::FromRawHandle::from_raw_handle(v as usize as *mut std::ffi::c_void) };
}
