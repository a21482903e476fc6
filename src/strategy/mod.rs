//! The SYCL ⇄ NPU sharing strategies (feature `sycl`): one buffer that a DPC++/SYCL application
//! reads and writes through its queues **and** that OpenVINO's NPU plugin reads and writes as a
//! remote tensor, without copies in between.
//!
//! A [`Strategy`] is data: which way ([`StrategyKind`]), the NPU context, the SYCL queue (and so
//! context) and device. Every strategy produces a [`SharedTensor`]: the SYCL memory (or, for
//! `NpuToSycl`, the plugin's memory), the [`NpuTensor`] over
//! it (made by the one import call, [`NpuContext::import`](crate::npu::NpuContext::import)), and the queue its SYCL copies use.
//! A program's own SYCL memory becomes a shared tensor the same way, without a strategy:
//! `SharedTensor::new(&queue, npu.import(usm, ..)?)`.
//!
//! Which strategy works where, what each costs and who owns its memory: the table in the
//! [crate docs](crate#sharing-strategies) (`docs/guide.md`), one row per [`StrategyKind`].
//!
//! # Ownership and drop order
//! ```text
//! InferRequest ──holds──▶ RemoteTensor ──keep-alive──▶ SYCL memory (UsmBuffer / ExportableDeviceMemory [+ fd])
//!      │                       │                               │
//!      ▼                       ▼                               ▼
//! CompiledModel          RemoteContext ──▶ Core           sycl::SyclContext ──keep──▶ Level Zero context (card path)
//! ```
//! - The [`NpuTensor`] holds the SYCL allocation in its keep-alive list, so the memory is
//!   freed only after OpenVINO freed the tensor **and** every [`InferRequest`](crate::openvino::InferRequest)
//!   that bound it let go of it (a request keeps each bound tensor until it was rebound and the
//!   next inference finished).
//! - The SYCL allocation holds an `Arc` to its [`sycl::SyclContext`]; a context made from a foreign
//!   Level Zero context (card path) holds that context's owner, so neither can go first.
//! - A [`SharedTensor`] holds the remote tensor (and through it the NPU context and the Core) and
//!   its queue (and so the SYCL context). Strategies hold the NPU context and the queue.
//!
//! So any of them — shared tensor, strategy, request, SYCL context, NPU context, compiled model,
//! Core — can be dropped in any order from safe code; whatever is still needed stays alive.
//!
//! # SYCL access never overlaps an inference
//! [`SharedTensor::write`], [`read`](SharedTensor::read), the copies and the
//! [`sycl_mut`](SharedTensor::sycl_mut) guard take the tensor's data-use state for their duration (as
//! [`NpuTensor::host_data`](crate::npu::NpuTensor::host_data) does): they fail while an
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
//!   only for memory *it* allocates (`NpuToSycl`); reading that back from the CPU (or a SYCL
//!   `memcpy` that runs on the CPU) is very slow on real hardware. Use `Output`/`Binded` for
//!   anything read back. For imported memory the exporter decides the caching.
//!
//! ```no_run
//! use testkit::models;
//! use npu_sycl_bridge::npu::NpuContext;
//! use npu_sycl_bridge::openvino::{Core, Properties, TensorType};
//! use npu_sycl_bridge::strategy::Auto;
//! use npu_sycl_bridge::sycl::{self, SyclContext};
//!
//! # fn main() -> npu_sycl_bridge::Result<()> {
//! let core = Core::new()?;
//! let m = models::fully_connected();
//! let model = core.read_model_from_memory(&m.xml, &m.weights)?;
//! let compiled = core.compile_model(&model, "NPU", &Properties::new())?;
//! let npu = NpuContext::from_compiled_model(&compiled)?;
//! let gpu = sycl::devices()?.into_iter().find(|d| d.is_level_zero()).expect("an Intel GPU");
//! let context = SyclContext::new(&gpu)?;
//!
//! let auto = Auto::select(&npu, &context, &gpu)?;
//! println!("{}", auto.decision()); // "chose dma-buf because it is first in Auto's order and works"
//! let d = &m.inputs[0];
//! let mut input = auto.tensor(d.element_type, d.shape.clone(), TensorType::Input)?;
//! input.write(0, &m.sample_input(0))?; // a SYCL memcpy into the shared memory
//! let mut request = compiled.create_infer_request()?;
//! request.set_input_tensor(0, &input)?;
//! request.infer()?;
//! # Ok(()) }
//! ```

