//! [`NpuTensor`]: what the NPU paths hand out. An OpenVINO remote tensor and the facts about its
//! memory that the import checked once: element type, shape, byte size, host address, whether the
//! device may write it, and its SYCL side. Nothing is asked of OpenVINO after construction.

use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

use crate::error::{Error, Path, Reason, Result};
use crate::openvino::{
    BindableSealed, Element, ElementType, RemoteTensor, Shape, TensorBytes, TensorBytesMut, TensorData, TensorDataMut,
    TensorHandle,
};

/// How the CPU may reach the tensor's memory.
#[derive(Debug, Clone, Copy)]
pub(crate) enum HostAccess {
    /// The tensor is the memory's only way in: checked host views at this address.
    Exclusive(usize),
    /// The pages stay their exporter's (a caller's dma-buf fd, an export made elsewhere): no host
    /// views, since the exporter can write them under a reader.
    Shared,
}

/// A tensor the NPU uses in place: an import ([`NpuContext::import`](super::NpuContext::import)),
/// an L0 host tensor ([`NpuContext::l0_host_tensor`](super::NpuContext::l0_host_tensor)), a pool
/// tensor. Bind it to an [`InferRequest`](crate::openvino::InferRequest) as any tensor.
///
/// It owns (or keeps alive) its memory and its context; clones share both, and a request that
/// bound it keeps it until it was rebound and the next inference finished. Its host views
/// ([`host_data`](Self::host_data) and friends) never overlap an inference that uses it.
#[derive(Clone)]
pub struct NpuTensor {
    remote: RemoteTensor,
    element_type: ElementType,
    shape: Shape,
    byte_size: usize,
    host: HostAccess,
    #[cfg(feature = "sycl")]
    sycl: Option<crate::memory::SyclOrigin>,
}

impl NpuTensor {
    /// Everything about the tensor, known when it was made. `byte_size` is the one the import
    /// checked against the memory; `host` is a host-visible address of at least `byte_size` bytes.
    pub(crate) fn new(
        remote: RemoteTensor,
        element_type: ElementType,
        shape: Shape,
        byte_size: usize,
        host: HostAccess,
        #[cfg(feature = "sycl")] sycl: Option<crate::memory::SyclOrigin>,
    ) -> NpuTensor {
        NpuTensor {
            remote,
            element_type,
            shape,
            byte_size,
            host,
            #[cfg(feature = "sycl")]
            sycl,
        }
    }

    /// The OpenVINO remote tensor (its parameters, its device, its raw handle).
    pub fn remote(&self) -> &RemoteTensor {
        &self.remote
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// The shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The byte size of the tensor's data.
    pub fn byte_size(&self) -> usize {
        self.byte_size
    }

    /// Whether the device may only read the tensor's memory: a CPU_VA import made with
    /// [`TensorType::Input`](crate::openvino::TensorType::Input), which the NPU driver maps
    /// read-only. Such a tensor cannot be bound to an output
    /// ([`InferRequest::set_output_tensor`](crate::openvino::InferRequest::set_output_tensor)
    /// refuses it).
    pub fn is_read_only_for_device(&self) -> bool {
        self.remote.is_read_only_for_device()
    }

    /// Whether the tensor has host views (it is the memory's only way in).
    pub fn has_host_views(&self) -> bool {
        matches!(self.host, HostAccess::Exclusive(_))
    }

    /// How many holders share the tensor (clones, requests, keep-alives): 1 when only one does.
    pub(crate) fn handle_count(&self) -> usize {
        self.remote.handle_count()
    }

    /// The SYCL memory the tensor was imported from, if any.
    #[cfg(feature = "sycl")]
    pub(crate) fn sycl_origin(&self) -> Option<&crate::memory::SyclOrigin> {
        self.sycl.as_ref()
    }

    /// Takes the tensor's data-use state (reads shared, one writer) without a view: what SYCL
    /// copies hold while they run. No inference that uses the tensor starts while it lives.
    #[cfg(feature = "sycl")]
    pub(crate) fn begin_use(&self, write: bool) -> Result<crate::openvino::TensorUse<'_>> {
        self.remote.handle.begin_use(write)
    }

