//! NPU → SYCL: memory the NPU plugin allocated (an L0 host tensor), reached from SYCL by copies.

use std::ptr::NonNull;
use std::sync::Arc;

use super::{sizes, Parts, SharedTensor, StrategyKind};
use crate::error::{Error, ErrorKind, Result};
use crate::npu::NpuContext;
use crate::openvino::{ElementType, RemoteTensor, Shape, TensorType};
use crate::sycl;

/// The `path` of the error for asking zero-copy / kernel-visible access to NPU-allocated memory.
pub const NPU_TO_SYCL_ZERO_COPY: &str = "NPU→SYCL zero-copy";

/// **NPU → SYCL (a copy)**: the NPU plugin allocates the memory (an L0 host tensor,
/// `MEM_TYPE=L0_INTERNAL_BUF`, [`NpuContext::l0_host_tensor`]) and SYCL reaches it with `memcpy`.
///
/// The plugin's `zeMemAllocHost` belongs to the NPU's Level Zero driver. SYCL's GPU driver sees
/// it as a foreign pointer (`get_pointer_type` → `unknown`), so **SYCL kernels cannot use it** and
/// it is no SYCL memory; a SYCL `memcpy` can still read and write it as plain host memory. So the
/// [`SharedTensor`]s made here are honest copies on the SYCL side:
/// [`copy_from`](SharedTensor::copy_from) / [`copy_to`](SharedTensor::copy_to) move data between
/// them and your SYCL memory, [`write`](SharedTensor::write) / [`read`](SharedTensor::read) between
/// them and Rust slices, and [`SharedTensor::is_zero_copy`] is `false`.
/// [`zero_copy_tensor`](Self::zero_copy_tensor) answers the zero-copy request with a typed error.
///
/// # When it works on real hardware
/// Wherever the NPU plugin works: no import, no GPU-driver involvement beyond a host `memcpy`.
/// It is [`Auto`](super::Auto)'s last resort.
///
/// # What it costs
/// No import; the plugin's memory is "already resident" for the NPU (the floor for benchmarks).
/// Every SYCL ⇄ NPU transfer is a copy of the tensor's bytes (CPU time and DRAM traffic).
/// `TensorType::Input` memory is **write-combined**: fine to write, very slow to read back on real
/// hardware (a SYCL `memcpy` out of it runs on the CPU); use `Output`/`Binded` for what you read.
///
/// # Who owns what
/// The plugin owns the allocation; the remote tensor frees it when it, its clones and every request
/// that bound it are gone. Your SYCL memory stays yours.
#[derive(Debug)]
pub struct NpuToSycl {
    parts: Parts,
}

impl NpuToSycl {
    /// The NPU → SYCL copy strategy, copying through an in-order queue on `device` (one of
    /// `context`'s devices).
    pub fn new(npu: &NpuContext, context: &Arc<sycl::Context>, device: &sycl::Device) -> Result<NpuToSycl> {
        Ok(NpuToSycl { parts: Parts::new(npu, context, device)? })
    }

    /// A tensor in memory the NPU plugin allocates (an L0 host tensor of `tensor_type`), reached
    /// from SYCL by copies.
    pub fn tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<SharedTensor> {
        let shape = shape.into();
        sizes(element_type, &shape)?;
        let tensor = self.parts.npu.l0_host_tensor(element_type, shape, tensor_type)?;
        let ptr = host_va(&tensor)?;
        let mut t = self.parts.shared(tensor, StrategyKind::NpuToSycl, false, ptr, 0)?;
        t.zero_copy = false;
        Ok(t)
    }

    /// The zero-copy request: NPU-allocated memory that SYCL kernels could use directly.
    ///
    /// Makes the L0 host tensor and asks SYCL what the pointer is in the strategy's context
    /// (`get_pointer_type`). Where SYCL knows it as host or shared USM of that context (no stack
    /// known today), the tensor is returned as zero-copy.
    ///
    /// # Errors
    /// [`Unsupported { path: "NPU→SYCL zero-copy" }`](ErrorKind::Unsupported) when SYCL sees a
    /// foreign pointer (on every stack today, the virtual platform included); the message says why
    /// and what to use instead.
    pub fn zero_copy_tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<SharedTensor> {
        let mut t = self.tensor(element_type, shape, tensor_type)?;
        match self.parts.context.pointer_kind(t.sycl_ptr().cast_const().cast())? {
            Some(kind) if kind.is_host_accessible() => {
                t.zero_copy = true;
                Ok(t)
            }
            seen => {
                let seen = seen.map_or_else(|| "unknown".to_string(), |k| format!("{k:?} USM, not host-accessible"));
                Err(not_sycl_memory().context(format!("NPU→SYCL zero-copy refused (SYCL's get_pointer_type: {seen})")))
            }
        }
    }

    parts_accessors! {
        kind: StrategyKind::NpuToSycl,
        queue: "The in-order queue for the copies.",
        sycl_context: "The SYCL context whose queues copy to and from the NPU's memory.",
        device: "The SYCL device of the queue.",
        npu_context: "The NPU context that allocates the memory.",
        probe: "Makes a 4 KiB tensor and checks that SYCL copies reach the NPU's memory and back.",
    }
}

/// The host VA of an NPU L0 host tensor (its `MEM_HANDLE`).
fn host_va(tensor: &RemoteTensor) -> Result<NonNull<u8>> {
    let p = tensor.params()?;
    NonNull::new(p.mem_handle.cast::<u8>())
        .ok_or_else(|| Error::invalid_argument(format!("the NPU's L0 host tensor reports no MEM_HANDLE ({:?})", p.raw)))
}

/// The error for zero-copy / kernel-visible access to memory the NPU plugin allocated.
pub(crate) fn not_sycl_memory() -> Error {
    Error::new(
        ErrorKind::Unsupported { path: NPU_TO_SYCL_ZERO_COPY },
        "NPU-allocated memory is not SYCL memory: the NPU plugin's L0 host allocation belongs to the NPU's \
         Level Zero driver, and SYCL's GPU driver sees it as a foreign pointer (get_pointer_type: unknown), \
         so SYCL kernels cannot use it. A SYCL memcpy can still read and write it as plain host memory (a \
         CPU copy): use SharedTensor::copy_from / copy_to / write / read. For zero-copy, let SYCL allocate \
         and the NPU import: the dma-buf strategy (DmaBuf) or CPU_VA (CpuVa)",
    )
}