mod auto;
mod card_path;
mod request;
mod shared_tensor;

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

pub use self::auto::{Auto, AutoDecision, TensorDecision};
pub use self::request::SharedRequest;
pub use self::shared_tensor::{PendingSycl, SharedTensor};

use crate::error::{Aligned, Error, Path, Reason, Result};
use crate::level_zero;
use crate::memory::{round_up_to_page, tensor_bytes, PageAlignedBuffer, PAGE_SIZE};
use crate::npu::{NpuContext, NpuTensor};
use crate::openvino::{ElementType, Shape, TensorType};
use crate::sycl::{self, ExportableDeviceMemory, Queue, UsmBuffer, UsmKind};

/// The ways a SYCL buffer and an NPU tensor can share memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StrategyKind {
    /// A SYCL context made from the NPU's Level Zero context, `malloc_shared` in it.
    CardPath,
    /// SYCL exportable device memory, handed to the NPU as a dma-buf fd.
    DmaBuf,
    /// Page-aligned SYCL host/shared USM, imported by the NPU as CPU_VA.
    CpuVa,
    /// Page-aligned process memory imported by the NPU as CPU_VA, used in place by SYCL where the
    /// device reaches system memory, copied by SYCL elsewhere.
    SharedSystem,
    /// NPU memory the crate allocates exportable, imported by the plugin and by SYCL as dma-bufs:
    /// SYCL reads and writes NPU-owned memory in place.
    NpuExport,
    /// The NPU plugin's own memory, copied to and from SYCL (not zero-copy).
    NpuToSycl,
}

impl StrategyKind {
    /// Every strategy: the card path, then [`Auto`]'s order ([`Auto::ORDER`]).
    pub const ALL: [StrategyKind; 6] = [
        StrategyKind::CardPath,
        StrategyKind::DmaBuf,
        StrategyKind::CpuVa,
        StrategyKind::SharedSystem,
        StrategyKind::NpuExport,
        StrategyKind::NpuToSycl,
    ];

    /// The [`Path`] of its [`Unsupported`](crate::ErrorKind::Unsupported) errors.
    pub fn path(self) -> Path {
        match self {
            StrategyKind::CardPath => Path::CardPath,
            StrategyKind::DmaBuf => Path::DmaBuf,
            StrategyKind::CpuVa => Path::CpuVa,
            StrategyKind::SharedSystem => Path::SharedSystem,
            StrategyKind::NpuExport => Path::NpuToSyclZeroCopy,
            StrategyKind::NpuToSycl => Path::NpuToSycl,
        }
    }

    /// The name used in messages: `"card path"`, `"dma-buf"`, `"CPU_VA"`, `"shared system
    /// memory"`, `"NPU→SYCL zero-copy"`, `"NPU→SYCL copy"`.
    pub fn as_str(self) -> &'static str {
        self.path().as_str()
    }

    /// Whether SYCL and the NPU always use the same bytes: every strategy but `NpuToSycl` and
    /// `SharedSystem`, which is zero-copy only where the SYCL device reaches system memory
    /// ([`Strategy::is_zero_copy`] tells).
    pub fn is_zero_copy(self) -> bool {
        !matches!(self, StrategyKind::NpuToSycl | StrategyKind::SharedSystem)
    }
}

