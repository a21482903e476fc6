//! SYCL side (feature `sycl`): DPC++ platforms, devices, contexts (including contexts made from a
//! native Level Zero `ze_context_handle_t`), in-order queues, USM, and dma-buf export / import.
//!
//! Everything goes through one cxx bridge (`ffi.rs`) over a C++ shim (`cpp/`, `include/`) that is
//! host-only: no kernels, only USM allocation, `memcpy`, `memset` and the interop entry points.
//!
//! # Ownership graph
//! ```text
//! SyclContext (Arc) ──┬── Queue                     (holds Arc<SyclContext>)
//!                 ├── UsmBuffer                 (holds Arc<SyclContext>; sycl::free in Drop)
//!                 ├── ExportableDeviceMemory    (holds Arc<SyclContext>; free_exportable_memory in Drop)
//!                 └── ImportedMemory            (holds Arc<SyclContext> and the OwnedFd; unmap + release in Drop)
//! SyclContext made from a foreign ze_context with `keep` ── holds the owner's keep-alive (optional), dropped
//!                                                       only after the sycl::context is released.
//! ```
//! A context therefore outlives every queue and allocation made from it, and a foreign Level Zero
//! context given with [`Foreign::Borrowed`](crate::ownership::Foreign::Borrowed) outlives the SYCL context wrapping it as long as its
//! owner is (or is kept alive by) the keep-alive.
//!
//! # Example
//! ```no_run
//! use std::sync::Arc;
//! use npu_sycl_bridge::level_zero;
//! use npu_sycl_bridge::sycl::{self, SyclContext, DeviceType, ExportableDeviceMemory, Queue, UsmBuffer, UsmKind};
//!
//! # fn main() -> npu_sycl_bridge::Result<()> {
//! let gpu = sycl::devices()?.into_iter().find(|d| d.device_type == DeviceType::Gpu).expect("a GPU");
//! // A Level Zero context of the GPU's driver, shared with SYCL (`ownership::keep`; the Arc keeps it alive).
//! // SAFETY: the handle is the runtime's own driver handle of this platform.
//! let driver = unsafe { npu_sycl_bridge::raw::level_zero::driver(gpu.native_driver().unwrap()) };
//! let ze = Arc::new(level_zero::L0Context::create(driver)?);
//! let ctx = SyclContext::from_level_zero_context(&ze, std::slice::from_ref(&gpu))?;
//! let queue = Queue::new(&ctx, &gpu)?;
//! let mut buf = UsmBuffer::new(&ctx, &gpu, UsmKind::Shared, 4096, 4096)?;
//! buf.copy_from_slice(&queue, &[1.0f32; 1024])?;
//! let mem = ExportableDeviceMemory::new(&ctx, &gpu, 1 << 20, 4096)?;
//! let fd = mem.export_dma_buf()?; // ours: closed when dropped
//! # drop(fd);
//! # Ok(()) }
//! ```
//!
//! # Errors
//! A C++ exception thrown by the runtime or by the shim's checks becomes an [`Error`] of kind
//! `ErrorKind::Sycl` whose message is the exception's `what()` text. Errors inside `Drop` (a failing
//! `sycl::free`, …) are recorded on the [`SyclContext`] and returned by [`SyclContext::take_deferred_errors`]
//! and by the next [`Queue::wait`].
//!
//! # File descriptors
//! [`ExportableDeviceMemory::export_dma_buf`] returns a new `OwnedFd` per call: the caller owns (and
//! closes) each exported fd. [`ImportedMemory::import_dma_buf`] takes the fd by value and keeps it open
//! until after `release_external_memory` in its `Drop`, then closes it.
//!
//! # Adapter v1 / v2
//! DPC++ chooses the Level Zero adapter once per process (`SYCL_UR_USE_LEVEL_ZERO_V2=0|1` must be set
//! before SYCL initialises); this layer works with both.

/// [`SyclMemory`] for a type whose fields `ptr: NonNull<u8>`, `len: usize` and
/// `context: Arc<SyclContext>` (or `&Arc<SyclContext>`) are the memory's first byte, length and context. Invoked in the type's
/// own module (the fields are private); the type is sealed in `usm.rs`.
macro_rules! sycl_memory {
    ($t:ty) => {
        impl $crate::sycl::SyclMemory for $t {
            fn as_ptr(&self) -> *const u8 {
                self.ptr.as_ptr()
            }
            fn as_mut_ptr(&mut self) -> *mut u8 {
                self.ptr.as_ptr()
            }
            fn len(&self) -> usize {
                self.len
            }
            fn context(&self) -> &std::sync::Arc<$crate::sycl::SyclContext> {
                &self.context
            }
        }
    };
}

mod context;
mod external;
pub(crate) mod ffi;
mod platform;
mod queue;
mod usm;

pub(crate) use crate::error::{Error, Result};
pub use context::{ContextOrigin, SyclContext};
pub use external::{ExportableDeviceMemory, ImportedMemory};
pub use platform::{devices, platforms, Backend, DeviceType, Platform, SyclDevice};
pub use queue::{NativeQueue, Queue};
pub(crate) use usm::element_size_for_read;
pub use usm::{LentMemory, Pod, SyclMemory, UsmBuffer, UsmKind};

/// A C++ exception from the bridge as an [`Error`] of kind `Sycl`, with `what` (the operation) first.
pub(crate) fn sycl_error(what: &str) -> impl FnOnce(cxx::Exception) -> Error + '_ {
    move |e| Error::sycl(format!("{what}: {}", e.what()))
}
