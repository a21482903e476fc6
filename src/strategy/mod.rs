//! The SYCL ⇄ NPU sharing strategies (feature `sycl`): one buffer that a DPC++/SYCL application
//! reads and writes through its queues **and** that OpenVINO's NPU plugin reads and writes as a
//! remote tensor, without copies in between.
//!
//! Every strategy produces a [`SharedTensor`]: the SYCL memory (or, for [`NpuToSycl`], the
//! plugin's memory), the NPU [`RemoteTensor`] over it, and everything both depend on.
//!
//! | strategy | [`StrategyKind`] | SYCL side | NPU side | works on real hardware | zero-copy |
//! |----------|------------------|-----------|----------|------------------------|-----------|
//! | [`CardPath`] | `CardPath` | `malloc_shared` in a SYCL context made **from the NPU's** Level Zero context | CPU_VA (the plugin reuses its own allocation) | **never on stock DPC++** (the NPU's driver is no SYCL platform): a typed [`Unsupported`](crate::ErrorKind::Unsupported) error; the rest of the path runs for a context whose driver SYCL lists | yes |
//! | [`DmaBuf`] | `DmaBuf` | `alloc_exportable_device_mem` → dma-buf fd | SHARED_BUF import | what Intel recommends on Linux; needs DMA_BUF import in the NPU driver (cross-driver i915/xe → ivpu import unverified) | yes |
//! | [`CpuVa`] | `CpuVa` | `aligned_alloc_host` / `aligned_alloc_shared` (4096) | CPU_VA (sysmem import) | needs STANDARD_ALLOCATION import; GPU-driver USM as NPU sysmem is **unverified** on i915/xe + ivpu | yes |
//! | [`SharedSystem`] | `SharedSystem` | ordinary page-aligned process memory: used in place where the device has `usm_system_allocations`, reached by SYCL `memcpy` elsewhere | CPU_VA (sysmem import) | needs STANDARD_ALLOCATION import (NPU 40xx+ with the userptr ioctl); unverified on hardware | NPU side always; SYCL side only with shared-system USM |
//! | [`NpuToSycl`] | `NpuToSycl` | SYCL `memcpy` to/from the plugin's memory | L0 host tensor (plugin `zeMemAllocHost`) | everywhere the NPU works | **no**: a CPU copy on the SYCL side |
//! | [`Auto`] | the first that works | | | probes the machine: card path → dma-buf → CPU_VA → shared system memory → NPU→SYCL copy | |
//!
//! # Ownership and drop order
//! ```text
//! InferRequest ──holds──▶ RemoteTensor ──keep-alive──▶ SYCL memory (UsmBuffer / ExportableDeviceMemory [+ fd])
//!      │                       │                               │
//!      ▼                       ▼                               ▼
//! CompiledModel          RemoteContext ──▶ Core           sycl::Context ──keep──▶ Level Zero context (card path)
//! ```
//! - The NPU [`RemoteTensor`] holds the SYCL allocation in its keep-alive list, so the memory is
//!   freed only after OpenVINO freed the tensor **and** every [`InferRequest`](crate::openvino::InferRequest)
//!   that bound it let go of it (a request keeps each bound tensor until it was rebound and the
//!   next inference finished).
//! - The SYCL allocation holds an `Arc` to its [`sycl::Context`]; a context made from a foreign
//!   Level Zero context (card path) holds that context's owner, so neither can go first.
//! - A [`SharedTensor`] holds the remote tensor, the SYCL context and the [`NpuContext`] (and so
//!   the Core). Strategies hold the NPU context, the SYCL context and a queue.
//!
//! So any of them — shared tensor, strategy, request, SYCL context, NPU context, compiled model,
//! Core — can be dropped in any order from safe code; whatever is still needed stays alive.
//!
//! # SYCL access never overlaps an inference
//! [`SharedTensor::write`], [`read`](SharedTensor::read), the copies and the
//! [`SyclAccess`] guard take the remote tensor's data-use state for their duration (as
//! [`RemoteTensor::host_data`](crate::openvino::RemoteTensor::host_data) does): they fail while an
//! inference that uses the tensor runs, and an inference cannot start while they run. A SYCL write
//! after binding is seen by the next inference without rebinding.
//!
//! # What the costs are
//! - **One-time import**: creating a CPU_VA or dma-buf remote tensor makes the NPU driver import
//!   the memory (`zeMemAllocHost` with an import descriptor): page pinning and IOMMU mapping on real
//!   hardware (magnitude unverified). Create shared tensors once and keep them bound; rebinding known
//!   memory only patches the recorded command list (needs mutable command lists).
//! - **Steady state**: no copy between SYCL and the NPU for the zero-copy strategies; the NPU's own
//!   DMA from DRAM remains (see `landscape.md`).
//! - **Write-combined memory**: `TensorType::Input` makes the plugin allocate write-combined memory
//!   only for memory *it* allocates ([`NpuToSycl`]); reading that back from the CPU (or a SYCL
//!   `memcpy` that runs on the CPU) is very slow on real hardware. Use `Output`/`Binded` for
//!   anything read back. For imported memory the exporter decides the caching.
//!
//! ```no_run
//! use npu_sycl_bridge::models;
//! use npu_sycl_bridge::npu::NpuContext;
//! use npu_sycl_bridge::openvino::{Core, Properties, TensorType};
//! use npu_sycl_bridge::strategy::Auto;
//! use npu_sycl_bridge::sycl::{self, Context};
//!
//! # fn main() -> npu_sycl_bridge::Result<()> {
//! let core = Core::new()?;
//! let m = models::fully_connected();
//! let model = core.read_model_from_memory(&m.xml, &m.weights)?;
//! let compiled = core.compile_model(&model, "NPU", &Properties::new())?;
//! let npu = NpuContext::from_compiled_model(&compiled)?;
//! let gpu = sycl::devices()?.into_iter().find(|d| d.is_level_zero()).expect("an Intel GPU");
//! let context = Context::new(&gpu)?;
//!
//! let auto = Auto::select(&npu, &context, &gpu)?;
//! println!("{}", auto.decision()); // "chose dma-buf because card path: …"
//! let d = &m.inputs[0];
//! let mut input = auto.tensor(d.element_type, d.shape.clone(), TensorType::Input)?;
//! input.write(auto.queue(), 0, &m.sample_input(0))?; // a SYCL memcpy into the shared memory
//! let mut request = compiled.create_infer_request()?;
//! request.set_input_tensor(0, input.remote_tensor())?;
//! request.infer()?;
//! # Ok(()) }
//! ```