impl fmt::Display for StrategyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A way of sharing memory between SYCL and the NPU, checked against the drivers when it is made:
/// which [`StrategyKind`], the NPU context, and the SYCL queue (of the SYCL context) and device
/// whose memory it shares. [`tensor`](Self::tensor) makes [`SharedTensor`]s.
#[derive(Debug)]
pub struct Strategy {
    kind: StrategyKind,
    npu: NpuContext,
    queue: Arc<Queue>,
    device: sycl::SyclDevice,
    /// The USM kind (`CardPath`: shared; `CpuVa`: host or shared).
    usm: UsmKind,
    zero_copy: bool,
    /// The card path's Level Zero context.
    card_context: Option<Arc<level_zero::L0Context>>,
}

impl Strategy {
    /// The strategy `kind` for memory of the SYCL `device` in `context`, shared with the NPU of
    /// `npu`. `CpuVa` uses host USM (see [`cpu_va`](Self::cpu_va)); `CardPath` ignores `context`
    /// and `device` and makes its own from the NPU's Level Zero context (see
    /// [`card_path`](Self::card_path)).
    ///
    /// # Errors
    /// [`Unsupported`](crate::ErrorKind::Unsupported) with the strategy's [`path`](StrategyKind::path)
    /// where the drivers cannot do it (the explanation says why and what works instead).
    pub fn new(
        kind: StrategyKind,
        npu: &NpuContext,
        context: &Arc<sycl::SyclContext>,
        device: &sycl::SyclDevice,
    ) -> Result<Strategy> {
        match kind {
            StrategyKind::CardPath => Self::card_path(npu.level_zero_context(), npu),
            StrategyKind::CpuVa => Self::cpu_va(npu, context, device, UsmKind::Host),
            StrategyKind::DmaBuf => {
                if !npu.capabilities().fd_import {
                    return Err(Error::unsupported(
                        Path::DmaBuf,
                        Reason::NoDmaBufImport,
                        format!(
                            "the NPU driver cannot import dma-buf fds (import types {:?})",
                            npu.capabilities().import_types
                        ),
                    ));
                }
                Self::make(kind, npu, context, device, UsmKind::Device, true)
            }
            StrategyKind::SharedSystem => {
                if !npu.capabilities().sysmem_import {
                    return Err(no_sysmem_import(Path::SharedSystem, npu));
                }
                Self::make(kind, npu, context, device, UsmKind::Host, device.usm_system_allocations)
            }
            StrategyKind::NpuExport => Self::make(kind, npu, context, device, UsmKind::Device, true),
            StrategyKind::NpuToSycl => Self::make(kind, npu, context, device, UsmKind::Host, false),
        }
    }

    /// The CPU_VA strategy with USM of kind `usm` (host or shared).
    ///
    /// # Errors
    /// [`InvalidArgument`](crate::ErrorKind::InvalidArgument) for device USM (no CPU address);
    /// [`Unsupported`](crate::ErrorKind::Unsupported) `{ path: CpuVa }` where the NPU driver cannot
    /// import system memory.
    pub fn cpu_va(
        npu: &NpuContext,
        context: &Arc<sycl::SyclContext>,
        device: &sycl::SyclDevice,
        usm: UsmKind,
    ) -> Result<Strategy> {
        if !usm.is_host_accessible() {
            return Err(Error::invalid_argument(
                "CpuVa: device USM has no CPU address the NPU could import; use UsmKind::Host or UsmKind::Shared, \
                 or the dma-buf strategy for device memory",
            ));
        }
        if !npu.capabilities().sysmem_import {
            return Err(no_sysmem_import(Path::CpuVa, npu));
        }
        Self::make(StrategyKind::CpuVa, npu, context, device, usm, true)
    }

