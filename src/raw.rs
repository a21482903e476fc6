//! The basement: raw handles into and out of the crate's types, and the `-sys` crates under them.
//! Nothing in the safe API needs this module. Every function here is `unsafe`: the caller vouches
//! for a handle or pointer the crate cannot check. Reading a handle ([`AsRaw`]) is safe; using it is
//! the caller's business, and it is valid only while the wrapper it came from lives.
//!
//! Ownership follows wgpu-hal's `keep` vs `transfer`, with one shape for both:
//! [`Foreign`](crate::ownership::Foreign). `Owned` hands the handle over (the wrapper releases it
//! once); `Borrowed { owner }` keeps it the caller's, with `owner` held until the wrapper is done.

/// The native handle of a wrapper, for calls the crate does not wrap. Bring it into scope with
/// `use npu_sycl_bridge::raw::AsRaw`.
pub trait AsRaw {
    /// The handle's type (a `*_handle_t` of Level Zero, a `*mut ov_*_t` of OpenVINO's C API).
    type Handle: Copy;

    /// The handle this wrapper holds. It stays the wrapper's: never release it, and do not use it
    /// after the wrapper is dropped.
    fn as_raw(&self) -> Self::Handle;
}

macro_rules! as_raw {
    ($($ty:ty => $handle:ty),* $(,)?) => {$(
        impl AsRaw for $ty {
            type Handle = $handle;
            fn as_raw(&self) -> $handle {
                <$ty>::as_raw(self)
            }
        }
    )*};
}

/// Level Zero: driver, device, context and allocation handles.
pub mod level_zero {
    use std::ffi::c_void;
    use std::sync::Arc;

    pub use level_zero_sys as sys;

    use super::AsRaw;
    use crate::error::Result;
    use crate::level_zero::{Driver, L0Allocation, L0Context, L0Device, MemoryType};
    use crate::ownership::Foreign;

    as_raw! {
        Driver => sys::ze_driver_handle_t,
        L0Device => sys::ze_device_handle_t,
        L0Context => sys::ze_context_handle_t,
    }

    /// Wraps a driver handle.
    ///
    /// # Safety
    /// `handle` was returned by `zeDriverGet`/`zeInitDrivers` of the loader this process uses
    /// (driver handles never become invalid).
    pub unsafe fn driver(handle: sys::ze_driver_handle_t) -> Driver {
        // SAFETY: the caller's contract.
        unsafe { Driver::from_raw(handle) }
    }

    /// Wraps a device handle of `driver`.
    ///
    /// # Safety
    /// `handle` is a device of `driver`, as returned by `zeDeviceGet`.
    pub unsafe fn device(handle: sys::ze_device_handle_t, driver: Driver) -> L0Device {
        // SAFETY: the caller's contract.
        unsafe { L0Device::from_raw(handle, driver) }
    }

    /// Wraps a context of `driver`: with [`Foreign::Owned`] the wrapper destroys it once, in `Drop`;
    /// with [`Foreign::Borrowed`] it never does, and holds `owner` until it is dropped.
    ///
    /// # Safety
    /// `handle` is a live context of `driver`. Owned: nobody else destroys it or uses it after the
    /// wrapper (and every `Arc` of it) is gone. Borrowed: it stays alive while `owner` does, or,
    /// without an owner, while the wrapper and every allocation made in it exist.
    pub unsafe fn context(handle: sys::ze_context_handle_t, driver: Driver, ownership: Foreign) -> L0Context {
        // SAFETY: the caller's contract.
        unsafe { L0Context::from_raw(handle, driver, ownership) }
    }

    /// Takes ownership of memory allocated in `context`: freed once, with `zeMemFree`, in `Drop`.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a null pointer.
    ///
    /// # Safety
    /// `ptr` was returned by a `zeMemAlloc*` call (or an import) on `context` for `size` bytes of
    /// kind `kind`, and nobody else frees it.
    pub unsafe fn allocation(
        context: Arc<L0Context>,
        ptr: *mut c_void,
        size: usize,
        kind: MemoryType,
        device: Option<L0Device>,
    ) -> Result<L0Allocation> {
        // SAFETY: the caller's contract.
        unsafe { L0Allocation::from_raw(context, ptr, size, kind, device) }
    }
}

/// OpenVINO's C API: the objects' handles, and remote tensors over memory the caller vouches for.
pub mod openvino {
    use std::ffi::c_void;