/// The accessors every strategy has over its [`Parts`] (queue, SYCL context, device, NPU
/// context) and its [`probe`](Parts::probe), generated into the strategy's `impl` block. Each doc
/// string says what the item is for that strategy.
macro_rules! parts_accessors {
    (
        kind: $kind:expr,
        queue: $queue:literal,
        sycl_context: $sycl_context:literal,
        device: $device:literal,
        npu_context: $npu_context:literal,
        probe: $probe:literal $(,)?
    ) => {
        #[doc = $queue]
        pub fn queue(&self) -> &$crate::sycl::Queue {
            &self.parts.queue
        }

        #[doc = $sycl_context]
        pub fn sycl_context(&self) -> &std::sync::Arc<$crate::sycl::Context> {
            &self.parts.context
        }

        #[doc = $device]
        pub fn device(&self) -> &$crate::sycl::Device {
            &self.parts.device
        }

        #[doc = $npu_context]
        pub fn npu_context(&self) -> &$crate::npu::NpuContext {
            &self.parts.npu
        }

        #[doc = $probe]
        pub fn probe(&self) -> $crate::Result<()> {
            let t = self.tensor(
                $crate::openvino::ElementType::U8,
                $crate::strategy::PROBE_SHAPE,
                $crate::openvino::TensorType::Binded,
            )?;
            self.parts.probe($kind, t)
        }
    };
}

mod auto;
mod card_path;
mod cpu_va;
mod dma_buf;
mod npu_to_sycl;
mod shared_system;

use std::ffi::c_void;
use std::fmt;
use std::mem::size_of_val;
use std::ptr::NonNull;
use std::sync::Arc;

pub use self::auto::{Auto, AutoDecision};
pub use self::card_path::CardPath;
pub use self::cpu_va::CpuVa;
pub use self::dma_buf::DmaBuf;
pub use self::npu_to_sycl::{NpuToSycl, NPU_TO_SYCL_ZERO_COPY};
pub use self::shared_system::SharedSystem;

use crate::error::{Error, ErrorKind, Result};
use crate::npu::{self, NpuContext, PAGE_SIZE};
use crate::openvino::{ElementType, KeepAlive, RemoteTensor, Shape, TensorBytesMut, TensorType};
use crate::sycl::{self, Pod, Queue, SyclMemory, UsmBuffer, UsmKind};