    /// The card path over `l0_context`: a SYCL context made from it (`make_context`,
    /// `ownership::keep`) and `malloc_shared` in it, imported by the NPU as CPU_VA. With the NPU's
    /// own context ([`Strategy::new`]) this is the forum snippet's route, and it fails on every
    /// stock DPC++: the NPU's driver is never a SYCL platform. Over a context of a driver SYCL
    /// lists (a GPU's) it runs to the end.
    ///
    /// # Errors
    /// [`Unsupported`](crate::ErrorKind::Unsupported) `{ path: CardPath }` with the reason.
    pub fn card_path(l0_context: &Arc<level_zero::L0Context>, npu: &NpuContext) -> Result<Strategy> {
        let (context, device) = card_path::open(l0_context, npu)?;
        let mut s = Self::make(StrategyKind::CardPath, npu, &context, &device, UsmKind::Shared, true)?;
        s.card_context = Some(Arc::clone(l0_context));
        Ok(s)
    }

    fn make(
        kind: StrategyKind,
        npu: &NpuContext,
        context: &Arc<sycl::SyclContext>,
        device: &sycl::SyclDevice,
        usm: UsmKind,
        zero_copy: bool,
    ) -> Result<Strategy> {
        let queue = Arc::new(Queue::new(context, device)?);
        Ok(Strategy { kind, npu: npu.clone(), queue, device: device.clone(), usm, zero_copy, card_context: None })
    }

    /// Which strategy this is.
    pub fn kind(&self) -> StrategyKind {
        self.kind
    }

    /// Whether SYCL and the NPU use the same bytes with this strategy here.
    pub fn is_zero_copy(&self) -> bool {
        self.zero_copy
    }

    /// The USM kind of `CpuVa` and `CardPath` tensors (`None` for the others).
    pub fn usm_kind(&self) -> Option<UsmKind> {
        matches!(self.kind, StrategyKind::CpuVa | StrategyKind::CardPath).then_some(self.usm)
    }

    /// The in-order queue the shared tensors' SYCL operations run on.
    pub fn queue(&self) -> &Arc<Queue> {
        &self.queue
    }

    /// The SYCL context the shared tensors' memory belongs to (for the card path: the one made
    /// from the Level Zero context, `ContextOrigin::LevelZeroKeep`).
    pub fn sycl_context(&self) -> &Arc<sycl::SyclContext> {
        self.queue.context()
    }

    /// The SYCL device the memory is allocated on (or, for `SharedSystem` and `NpuToSycl`, that
    /// reaches it).
    pub fn device(&self) -> &sycl::SyclDevice {
        &self.device
    }

    /// The NPU context that imports (or, for `NpuToSycl`, allocates) the memory.
    pub fn npu_context(&self) -> &NpuContext {
        &self.npu
    }

    /// The card path's Level Zero context.
    pub fn level_zero_context(&self) -> Option<&Arc<level_zero::L0Context>> {
        self.card_context.as_ref()
    }

