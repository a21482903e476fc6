//! What the drivers get from the operating system, one API on both: shareable memory objects (a
//! memfd standing for a GEM object's dma-buf on Linux, an unnamed section standing for a WDDM
//! resource's NT handle on Windows), mappings of them, the pin check of a user-memory import, RAM
//! size, the host clock and thread ids. `memory.rs` holds the drivers' rules; this module holds no rule of theirs.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use self::unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use self::windows::*;

/// The identity of a shareable buffer, the same through every handle and mapping of it: the
/// memfd's `(st_dev, st_ino)` on Linux, the platform's own serial number on Windows.
pub type Ident = (u64, u64);