/// The ways a SYCL buffer and an NPU tensor can share memory, in [`Auto`]'s order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StrategyKind {
    /// [`CardPath`]: a SYCL context made from the NPU's Level Zero context, `malloc_shared` in it.
    CardPath,
    /// [`DmaBuf`]: SYCL exportable device memory, handed to the NPU as a dma-buf fd.
    DmaBuf,
    /// [`CpuVa`]: page-aligned SYCL host/shared USM, imported by the NPU as CPU_VA.
    CpuVa,
    /// [`SharedSystem`]: page-aligned process memory imported by the NPU as CPU_VA, used in place
    /// by SYCL where the device reaches system memory, copied by SYCL elsewhere.
    SharedSystem,
    /// [`NpuToSycl`]: the NPU plugin's own memory, copied to and from SYCL (not zero-copy).
    NpuToSycl,
}

impl StrategyKind {
    /// Every strategy, in the order [`Auto`] tries them.
    pub const ALL: [StrategyKind; 5] = [
        StrategyKind::CardPath,
        StrategyKind::DmaBuf,
        StrategyKind::CpuVa,
        StrategyKind::SharedSystem,
        StrategyKind::NpuToSycl,
    ];

    /// The name used in messages and as the `path` of
    /// [`Unsupported`](crate::ErrorKind::Unsupported) errors: `"card path"`, `"dma-buf"`,
    /// `"CPU_VA"`, `"shared system memory"`, `"NPU→SYCL copy"`.
    pub fn as_str(self) -> &'static str {
        match self {
            StrategyKind::CardPath => "card path",
            StrategyKind::DmaBuf => "dma-buf",
            StrategyKind::CpuVa => "CPU_VA",
            StrategyKind::SharedSystem => "shared system memory",
            StrategyKind::NpuToSycl => "NPU→SYCL copy",
        }
    }

    /// Whether SYCL and the NPU always use the same bytes: every strategy but
    /// [`NpuToSycl`](Self::NpuToSycl) and [`SharedSystem`](Self::SharedSystem), which is zero-copy
    /// only where the SYCL device reaches system memory ([`Strategy::is_zero_copy`] tells).
    pub fn is_zero_copy(self) -> bool {
        !matches!(self, StrategyKind::NpuToSycl | StrategyKind::SharedSystem)
    }
}

impl fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One buffer seen by SYCL and by the NPU: the SYCL memory (USM, exportable device memory, or for
/// [`NpuToSycl`] the plugin's host memory), the NPU [`RemoteTensor`] over it, and everything both
/// need.
///
/// # SYCL side
/// [`write`](Self::write), [`read`](Self::read), [`read_to_vec`](Self::read_to_vec),
/// [`fill`](Self::fill), [`copy_from`](Self::copy_from) and [`copy_to`](Self::copy_to) are SYCL
/// `memcpy`/`memset`s on a [`Queue`] of [`sycl_context`](Self::sycl_context) and wait. For the
/// zero-copy strategies [`sycl_mut`](Self::sycl_mut) gives a guard that is [`SyclMemory`], for
/// [`Queue::write`]/[`Queue::read`]/[`Queue::copy`]/[`Queue::fill`] and anything else that takes SYCL memory.
///
/// # NPU side
/// Bind [`remote_tensor`](Self::remote_tensor) to an [`InferRequest`](crate::openvino::InferRequest)
/// of a model compiled for the NPU of the same Core. SYCL writes made after binding are seen by the
/// next inference without rebinding.
///
/// # Ownership
/// The remote tensor keeps the SYCL allocation alive (and closes a dma-buf fd once); the request
/// keeps the remote tensor. Dropping the `SharedTensor` before or after the request, the strategy,
/// the SYCL context, the NPU context or the Core is sound: the memory is freed once nothing uses it.
pub struct SharedTensor {
    tensor: RemoteTensor,
    kind: StrategyKind,
    zero_copy: bool,
    /// The address SYCL uses: USM, a device pointer, or the plugin's host VA ([`NpuToSycl`]).
    ptr: NonNull<u8>,
    byte_size: usize,
    allocation_len: usize,
    context: Arc<sycl::Context>,
    npu: NpuContext,
}

// SAFETY: `ptr` is only an address of memory owned by the remote tensor's keep-alive (or by the
// plugin, through the tensor); it is used only by methods that hold the tensor's data-use state
// (so never concurrently with an inference or with a `&mut` access), through a queue that waits.
// The other fields are `Send + Sync` (`RemoteTensor`, `Arc<sycl::Context>`, `NpuContext`).
unsafe impl Send for SharedTensor {}
// SAFETY: see `Send`; `&self` methods only read through the queue under the tensor's read state.
unsafe impl Sync for SharedTensor {}

impl fmt::Debug for SharedTensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedTensor")
            .field("kind", &self.kind)
            .field("sycl_ptr", &self.ptr)
            .field("byte_size", &self.byte_size)
            .field("allocation_len", &self.allocation_len)
            .field("tensor", &self.tensor)
            .finish()
    }
}

