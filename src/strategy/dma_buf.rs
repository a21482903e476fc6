//! dma-buf: SYCL exportable device memory, exported as a dma-buf fd and imported by the NPU as
//! SHARED_BUF.

use std::ptr::NonNull;
use std::sync::Arc;

use super::{sizes, Parts, SharedTensor, StrategyKind};
use crate::error::{Error, Result};
use crate::npu::{NpuContext, PAGE_SIZE};
use crate::openvino::{ElementType, KeepAlive, Shape, TensorType};
use crate::sycl::{self, ExportableDeviceMemory, SyclMemory};

/// **dma-buf**: SYCL device memory allocated exportable
/// (`alloc_exportable_device_mem(4096, size rounded up to 4096, dma_buf, …)`), exported with
/// `export_device_mem_handle<dma_buf>` and given to the NPU as a SHARED_BUF remote tensor
/// (`ZeroContext::create_tensor(type, shape, int fd)`): the NPU driver imports the same pages.
///
/// This is **what Intel recommends for SYCL ↔ NPU sharing on Linux**, and the first strategy
/// [`Auto`](super::Auto) picks when the card path is unavailable (always, on stock DPC++).
///
/// # When it works on real hardware
/// The NPU driver must advertise `DMA_BUF` import
/// ([`NpuCapabilities::fd_import`](crate::npu::NpuCapabilities::fd_import); otherwise
/// [`Unsupported { path: "dma-buf" }`](crate::ErrorKind::Unsupported)), and the SYCL device must
/// support exportable memory (`sycl_ext_oneapi_memory_export`). It works on the virtual platform;
/// that a real ivpu driver imports an i915/xe dma-buf is **unverified** here (it is the path both
/// drivers are built for).
///
/// # What it costs
/// Per tensor an exportable allocation, one export (a new fd) and the NPU's one-time import (page
/// pinning and IOMMU mapping on real hardware). Steady state: no copy. The memory is device USM
/// for SYCL: the host reaches it only through a queue (`memcpy`) or the NPU's mapping; the
/// exporter (the GPU driver) decides its caching.
///
/// # Who owns what
/// The fd is created here and owned by the NPU remote tensor, which closes it once after OpenVINO
/// freed the tensor (the plugin never closes it). The [`ExportableDeviceMemory`] lives in the same
/// keep-alive list and is freed (`free_exportable_memory`) after the fd is closed; it holds the
/// SYCL context. So the GPU memory cannot be freed while a tensor or a request uses it.
#[derive(Debug)]
pub struct DmaBuf {
    parts: Parts,
}

impl DmaBuf {
    /// The dma-buf strategy on `device` (one of `context`'s devices), with an in-order queue on it.
    ///
    /// # Errors
    /// [`Unsupported { path: "dma-buf" }`](crate::ErrorKind::Unsupported) when the NPU driver
    /// cannot import dma-bufs; SYCL errors.
    pub fn new(npu: &NpuContext, context: &Arc<sycl::Context>, device: &sycl::Device) -> Result<DmaBuf> {
        if !npu.capabilities().fd_import {
            return Err(Error::unsupported(
                "dma-buf",
                format!(
                    "the NPU driver cannot import dma-buf fds (import types {:?} lack DMA_BUF); use the CPU_VA \
                     strategy (CpuVa) or the NPU→SYCL copy (NpuToSycl)",
                    npu.capabilities().import_types
                ),
            ));
        }
        Ok(DmaBuf { parts: Parts::new(npu, context, device)? })
    }

    /// A shared tensor: exportable device memory (aligned to 4096, the byte size rounded up to
    /// 4096), exported as a dma-buf fd and imported by the NPU as SHARED_BUF; the remote tensor
    /// owns the fd and keeps the memory alive.
    ///
    /// # Errors
    /// SYCL allocation / export errors; OpenVINO errors from the import.
    pub fn tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<SharedTensor> {
        let shape = shape.into();
        let (_, len) = sizes(element_type, &shape)?;
        let mut mem = ExportableDeviceMemory::new(&self.parts.context, &self.parts.device, len, PAGE_SIZE)?;
        let fd = mem.export_dma_buf()?;
        let ptr = NonNull::new(mem.as_mut_ptr()).expect("exportable memory is never null");
        // The tensor owns the fd and keeps the memory (freed after the fd closes); the memory was
        // moved in, so the tensor is its only way in and may have host views.
        let memory: Vec<KeepAlive> = vec![Arc::new(mem)];
        let tensor = self.parts.npu.import_dma_buf(fd, len, element_type, shape, tensor_type, memory, true)?;
        self.parts.shared(tensor, StrategyKind::DmaBuf, true, ptr, len)
    }

    parts_accessors! {
        kind: StrategyKind::DmaBuf,
        queue: "The in-order queue for the shared tensors' copies.",
        sycl_context: "The SYCL context the memory belongs to.",
        device: "The SYCL device the memory is allocated on.",
        npu_context: "The NPU context that imports the memory.",
        probe: "Makes a 4 KiB tensor and checks that SYCL and the NPU's mapping see the same bytes.",
    }
}