    /// A shared tensor of `element_type` and `shape`. The SYCL allocation is page-aligned and its
    /// size rounded up to whole pages (what CPU_VA needs; dma-buf exports whole pages anyway).
    /// `tensor_type` is passed to the plugin: it matters for `NpuToSycl` (`Input` makes the plugin
    /// allocate write-combined memory) and for CPU_VA imports (an `Input` import is read-only for
    /// the NPU).
    ///
    /// # Errors
    /// SYCL allocation errors and the import errors of [`NpuContext::import`]; for the USM
    /// strategies an [`Unsupported`](crate::ErrorKind::Unsupported) `{ path: CpuVa }` when the NPU
    /// cannot pin the GPU driver's USM.
    pub fn tensor(
        &self,
        element_type: ElementType,
        shape: impl Into<Shape>,
        tensor_type: TensorType,
    ) -> Result<SharedTensor> {
        let shape = shape.into();
        self.check_tensor(element_type, &shape)?;
        let (_, len) = sizes(element_type, &shape)?;
        let context = self.queue.context();
        match self.kind {
            StrategyKind::CardPath | StrategyKind::CpuVa => {
                let buf = UsmBuffer::new(context, &self.device, self.usm, len, PAGE_SIZE)?;
                let tensor = self.npu.import(buf, element_type, shape, tensor_type).map_err(|e| {
                    if self.kind == StrategyKind::CardPath {
                        e.context("card path: the NPU's CPU_VA import of the shared USM")
                    } else {
                        e
                    }
                })?;
                self.shared(tensor)
            }
            StrategyKind::DmaBuf => {
                let mem = ExportableDeviceMemory::new(context, &self.device, len, PAGE_SIZE)?;
                self.shared(self.npu.import(mem, element_type, shape, tensor_type)?)
            }
            StrategyKind::SharedSystem => {
                let mut buffer = PageAlignedBuffer::new(len)?;
                let ptr = NonNull::new(buffer.as_mut_ptr().cast::<u8>()).expect("a mapping is never null");
                // The mapping does not move with the buffer: `ptr` stays valid while the tensor keeps it.
                let tensor = self.npu.import(buffer, element_type, shape, tensor_type)?;
                Ok(SharedTensor::over(self.kind, &self.queue, tensor, self.zero_copy, ptr, len))
            }
            StrategyKind::NpuExport => {
                // NPU memory made exportable in the crate's own NPU context; the plugin imports one
                // export (SHARED_BUF), SYCL another: three mappings of one buffer. The plugin's own
                // tensors cannot be exported: it allocates them without an export descriptor.
                let unsupported = |what: &str, e: Error| {
                    Error::unsupported(Path::NpuToSyclZeroCopy, Reason::NpuExportFailed, what.to_string())
                        .with_source(e)
                };
                let own = self.npu.export_context()?;
                let mem = own
                    .alloc_host_exportable(self.npu.device(), len, PAGE_SIZE)
                    .map_err(|e| unsupported("the NPU driver could not allocate exportable memory", e))?;
                let handle =
                    mem.export_shared().map_err(|e| unsupported("the NPU driver did not export its memory", e))?;
                let tensor = self.npu.import(crate::memory::NpuExportable(mem), element_type, shape, tensor_type)?;
                let imported = sycl::ImportedMemory::import(context, &self.device, handle, len).map_err(|e| {
                    Error::unsupported(
                        Path::NpuToSyclZeroCopy,
                        Reason::SyclImportRefused,
                        "SYCL could not import the NPU's dma-buf",
                    )
                    .with_source(e)
                })?;
                Ok(SharedTensor::over_imported(self.kind, &self.queue, tensor, imported))
            }
            StrategyKind::NpuToSycl => {
                let tensor = self.npu.l0_host_tensor(element_type, shape, tensor_type)?;
                let ptr = NonNull::new(tensor.host_va()?.cast::<u8>()).expect("the import checked the address");
                Ok(SharedTensor::over(self.kind, &self.queue, tensor, false, ptr, 0))
            }
        }
    }

    /// Whether [`tensor`](Self::tensor) can make a tensor of `element_type` and `shape` with this
    /// strategy on this NPU, decided before anything is allocated: the element type has a fixed
    /// size and the shape is static and non-empty, and for the strategies the NPU imports as
    /// CPU_VA (`CardPath`, `CpuVa`, `SharedSystem`) the byte size is a whole number of pages (the
    /// plugin's CPU_VA rule: a SqueezeNet `[1, 1000, 1, 1]` `f32` output, 4000 bytes, is refused).
    /// The dma-buf strategies and `NpuToSycl` take any size. What the drivers can do at all was
    /// checked when the strategy was made.
    ///
    /// # Errors
    /// [`Alignment { what: CpuVaByteSize }`](crate::ErrorKind::Alignment) for a CPU_VA strategy and
    /// a byte size that is not a multiple of 4096; the errors of a tensor's byte size
    /// ([`ElementType`](crate::ErrorKind::ElementType), [`Shape`](crate::ErrorKind::Shape),
    /// [`Size`](crate::ErrorKind::Size)).
    pub fn check_tensor(&self, element_type: ElementType, shape: &Shape) -> Result<()> {
        let (bytes, _) = sizes(element_type, shape)?;
        let cpu_va = matches!(self.kind, StrategyKind::CardPath | StrategyKind::CpuVa | StrategyKind::SharedSystem);
        if cpu_va && bytes % PAGE_SIZE != 0 {
            return Err(Error::alignment(Aligned::CpuVaByteSize, PAGE_SIZE, bytes)
                .context(format!("{}: a {element_type} tensor of shape {shape}", self.kind))
                .explain(format!(
                    "OpenVINO's NPU plugin imports CPU_VA memory only in whole pages of {PAGE_SIZE} bytes, and the \
                     {} strategy hands the NPU CPU_VA memory; a dma-buf strategy (DmaBuf, NpuExport) or the NPU→SYCL \
                     copy (NpuToSycl) takes any size, and Auto falls back to one for such a tensor",
                    self.kind
                )));
        }
        Ok(())
    }