impl SharedTensor {
    /// Which strategy made it.
    pub fn kind(&self) -> StrategyKind {
        self.kind
    }

    /// Whether SYCL and the NPU use the same bytes (`false` only for [`NpuToSycl`]: its SYCL
    /// operations are copies, and SYCL kernels cannot use the memory).
    pub fn is_zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// The NPU remote tensor: bind it to an [`InferRequest`](crate::openvino::InferRequest).
    /// Clones share the tensor (and keep the memory alive).
    pub fn remote_tensor(&self) -> &RemoteTensor {
        &self.tensor
    }

    /// The tensor's element type.
    pub fn element_type(&self) -> Result<ElementType> {
        self.tensor.element_type()
    }

    /// The tensor's shape.
    pub fn shape(&self) -> Result<Shape> {
        self.tensor.shape()
    }

    /// The tensor's byte size: the range [`write`](Self::write)/[`read`](Self::read) address.
    pub fn byte_size(&self) -> usize {
        self.byte_size
    }

    /// The size of the underlying SYCL allocation: the byte size rounded up to 4096 (0 for
    /// [`NpuToSycl`], whose allocation belongs to the plugin).
    pub fn allocation_len(&self) -> usize {
        self.allocation_len
    }

    /// The SYCL context the memory belongs to (and whose queues the copies must use).
    pub fn sycl_context(&self) -> &Arc<sycl::Context> {
        &self.context
    }

    /// The NPU context the remote tensor was made in.
    pub fn npu_context(&self) -> &NpuContext {
        &self.npu
    }

