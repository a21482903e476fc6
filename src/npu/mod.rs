//! The NPU side: [`NpuContext`] (OpenVINO's NPU context with its Level Zero driver and device) and
//! the memory paths that give the NPU memory without copying.
//!
//! | path | constructor | memory owned by | zero-copy | notes |
//! |------|-------------|-----------------|-----------|-------|
//! | L0 host tensor | [`NpuContext::l0_host_tensor`] | the tensor (plugin `zeMemAllocHost`) | yes | `Input` = write-combined: write-only for the CPU |
//! | CPU_VA | [`NpuContext::import`] of a [`PageAlignedBuffer`](crate::memory::PageAlignedBuffer), host/shared USM or L0 memory, or [`RawMemory`](crate::memory::RawMemory) | the tensor (the memory moves in) / the caller's keep-alive | yes (sysmem import) | address and byte size multiples of 4096 |
//! | dma-buf (SHARED_BUF) | [`NpuContext::import`] of an `OwnedFd`, exportable device memory | the exporter; the tensor owns the fd and closes it once | yes | the GPU exports with [`L0Allocation::export_dma_buf`](crate::level_zero::L0Allocation::export_dma_buf) |
//! | plain host tensor | [`PageAlignedBuffer::into_tensor`](crate::memory::PageAlignedBuffer::into_tensor), any [`Tensor`](crate::openvino::Tensor) | the tensor | only when page-aligned | see below |
//!
//! Every tensor keeps alive what it wraps (by construction: the memory's owner moves into the
//! tensor's keep-alive list) and its context, and [`InferRequest`](crate::openvino::InferRequest)
//! keeps every bound tensor alive until it was rebound and the next inference finished. So no
//! tensor can outlive its memory, and no `NpuContext`, `Core` or `CompiledModel` is freed while
//! something still depends on it.
//!
//! Every path gives an [`NpuTensor`]: the remote tensor and what the import checked about its
//! memory, fixed at construction. Host access goes through [`NpuTensor::host_data`]
//! and [`host_data_mut`](NpuTensor::host_data_mut): checked views that never
//! overlap an inference. A write through them after binding is seen by the next inference without
//! rebinding. They exist only where the tensor is the memory's sole way in (L0 host tensors, CPU_VA
//! over a moved-in [`PageAlignedBuffer`](crate::memory::PageAlignedBuffer)): a dma-buf tensor's pages stay its exporter's, which can
//! write them at any time, so they are read and written through the exporter instead.
//!
//! # Plain host tensors
//! A plain [`Tensor`](crate::openvino::Tensor) set on an NPU request is
//! - **imported** (zero-copy, like CPU_VA, then rebound through a mutable command list) when its
//!   data pointer **and** byte size are multiples of 4096 — a tensor over a [`PageAlignedBuffer`](crate::memory::PageAlignedBuffer)
//!   with a page-multiple byte size. The virtual platform counts it in `npu.imports.sysmem`, and
//!   `npu.bytes_copied` stays 0. The plugin imports it anew (and frees the import) on every
//!   inference, so for memory used more than once a CPU_VA tensor, imported once, is cheaper. Only
//!   where the NPU imports user memory (NPU 40xx+); elsewhere it is copied;
//! - **shadow-copied** otherwise: the plugin copies it into its own buffer on every inference.
//!   The results are the same.
//!
//! Without `ZE_experimental_mutable_command_list` support in the driver
//! ([`NpuCapabilities::mutable_command_lists`]), every user tensor is copied.
//!
//! ```no_run
//! use testkit::models;
//! use npu_sycl_bridge::memory::PageAlignedBuffer;
//! use npu_sycl_bridge::npu::NpuContext;
//! use npu_sycl_bridge::openvino::{Core, Properties, TensorType};
//!
//! # fn main() -> npu_sycl_bridge::Result<()> {
//! let core = Core::new()?;
//! let m = models::fully_connected();
//! let model = core.read_model_from_memory(&m.xml, &m.weights)?;
//! let compiled = core.compile_model(&model, "NPU", &Properties::new())?;
//! let npu = NpuContext::from_compiled_model(&compiled)?;
//! let input = &m.inputs[0];
//! let mut buf = PageAlignedBuffer::new(input.element_type.byte_size(input.shape.element_count()))?;
//! buf.as_bytes_mut()[..m.sample_input(0).len()].copy_from_slice(&m.sample_input(0));
//! let tensor = npu.import(buf, input.element_type, input.shape.clone(), TensorType::Input)?;
//! let mut request = compiled.create_infer_request()?;
//! request.set_input_tensor(0, &tensor)?;
//! request.infer()?;
//! # Ok(()) }
//! ```

mod context;
mod generation;
mod imports;
mod tensor;
mod tensors;

pub use self::context::{NpuCapabilities, NpuContext};
pub use self::generation::LaptopGeneration;
pub use self::tensor::NpuTensor;
