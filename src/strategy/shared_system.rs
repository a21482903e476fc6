//! Shared system memory: ordinary page-aligned process memory that the NPU imports as CPU_VA and
//! the iGPU reaches directly where it reports shared-system USM (SYCL copies otherwise).

use std::ptr::NonNull;
use std::sync::Arc;

use super::{sizes, Parts, SharedTensor, StrategyKind};
use crate::error::{Error, Result};
use crate::npu::{NpuContext, PageAlignedBuffer};
use crate::openvino::{ElementType, Shape, TensorType};
use crate::sycl;

/// **Shared system memory**: a [`PageAlignedBuffer`] (anonymous process memory, which the NPU's
/// kernel driver can pin, unlike the GPU driver's USM) imported by the NPU as CPU_VA. SYCL reaches
/// the same pages:
/// - **zero-copy** where the SYCL device has `aspect::usm_system_allocations` (the GPU reports
///   shared-system USM: Xe2 and later with a kernel that mirrors CPU page tables; compute-runtime
///   `drm_neo.cpp` `adjustSharedSystemMemCapabilities`, off by default): the pointer is usable in
///   kernels and copies, and [`SharedTensor::sycl_mut`] gives it;
/// - **by copy** elsewhere: [`SharedTensor::write`]/[`read`](SharedTensor::read)/[`copy_from`](SharedTensor::copy_from)
///   are SYCL `memcpy`s between your memory and these pages (the NPU still reads them in place),
///   and [`SharedTensor::is_zero_copy`] is `false`.
///
/// # When it works
/// Only where the NPU imports user memory
/// ([`NpuCapabilities::sysmem_import`](crate::npu::NpuCapabilities::sysmem_import): NPU 40xx and
/// later with the kernel's userptr ioctl); elsewhere (Meteor and Arrow Lake)
/// [`Unsupported { path: "shared system memory" }`](crate::ErrorKind::Unsupported). As for CPU_VA,
/// the tensor's byte size must be a multiple of 4096. Verified on the virtual platform only.
///
/// # Who owns what
/// The buffer moves into the NPU remote tensor's keep-alive and is unmapped after OpenVINO and every
/// request let go of the tensor. No SYCL allocation is made; the strategy holds an `Arc` of your
/// SYCL context for its queue.
#[derive(Debug)]
pub struct SharedSystem {
    parts: Parts,
    gpu_reaches_system_memory: bool,
}

impl SharedSystem {
    /// The strategy for the SYCL `device` of `context`, with an in-order queue on it.
    ///
    /// # Errors
    /// [`Unsupported { path: "shared system memory" }`](crate::ErrorKind::Unsupported) when the NPU
    /// driver cannot import system memory; SYCL errors.
    pub fn new(npu: &NpuContext, context: &Arc<sycl::Context>, device: &sycl::Device) -> Result<SharedSystem> {
        if !npu.capabilities().sysmem_import {
            return Err(Error::unsupported(
                StrategyKind::SharedSystem.as_str(),
                format!(
                    "the NPU driver cannot import system memory (import types {:?} lack STANDARD_ALLOCATION: NPU \
                     37xx, or a kernel without the userptr ioctl), so it cannot use process memory in place; use the \
                     dma-buf strategy (DmaBuf) or the NPU→SYCL copy (NpuToSycl)",
                    npu.capabilities().import_types
                ),
            ));
        }
        Ok(SharedSystem {
            parts: Parts::new(npu, context, device)?,
            gpu_reaches_system_memory: device.usm_system_allocations,
        })
    }

    /// Whether SYCL uses the pages in place (the device has `aspect::usm_system_allocations`).
    pub fn is_zero_copy(&self) -> bool {
        self.gpu_reaches_system_memory
    }

    /// A shared tensor over a new page-aligned buffer (the byte size rounded up to 4096), imported
    /// by the NPU as CPU_VA.
    ///
    /// # Errors
    /// The CPU_VA errors of [`NpuContext::cpu_va_tensor`] (notably
    /// [`Alignment { what: "CPU_VA byte size" }`](crate::ErrorKind::Alignment) when the tensor's
    /// byte size is not a multiple of 4096); mapping errors.
    pub fn tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<SharedTensor> {
        let shape = shape.into();
        let (_, len) = sizes(element_type, &shape)?;
        let mut buffer = PageAlignedBuffer::new(len)?;
        let ptr = NonNull::new(buffer.as_mut_ptr().cast::<u8>()).expect("a mapping is never null");
        // The mapping does not move with the buffer: `ptr` stays valid while the tensor keeps it.
        let tensor = self.parts.npu.cpu_va_tensor(buffer, element_type, shape, tensor_type)?;
        self.parts.shared(tensor, StrategyKind::SharedSystem, self.gpu_reaches_system_memory, ptr, len)
    }

    parts_accessors! {
        kind: StrategyKind::SharedSystem,
        queue: "The in-order queue for the shared tensors' copies.",
        sycl_context: "The SYCL context whose queue copies to and from the pages.",
        device: "The SYCL device that reaches the pages (directly, or by copy).",
        npu_context: "The NPU context that imports the pages.",
        probe: "Makes a 4 KiB tensor and checks that SYCL and the NPU's mapping see the same bytes.",
    }
}
