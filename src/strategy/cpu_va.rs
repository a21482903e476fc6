//! CPU_VA: page-aligned SYCL host or shared USM of the iGPU's context, imported by the NPU as
//! system memory.

use std::sync::Arc;

use super::{Parts, SharedTensor, StrategyKind};
use crate::error::{Error, Result};
use crate::npu::NpuContext;
use crate::openvino::{ElementType, Shape, TensorType};
use crate::sycl::{self, UsmKind};

/// **CPU_VA**: SYCL USM of your (iGPU) context — `aligned_alloc_host` or `aligned_alloc_shared`
/// with alignment 4096 and the byte size rounded up to 4096 — given to the NPU as a CPU_VA remote
/// tensor (`ze_external_memmap_sysmem_ext_desc_t`: the NPU driver imports the pages; the VA it
/// uses is the USM pointer itself).
///
/// # When it works on real hardware
/// - The NPU driver must advertise `STANDARD_ALLOCATION` import
///   ([`NpuCapabilities::sysmem_import`](crate::npu::NpuCapabilities::sysmem_import)); otherwise
///   [`Unsupported { path: "CPU_VA" }`](crate::ErrorKind::Unsupported).
/// - The pointer must be foreign to the NPU's Level Zero context (memory of the GPU's driver is);
///   then the pointer and the tensor's byte size must be multiples of 4096. (Memory that is already
///   an allocation of the NPU's context would be reused by the plugin instead of imported.)
/// - Whether the ivpu driver can pin pages that the i915/xe GPU driver allocated as USM is
///   **unverified**: they are GPU-driver mappings, not ordinary anonymous memory. It works on the
///   virtual platform. If it fails on a real machine, use [`DmaBuf`](super::DmaBuf) (Intel's
///   recommended path), or [`Auto`](super::Auto), which tries.
///
/// # What it costs
/// Per tensor a USM allocation and the NPU's one-time import (page pinning and IOMMU mapping on
/// real hardware). Steady state: no copy; SYCL `memcpy`s into host/shared USM are CPU or
/// copy-engine writes into the very pages the NPU reads. Host USM is cached system memory (fine to
/// read back); `TensorType` does not change the caching of imported memory.
///
/// # Who owns what
/// The [`UsmBuffer`](crate::sycl::UsmBuffer) moves into the NPU remote tensor's keep-alive; it
/// holds the SYCL context, and `sycl::free` runs only after OpenVINO and every request let go of
/// the tensor. Your SYCL context and device are only borrowed (the strategy keeps an `Arc` of the
/// context).
#[derive(Debug)]
pub struct CpuVa {
    parts: Parts,
    usm: UsmKind,
}

impl CpuVa {
    /// The CPU_VA strategy for USM of kind `usm` ([`UsmKind::Host`] or [`UsmKind::Shared`]) on
    /// `device` (one of `context`'s devices), with an in-order queue on it.
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for [`UsmKind::Device`] (not
    /// host-visible: use [`DmaBuf`](super::DmaBuf)); [`Unsupported { path: "CPU_VA" }`](crate::ErrorKind::Unsupported)
    /// when the NPU driver cannot import system memory; SYCL errors.
    pub fn new(npu: &NpuContext, context: &Arc<sycl::Context>, device: &sycl::Device, usm: UsmKind) -> Result<CpuVa> {
        if !usm.is_host_accessible() {
            return Err(Error::invalid_argument(
                "CpuVa: device USM has no CPU address the NPU could import; use UsmKind::Host or UsmKind::Shared, \
                 or the dma-buf strategy (DmaBuf) for device memory",
            ));
        }
        if !npu.capabilities().sysmem_import {
            return Err(Error::unsupported(
                "CPU_VA",
                format!(
                    "the NPU driver cannot import system memory (import types {:?} lack STANDARD_ALLOCATION); use the \
                     dma-buf strategy (DmaBuf) or the NPU→SYCL copy (NpuToSycl)",
                    npu.capabilities().import_types
                ),
            ));
        }
        Ok(CpuVa { parts: Parts::new(npu, context, device)?, usm })
    }

    /// The USM kind allocated.
    pub fn usm_kind(&self) -> UsmKind {
        self.usm
    }

    /// A shared tensor: USM of [`usm_kind`](Self::usm_kind) (aligned to 4096, the byte size rounded
    /// up to 4096), imported by the NPU as CPU_VA; the remote tensor keeps the allocation alive.
    ///
    /// # Errors
    /// SYCL allocation errors; the CPU_VA errors of [`NpuContext::cpu_va_tensor_from_raw`]
    /// (notably [`Alignment { what: "CPU_VA byte size" }`](crate::ErrorKind::Alignment) when the
    /// tensor's byte size is not a multiple of 4096).
    pub fn tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<SharedTensor> {
        self.parts.usm_cpu_va_tensor(StrategyKind::CpuVa, self.usm, element_type, shape.into(), tensor_type, None)
    }

    parts_accessors! {
        kind: StrategyKind::CpuVa,
        queue: "The in-order queue for the shared tensors' copies.",
        sycl_context: "The SYCL context the USM belongs to.",
        device: "The SYCL device the USM is allocated on.",
        npu_context: "The NPU context that imports the memory.",
        probe: "Makes a 4 KiB tensor and checks that SYCL and the NPU's mapping see the same bytes.",
    }
}