    fn shared(&self, tensor: NpuTensor) -> Result<SharedTensor> {
        SharedTensor::over_sycl_memory(self.kind, &self.queue, tensor)
    }

    /// Makes a 4 KiB `u8` tensor and checks that a pattern written by SYCL is what the NPU's host
    /// mapping shows, and that a pattern written there is what SYCL reads: what [`Auto`] runs.
    pub fn probe(&self) -> Result<()> {
        let mut t = self.tensor(ElementType::U8, PROBE_SHAPE, TensorType::Binded)?;
        let kind = self.kind;
        let n = t.byte_size();
        let down: Vec<u8> = (0..n).map(|i| (i.wrapping_mul(31) ^ 0x5a) as u8).collect();
        t.write(0, &down)?;
        let seen = t.npu_tensor().host_bytes()?.to_vec();
        if seen != down {
            return Err(Error::unsupported(
                kind.path(),
                Reason::ProbeMismatch,
                format!(
                    "the {kind} probe failed: bytes written through SYCL are not what the NPU's mapping of the same \
                     tensor shows (first difference at byte {})",
                    first_difference(&seen, &down)
                ),
            ));
        }
        let up: Vec<u8> = down.iter().map(|b| !b).collect();
        {
            let mut tensor = t.npu_tensor().clone();
            tensor.host_bytes_mut()?.copy_from_slice(&up);
        }
        let back: Vec<u8> = t.read_to_vec()?;
        if back != up {
            return Err(Error::unsupported(
                kind.path(),
                Reason::ProbeMismatch,
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

/// The byte size of a tensor, checked as for the NPU's own paths (a fixed-size element type, a
/// non-empty shape), and that size rounded up to whole pages for the SYCL allocation.
pub(crate) fn sizes(element_type: ElementType, shape: &Shape) -> Result<(usize, usize)> {
    let bytes = tensor_bytes(element_type, shape)?;
    let rounded =
        round_up_to_page(bytes).ok_or_else(|| Error::size("a page-rounded SYCL allocation", bytes, usize::MAX))?;
    Ok((bytes, rounded))
}

/// The shape of the probe tensor: 4096 bytes.
const PROBE_SHAPE: [usize; 1] = [PAGE_SIZE];

fn no_sysmem_import(path: Path, npu: &NpuContext) -> Error {
    Error::unsupported(
        path,
        Reason::NoSystemMemoryImport,
        format!("the NPU driver cannot import system memory (import types {:?})", npu.capabilities().import_types),
    )
}

/// `NpuToSycl` memory is the NPU plugin's, not SYCL's.
fn not_sycl_memory() -> Error {
    Error::unsupported(Path::NpuToSyclZeroCopy, Reason::NotSyclMemory, "NPU-allocated memory is not SYCL memory")
}

/// The error for kernel-visible access to `SharedSystem` pages on a device without shared-system USM.
fn shared_system_not_reached() -> Error {
    Error::unsupported(
        Path::SharedSystem,
        Reason::NoSharedSystemUsm,
        "this SYCL device does not reach ordinary process memory directly",
    )
}