    /// The address SYCL uses (a USM pointer of [`sycl_context`](Self::sycl_context), a device
    /// pointer for [`DmaBuf`], the plugin's host memory for [`NpuToSycl`]), for passing to SYCL
    /// code elsewhere (C++ kernels). Valid while this tensor (or a clone of the remote tensor, or a
    /// request bound to it) lives. Using it bypasses the inference exclusion: do not touch the
    /// memory while an inference that uses the tensor runs.
    pub fn sycl_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Exclusive SYCL access: a guard that is [`SyclMemory`] of [`sycl_context`](Self::sycl_context),
    /// usable with [`Queue::write`], [`Queue::read`], [`Queue::copy`] and [`Queue::fill`]. No
    /// inference that uses the tensor can start while it lives.
    ///
    /// # Errors
    /// [`Unsupported { path: "NPU→SYCL zero-copy" }`](ErrorKind::Unsupported) for [`NpuToSycl`]
    /// tensors (the memory is not SYCL memory; use [`copy_from`](Self::copy_from) /
    /// [`copy_to`](Self::copy_to)); [`InvalidArgument`](ErrorKind::InvalidArgument) while an
    /// inference uses the tensor or a view of it is alive.
    pub fn sycl_mut(&mut self) -> Result<SyclAccess<'_>> {
        if !self.is_zero_copy() {
            return Err(match self.kind {
                StrategyKind::SharedSystem => shared_system_not_reached(),
                _ => npu_to_sycl::not_sycl_memory(),
            });
        }
        let view = self.tensor.host_bytes_mut()?;
        Ok(SyclAccess { _view: view, ptr: self.ptr, len: self.byte_size, context: &self.context })
    }

    fn check_queue(&self, what: &str, queue: &Queue) -> Result<()> {
        if Arc::ptr_eq(queue.context(), &self.context) {
            Ok(())
        } else {
            Err(Error::invalid_argument(format!(
                "SharedTensor::{what}: the queue belongs to another SYCL context than the {} tensor's memory; \
                 use a queue of SharedTensor::sycl_context() (e.g. the strategy's queue)",
                self.kind
            )))
        }
    }

    fn check_range(&self, what: &str, byte_offset: usize, bytes: usize) -> Result<()> {
        let end = byte_offset
            .checked_add(bytes)
            .ok_or_else(|| Error::invalid_argument(format!("SharedTensor::{what}: range overflows")))?;
        if end > self.byte_size {
            return Err(Error::size(format!("SharedTensor::{what} ({} tensor)", self.kind), end, self.byte_size));
        }
        Ok(())
    }

    /// Copies `data` into the tensor at `byte_offset` with a SYCL `memcpy` on `queue` and waits.
    /// For the zero-copy strategies this writes the very bytes the NPU reads.
    ///
    /// # Errors
    /// [`Size`](ErrorKind::Size) past the tensor's end; [`InvalidArgument`](ErrorKind::InvalidArgument)
    /// for a queue of another context or while an inference uses the tensor; SYCL errors.
    pub fn write<T: Pod>(&mut self, queue: &Queue, byte_offset: usize, data: &[T]) -> Result<()> {
        let bytes = size_of_val(data);
        self.check_queue("write", queue)?;
        self.check_range("write", byte_offset, bytes)?;
        let _view = self.tensor.host_bytes_mut()?;
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the destination is the tensor's memory, valid for `byte_size ≥ byte_offset + bytes`
        // (checked) while the tensor lives; the write view excludes inferences and other views for
        // the duration; `data` is borrowed for the call and we wait before returning.
        unsafe { queue.memcpy_raw(self.ptr.as_ptr().add(byte_offset), data.as_ptr().cast(), bytes)? };
        queue.wait()
    }

    /// Copies `out.len()` elements from the tensor at `byte_offset` into `out` with a SYCL
    /// `memcpy` on `queue` and waits.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    pub fn read<T: Pod>(&self, queue: &Queue, byte_offset: usize, out: &mut [T]) -> Result<()> {
        let bytes = size_of_val(out);
        self.check_queue("read", queue)?;
        self.check_range("read", byte_offset, bytes)?;
        let _view = self.tensor.host_bytes()?;
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: the source is the tensor's memory, valid for the checked range; the read view
        // excludes inferences and writers; `out` is exclusively borrowed and we wait.
        unsafe { queue.memcpy_raw(out.as_mut_ptr().cast(), self.ptr.as_ptr().add(byte_offset), bytes)? };
        queue.wait()
    }

    /// The whole tensor as `T`s, read with a SYCL `memcpy` on `queue`. The byte size must be a
    /// multiple of `size_of::<T>()`.
    pub fn read_to_vec<T: Pod>(&self, queue: &Queue) -> Result<Vec<T>> {
        let size = sycl::element_size_for_read::<T>("SharedTensor::read_to_vec")?;
        if self.byte_size % size != 0 {
            return Err(Error::invalid_argument(format!(
                "SharedTensor::read_to_vec: {} bytes are not a whole number of {size}-byte elements",
                self.byte_size
            )));
        }
        let mut out: Vec<T> = Vec::with_capacity(self.byte_size / size);
        self.check_queue("read_to_vec", queue)?;
        let _view = self.tensor.host_bytes()?;
        // SAFETY: `T` is not zero-sized (checked), so the spare capacity is an allocation of
        // `byte_size` bytes, all written by the copy before `set_len` (we wait first); every bit
        // pattern is a valid `T` (`Pod`); the source is the tensor's memory under the read view.
        unsafe {
            queue.memcpy_raw(out.as_mut_ptr().cast(), self.ptr.as_ptr(), self.byte_size)?;
            queue.wait()?;
            out.set_len(self.byte_size / size);
        }
        Ok(out)
    }

    /// Sets every byte of the tensor to `value` with a SYCL `memset` on `queue` and waits.
    pub fn fill(&mut self, queue: &Queue, value: u8) -> Result<()> {
        self.check_queue("fill", queue)?;
        let _view = self.tensor.host_bytes_mut()?;
        // SAFETY: the tensor's memory, valid for `byte_size`, under the write view; we wait.
        unsafe { queue.memset_raw(self.ptr.as_ptr(), value, self.byte_size)? };
        queue.wait()
    }

    /// Copies the first `len` bytes of the SYCL memory `src` (of the queue's context) into the
    /// tensor and waits. For [`NpuToSycl`] this is the transfer that makes SYCL results visible
    /// to the NPU (a copy); for the zero-copy strategies it is an ordinary device copy.
    pub fn copy_from<M: SyclMemory>(&mut self, queue: &Queue, src: &M, len: usize) -> Result<()> {
        self.check_queue("copy_from", queue)?;
        check_memory("copy_from (source)", queue, src, len)?;
        self.check_range("copy_from", 0, len)?;
        let _view = self.tensor.host_bytes_mut()?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: `src` holds `len` bytes (checked) and is borrowed for the call; the destination
        // is the tensor's memory under the write view; they cannot overlap (the tensor's memory is
        // not `src`'s allocation: `src` is borrowed while we hold the tensor mutably); we wait.
        unsafe { queue.memcpy_raw(self.ptr.as_ptr(), src.as_ptr(), len)? };
        queue.wait()
    }

    /// Copies the first `len` bytes of the tensor into the SYCL memory `dst` and waits. For
    /// [`NpuToSycl`] this is how NPU results reach SYCL kernels (a copy).
    pub fn copy_to<M: SyclMemory>(&self, queue: &Queue, dst: &mut M, len: usize) -> Result<()> {
        self.check_queue("copy_to", queue)?;
        check_memory("copy_to (destination)", queue, dst, len)?;
        self.check_range("copy_to", 0, len)?;
        let _view = self.tensor.host_bytes()?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: `dst` is exclusively borrowed and holds `len` bytes; the source is the tensor's
        // memory under the read view; we wait.
        unsafe { queue.memcpy_raw(dst.as_mut_ptr(), self.ptr.as_ptr(), len)? };
        queue.wait()
    }
}