    pub use openvino_sys as sys;

    use super::AsRaw;
    use crate::error::Result;
    use crate::openvino::{
        CompiledModel, Core, ElementType, InferRequest, MemType, Model, RemoteContext, RemoteTensor, Shape, Tensor,
        TensorProperties, TensorType,
    };
    use crate::ownership::KeepAlive;

    as_raw! {
        Core => *mut sys::ov_core_t,
        Model => *mut sys::ov_model_t,
        CompiledModel => *mut sys::ov_compiled_model_t,
        InferRequest => *mut sys::ov_infer_request_t,
        RemoteContext => *mut sys::ov_remote_context_t,
        RemoteTensor => *mut sys::ov_tensor_t,
        Tensor => *mut sys::ov_tensor_t,
    }

    /// A remote tensor of `context` over memory named by `mem_type` and `mem_handle` (the
    /// plugin's `MEM_TYPE` and `MEM_HANDLE`, through `ov_remote_context_create_tensor_props`).
    ///
    /// `mem_handle` is passed as the raw pointer value: for [`MemType::CpuVa`] the address of the
    /// memory; for [`MemType::SharedBuf`] on Linux a dma-buf file descriptor **cast to a pointer**
    /// ([`MemType::fd_handle`]), not an address. The tensor holds `keepalive` and the context, and
    /// drops them after the native tensor is freed, which happens only after every
    /// [`InferRequest`] that bound it has released it.
    ///
    /// # Errors
    /// Those of `ov_remote_context_create_tensor_props`, as [`OpenVino`](crate::ErrorKind::OpenVino).
    ///
    /// # Safety
    /// - For `CpuVa`: `mem_handle` points to memory valid for reads and writes of the tensor's byte
    ///   size, and (unless it lies inside an existing allocation of this context) both the address
    ///   and the byte size are multiples of 4096.
    /// - For `SharedBuf`: `mem_handle` is an open dma-buf fd (as a pointer) whose buffer holds at
    ///   least the tensor's byte size. The plugin does not close the fd.
    /// - The memory (or fd) stays valid until `keepalive` is dropped; pass its owner in `keepalive`
    ///   (a buffer, an `OwnedFd`, ...). If `keepalive` is empty, the caller keeps it valid until the
    ///   tensor, its clones and every request it was bound to are dropped.
    /// - Nothing else writes the memory while an inference that uses the tensor runs, unless the
    ///   caller synchronises that itself.
    /// - While a host view of the tensor is alive, no other Rust reference to the memory exists and
    ///   nothing else writes it.
    pub unsafe fn remote_tensor(
        context: &RemoteContext,
        element_type: ElementType,
        shape: impl Into<Shape>,
        mem_type: MemType,
        mem_handle: Option<*mut c_void>,
        tensor_type: Option<TensorType>,
        keepalive: Vec<KeepAlive>,
    ) -> Result<RemoteTensor> {
        let properties = TensorProperties { mem_type, mem_handle, tensor_type };
        // SAFETY: the caller's contract is create_tensor_over's.
        unsafe { context.create_tensor_over(element_type, shape.into(), properties, keepalive, false) }
    }
}

/// SYCL: device memory the program allocated itself.
#[cfg(feature = "sycl")]
pub mod sycl {
    use std::sync::Arc;

    use crate::error::Result;
    use crate::ownership::KeepAlive;
    use crate::sycl::{ExportableDeviceMemory, SyclContext, SyclDevice};

    /// Exportable device memory the program allocated: never freed here; `owner` is dropped instead
    /// (its `Drop` is the program's release), once nothing uses the memory.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for a null pointer, a zero length, a
    /// device that is not one of the context's, or memory the context does not know as device memory
    /// (checked before anything exports it).
    ///
    /// # Safety
    /// `ptr` is `len` bytes of exportable device memory of `device` in `context`, valid until
    /// `owner` is dropped, and nothing else writes it while an inference or a SYCL copy of the
    /// crate uses it.
    pub unsafe fn exportable_device_memory(
        context: &Arc<SyclContext>,
        device: &SyclDevice,
        ptr: *mut u8,
        len: usize,
        owner: KeepAlive,
    ) -> Result<ExportableDeviceMemory> {
        // SAFETY: the caller's contract.
        unsafe { ExportableDeviceMemory::from_raw(context, device, ptr, len, owner) }
    }
}