    /// A read view of the tensor's memory as `T` elements, at the host address the import checked
    /// (L0 host memory, the CPU_VA pages, or the driver's mapping of a dma-buf).
    ///
    /// Only for tensors that are the memory's only way in ([`has_host_views`](Self::has_host_views)):
    /// L0 host tensors, CPU_VA imports of moved-in memory, the strategies' shared tensors. A tensor
    /// over a caller's dma-buf fd has none: its exporter can write the pages under the view.
    ///
    /// Like [`Tensor::data`](crate::openvino::Tensor::data): the view cannot be taken while an
    /// inference that uses the tensor runs, and no inference can start while it lives. Reading a
    /// [`TensorType::Input`](crate::openvino::TensorType::Input) L0 host tensor works but is very
    /// slow on real hardware (write-combined memory).
    ///
    /// # Errors
    /// [`Unsupported { path: Path::HostView }`](crate::ErrorKind::Unsupported) for tensors without
    /// host views; [`ElementType`](crate::ErrorKind::ElementType) when `T` does not match;
    /// [`Busy`](crate::ErrorKind::Busy) while an inference uses the tensor.
    pub fn host_data<T: Element>(&self) -> Result<TensorData<'_, T>> {
        self.element_type.check::<T>("the tensor")?;
        let va = self.host_va()?;
        // SAFETY: va is the tensor's host-visible memory, valid for byte_size bytes while the tensor
        // (which owns or keeps alive the memory) lives; the import checked both.
        unsafe { self.remote.handle.data_at::<T>(va, self.byte_size) }
    }

    /// A write view; see [`host_data`](Self::host_data). Writes are seen by the next inference of
    /// every request this tensor is bound to, without rebinding.
    pub fn host_data_mut<T: Element>(&mut self) -> Result<TensorDataMut<'_, T>> {
        self.element_type.check::<T>("the tensor")?;
        let va = self.host_va()?;
        // SAFETY: as in host_data; the use state makes the view exclusive against other views and
        // inferences.
        unsafe { self.remote.handle.data_mut_at::<T>(va, self.byte_size) }
    }

    /// A read view of the raw bytes, whatever the element type; see [`host_data`](Self::host_data).
    pub fn host_bytes(&self) -> Result<TensorBytes<'_>> {
        let va = self.host_va()?;
        // SAFETY: as in host_data.
        unsafe { self.remote.handle.data_at::<u8>(va, self.byte_size) }
    }

    /// A write view of the raw bytes; see [`host_data_mut`](Self::host_data_mut).
    pub fn host_bytes_mut(&mut self) -> Result<TensorBytesMut<'_>> {
        let va = self.host_va()?;
        // SAFETY: as in host_data_mut.
        unsafe { self.remote.handle.data_mut_at::<u8>(va, self.byte_size) }
    }

    /// The host address of a tensor with host views.
    pub(crate) fn host_va(&self) -> Result<*mut c_void> {
        match self.host {
            HostAccess::Exclusive(va) => Ok(va as *mut c_void),
            HostAccess::Shared => Err(Error::unsupported(
                Path::HostView,
                Reason::ExporterOwnsMemory,
                "this tensor's memory stays its exporter's (a dma-buf fd, or device memory exported elsewhere)",
            )),
        }
    }
}

impl fmt::Debug for NpuTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NpuTensor")
            .field("raw", &self.remote.as_raw())
            .field("element_type", &self.element_type)
            .field("shape", &self.shape)
            .field("host", &self.host)
            .field("read_only_for_device", &self.is_read_only_for_device())
            .finish()
    }
}

impl BindableSealed for NpuTensor {
    fn handle(&self) -> &Arc<TensorHandle> {
        &self.remote.handle
    }
}
impl crate::openvino::Bindable for NpuTensor {}