fn check_memory(what: &str, queue: &Queue, m: &dyn SyclMemory, len: usize) -> Result<()> {
    if !Arc::ptr_eq(m.context(), queue.context()) {
        return Err(Error::invalid_argument(format!(
            "SharedTensor::{what}: the memory belongs to another context than the queue"
        )));
    }
    if len > m.len() {
        return Err(Error::size(format!("SharedTensor::{what}"), len, m.len()));
    }
    Ok(())
}

/// Exclusive SYCL access to a zero-copy [`SharedTensor`] ([`SharedTensor::sycl_mut`]): it is
/// [`SyclMemory`] (the tensor's bytes, in the tensor's SYCL context), and while it lives no
/// inference that uses the tensor can start.
///
/// ```no_run
/// # use npu_sycl_bridge::strategy::SharedTensor;
/// # use npu_sycl_bridge::sycl::{Queue, UsmBuffer};
/// # fn f(t: &mut SharedTensor, q: &Queue, staging: &UsmBuffer) -> npu_sycl_bridge::Result<()> {
/// let mut access = t.sycl_mut()?;
/// q.copy(staging, &mut access, 4096)?; // SYCL device copy straight into the NPU's input
/// # Ok(()) }
/// ```
///
/// The guard borrows the tensor, so the tensor cannot go away (or be written another way) while
/// SYCL has the memory:
/// ```compile_fail
/// # use npu_sycl_bridge::strategy::SharedTensor;
/// # fn f(mut t: SharedTensor) -> npu_sycl_bridge::Result<()> {
/// let access = t.sycl_mut()?;
/// drop(t);
/// drop(access);
/// # Ok(()) }
/// ```
pub struct SyclAccess<'a> {
    _view: TensorBytesMut<'a>,
    ptr: NonNull<u8>,
    len: usize,
    context: &'a Arc<sycl::Context>,
}

impl fmt::Debug for SyclAccess<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyclAccess").field("ptr", &self.ptr).field("len", &self.len).finish()
    }
}

impl SyclMemory for SyclAccess<'_> {
    fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
    fn len(&self) -> usize {
        self.len
    }
    fn context(&self) -> &Arc<sycl::Context> {
        self.context
    }
}

/// A strategy chosen at run time: what [`Auto`] picks, or any strategy wrapped for uniform use.
#[derive(Debug)]
pub enum Strategy {
    /// See [`CardPath`].
    CardPath(CardPath),
    /// See [`DmaBuf`].
    DmaBuf(DmaBuf),
    /// See [`CpuVa`].
    CpuVa(CpuVa),
    /// See [`SharedSystem`].
    SharedSystem(SharedSystem),
    /// See [`NpuToSycl`].
    NpuToSycl(NpuToSycl),
}

macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            Strategy::CardPath($s) => $e,
            Strategy::DmaBuf($s) => $e,
            Strategy::CpuVa($s) => $e,
            Strategy::SharedSystem($s) => $e,
            Strategy::NpuToSycl($s) => $e,
        }
    };
}

impl Strategy {
    /// Which strategy this is.
    pub fn kind(&self) -> StrategyKind {
        match self {
            Strategy::CardPath(_) => StrategyKind::CardPath,
            Strategy::DmaBuf(_) => StrategyKind::DmaBuf,
            Strategy::CpuVa(_) => StrategyKind::CpuVa,
            Strategy::SharedSystem(_) => StrategyKind::SharedSystem,
            Strategy::NpuToSycl(_) => StrategyKind::NpuToSycl,
        }
    }

