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