    /// Whether SYCL and the NPU use the same bytes with this strategy here.
    pub fn is_zero_copy(&self) -> bool {
        match self {
            Strategy::SharedSystem(s) => s.is_zero_copy(),
            other => other.kind().is_zero_copy(),
        }
    }

    /// A shared tensor of `element_type` and `shape`; see each strategy's `tensor`.
    pub fn tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<SharedTensor> {
        let shape = shape.into();
        each!(self, s => s.tensor(element_type, shape, tensor_type))
    }

    /// An in-order queue of the strategy's SYCL context, for the shared tensors' copies.
    pub fn queue(&self) -> &Queue {
        each!(self, s => s.queue())
    }

    /// The SYCL context the shared tensors' memory belongs to.
    pub fn sycl_context(&self) -> &Arc<sycl::Context> {
        each!(self, s => s.sycl_context())
    }

    /// The SYCL device the memory is allocated on.
    pub fn device(&self) -> &sycl::Device {
        each!(self, s => s.device())
    }

    /// The NPU context.
    pub fn npu_context(&self) -> &NpuContext {
        each!(self, s => s.npu_context())
    }

    /// Makes a small tensor and checks that bytes written through SYCL are the bytes the NPU's
    /// mapping sees, and back; see [`Auto`].
    pub fn probe(&self) -> Result<()> {
        each!(self, s => s.probe())
    }
}

/// What every strategy holds: the NPU context, the SYCL context and device, and a queue.
#[derive(Debug)]
pub(crate) struct Parts {
    pub(crate) npu: NpuContext,
    pub(crate) context: Arc<sycl::Context>,
    pub(crate) device: sycl::Device,
    pub(crate) queue: Queue,
}

impl Parts {
    pub(crate) fn new(npu: &NpuContext, context: &Arc<sycl::Context>, device: &sycl::Device) -> Result<Parts> {
        let queue = Queue::new(context, device)?;
        Ok(Parts { npu: npu.clone(), context: Arc::clone(context), device: device.clone(), queue })
    }

    pub(crate) fn shared(
        &self,
        tensor: RemoteTensor,
        kind: StrategyKind,
        zero_copy: bool,
        ptr: NonNull<u8>,
        allocation_len: usize,
    ) -> Result<SharedTensor> {
        let byte_size = tensor.byte_size()?;
        Ok(SharedTensor {
            tensor,
            kind,
            zero_copy,
            ptr,
            byte_size,
            allocation_len,
            context: Arc::clone(&self.context),
            npu: self.npu.clone(),
        })
    }

    /// A shared tensor over USM of kind `usm` (aligned to 4096, the byte size rounded up to 4096)
    /// that the NPU imports as CPU_VA: what [`CardPath`] (shared USM) and [`CpuVa`] make.
    /// `import_context` prefixes the errors of the NPU's import.
    pub(crate) fn usm_cpu_va_tensor(
        &self,
        kind: StrategyKind,
        usm: UsmKind,
        element_type: ElementType,
        shape: Shape,
        tensor_type: TensorType,
        import_context: Option<&str>,
    ) -> Result<SharedTensor> {
        let (_, len) = sizes(element_type, &shape)?;
        let mut buf = UsmBuffer::new(&self.context, &self.device, usm, len, PAGE_SIZE)?;
        let ptr = NonNull::new(buf.as_mut_ptr()).expect("a UsmBuffer is never null");
        if ptr.as_ptr() as usize % PAGE_SIZE != 0 {
            return Err(Error::alignment("CPU_VA pointer (SYCL USM)", PAGE_SIZE, ptr.as_ptr() as usize));
        }
        let owner: KeepAlive = Arc::new(buf);
        // SAFETY: `ptr` is a live host-accessible USM allocation of `len` bytes owned by `owner`,
        // which the tensor keeps alive until OpenVINO and every request let go of it; the buffer
        // was moved into `owner`, so it is reached only through the SharedTensor's guarded copies
        // and the tensor's checked views.
        let tensor = unsafe {
            self.npu.cpu_va_tensor_from_raw(
                ptr.as_ptr().cast::<c_void>(),
                len,
                Some(owner),
                element_type,
                shape,
                tensor_type,
            )
        }
        .map_err(|e| {
            let e = if matches!(e.kind(), ErrorKind::OpenVino { .. }) { gpu_usm_not_pinnable(usm, e) } else { e };
            match import_context {
                Some(c) => e.context(c),
                None => e,
            }
        })?;
        self.shared(tensor, kind, true, ptr, len)
    }

    /// The probe every strategy runs: a 4 KiB `u8` tensor; a pattern written by SYCL must be what
    /// the NPU's host mapping shows, and a pattern written there must be what SYCL reads.
    pub(crate) fn probe(&self, kind: StrategyKind, mut t: SharedTensor) -> Result<()> {
        let n = t.byte_size();
        let down: Vec<u8> = (0..n).map(|i| (i.wrapping_mul(31) ^ 0x5a) as u8).collect();
        t.write(&self.queue, 0, &down)?;
        let seen = t.remote_tensor().host_bytes()?.to_vec();
        if seen != down {
            return Err(Error::new(
                ErrorKind::Unsupported { path: kind.as_str() },
                format!(
                    "the {kind} probe failed: bytes written through SYCL are not what the NPU's mapping of the \
                     same tensor shows (first difference at byte {})",
                    first_difference(&seen, &down)
                ),
            ));
        }
        let up: Vec<u8> = down.iter().map(|b| !b).collect();
        {
            let mut tensor = t.remote_tensor().clone();
            tensor.host_bytes_mut()?.copy_from_slice(&up);
        }
        let back: Vec<u8> = t.read_to_vec(&self.queue)?;
        if back != up {
            return Err(Error::new(
                ErrorKind::Unsupported { path: kind.as_str() },
                format!(
                    "the {kind} probe failed: bytes written through the NPU's mapping are not what SYCL reads \
                     (first difference at byte {})",
                    first_difference(&back, &up)
                ),
            ));
        }
        Ok(())
    }
}

fn first_difference(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).position(|(x, y)| x != y).unwrap_or(a.len().min(b.len()))
}

/// The byte size of a tensor, checked as for the NPU's own paths ([`npu::tensor_bytes`]: a
/// fixed-size element type, a non-empty shape), and that size rounded up to whole pages for the
/// SYCL allocation.
pub(crate) fn sizes(element_type: ElementType, shape: &Shape) -> Result<(usize, usize)> {
    let bytes = npu::tensor_bytes(element_type, shape)?;
    let rounded =
        npu::round_up_to_page(bytes).ok_or_else(|| Error::size("a page-rounded SYCL allocation", bytes, usize::MAX))?;
    Ok((bytes, rounded))
}

/// The shape of the probe tensor: 4096 bytes.
pub(crate) const PROBE_SHAPE: [usize; 1] = [PAGE_SIZE];

/// The error for kernel-visible access to [`SharedSystem`] pages on a device without shared-system USM.
fn shared_system_not_reached() -> Error {
    Error::unsupported(
        StrategyKind::SharedSystem.as_str(),
        "this SYCL device does not reach ordinary process memory directly (no aspect::usm_system_allocations: the \
         GPU reports no shared-system USM, as on Meteor/Arrow Lake and on Xe2+ without a kernel that mirrors CPU \
         page tables), so SYCL kernels cannot use these pages. SYCL memcpys still reach them: use \
         SharedTensor::write / read / copy_from / copy_to. For zero-copy on the SYCL side use the dma-buf strategy \
         (DmaBuf)",
    )
}

/// The NPU refused to import SYCL host or shared USM. On Intel laptops compute-runtime backs those
/// with a CPU mapping of GPU buffer objects (`drm_memory_manager.cpp` `createAllocWithAlignment`,
/// mmap of the DRM fd), which the NPU's kernel driver cannot pin (`pin_user_pages(FOLL_LONGTERM)`
/// refuses `VM_PFNMAP|VM_IO` mappings): a typed `Unsupported` naming what works instead.
fn gpu_usm_not_pinnable(usm: UsmKind, cause: Error) -> Error {
    Error::unsupported(
        "CPU_VA",
        format!(
            "the NPU driver could not import this SYCL {usm:?} USM as system memory: Intel's GPU driver maps host and \
             shared USM from GPU buffer objects, which the NPU's kernel driver cannot pin. Zero-copy works with the \
             dma-buf strategy (DmaBuf, what Auto picks); CPU_VA works with ordinary page-aligned process memory \
             (the SharedSystem strategy, or PageAlignedBuffer and NpuContext::cpu_va_tensor) that SYCL copies into"
        ),
    )
    .with_source(cause)
}
