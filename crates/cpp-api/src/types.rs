//! The C++ API's value types, defined once, here: the enums and records that cross the bridge as
//! they are (cxx shared types). `include/npu_sycl_bridge/types.hpp` is generated from this file
//! (`cargo xtask codegen`; the gates fail when it is stale), so no value is written by hand in C++,
//! and adding a variant touches this file only. The doc comments become the header's comments.

use npu_sycl_bridge::pool;
use npu_sycl_bridge::strategy::StrategyKind as RsStrategyKind;
use npu_sycl_bridge::{ErrorKind as RsErrorKind, Path, Reason as RsReason, TensorType as RsTensorType};

#[cxx::bridge(namespace = "npu_sycl_bridge")]
pub mod shared {
    /// What went wrong: the Rust crate's ErrorKind, one to one (internal: a bug in the bridge).
    #[derive(Debug)]
    #[repr(u8)]
    enum ErrorKind {
        /// An OpenVINO call failed (the message carries OpenVINO's).
        openvino,
        /// A Level Zero call failed.
        level_zero,
        /// A pointer or size is not a multiple of what the path needs (CPU_VA: 4096).
        alignment,
        /// A buffer holds fewer bytes than the tensor needs.
        size,
        /// A shape does not match (or is dynamic where a static one is needed).
        shape,
        /// An element type does not match.
        element_type,
        /// A sharing path that cannot work here: Error::path() and Error::reason() say which and why.
        unsupported,
        /// The SYCL runtime threw.
        sycl,
        /// A native runtime could not be found or loaded.
        library,
        /// An invalid argument or call.
        invalid_argument,
        /// An I/O operation failed.
        io,
        /// A pool has nothing free and may not grow.
        exhausted,
        /// A bug in the bridge (a panic caught at the boundary).
        internal,
        /// A tensor in use: a running inference, a data view or a SYCL access holds it (retry later).
        busy,
    }

    /// The sharing path an ErrorKind::unsupported error is about (the Rust crate's Path).
    #[derive(Debug)]
    #[repr(u8)]
    enum SharingPath {
        /// Not an unsupported error.
        none,
        /// A SYCL context over the NPU's Level Zero context (the forum snippet).
        card_path,
        /// A dma-buf fd imported by the NPU (SHARED_BUF).
        dma_buf,
        /// Host memory imported by the NPU (CPU_VA).
        cpu_va,
        /// Page-aligned process memory shared by the NPU and the SYCL device.
        shared_system,
        /// NPU memory reached by SYCL copies.
        npu_to_sycl,
        /// NPU memory used by SYCL in place.
        npu_to_sycl_zero_copy,
        /// A host view of a remote tensor's memory.
        host_view,
        /// Strategy::automatic: no strategy works, or none serves the tensor.
        automatic,
        /// The NPU itself (no NPU plugin, driver or context).
        npu,
        /// SYCL itself (no Level Zero GPU device).
        sycl,
        /// A Level Zero device copy.
        device_copy,
        /// An NT handle imported by the NPU (SHARED_BUF on Windows).
        nt_handle,
    }

    /// Why a path is unsupported (the Rust crate's Reason; Error::explanation() is its long text).
    #[derive(Debug)]
    #[repr(u8)]
    enum Reason {
        /// Not an unsupported error.
        none,
        /// Not the NPU's: a model compiled for another device, no NPU, an unusable NPU context.
        not_the_npu,
        /// The driver does not import dma-bufs.
        no_dma_buf_import,
        /// The memory cannot be exported as a dma-buf.
        not_exportable,
        /// The NPU imports no system memory (NPU 37xx, or a kernel without userptr).
        no_system_memory_import,
        /// The NPU cannot pin the GPU driver's host or shared USM.
        gpu_usm_not_pinnable,
        /// Device memory has no CPU address.
        no_host_address,
        /// An allocation of the NPU plugin's own context that the plugin did not make.
        plugin_context_memory,
        /// A pointer inside, not at the start of, an allocation of the NPU's context.
        inside_npu_allocation,
        /// The memory stays its exporter's: no host view.
        exporter_owns_memory,
        /// No SYCL platform wraps the context's Level Zero driver (the card path).
        no_sycl_platform,
        /// SYCL lists no usable Level Zero GPU.
        no_level_zero_gpu,
        /// NPU plugin memory is not SYCL memory.
        not_sycl_memory,
        /// The SYCL device does not reach process memory directly.
        no_shared_system_usm,
        /// The NPU driver could not allocate or export memory for SYCL.
        npu_export_failed,
        /// The GPU driver refused the NPU's dma-buf.
        sycl_import_refused,
        /// A strategy's probe saw different bytes on the two sides.
        probe_mismatch,
        /// The device has no queue group that can copy.
        no_copy_queue,
        /// No strategy works here, or none serves the tensor.
        no_strategy,
        /// The driver does not import NT handles (Windows).
        no_nt_handle_import,
    }

    /// The ways of sharing memory between SYCL and the NPU (the Rust crate's StrategyKind).
    #[derive(Debug)]
    #[repr(u8)]
    enum StrategyKind {
        /// A SYCL context over the NPU's Level Zero context (the forum snippet): never works on stock DPC++.
        card_path,
        /// SYCL exportable device memory, imported by the NPU as a dma-buf.
        dma_buf,
        /// SYCL host USM imported by the NPU as CPU_VA.
        cpu_va,
        /// Page-aligned process memory: the NPU imports it, SYCL uses it in place where the GPU has
        /// shared-system USM and copies otherwise.
        shared_system,
        /// NPU memory the crate allocates exportable, imported by the plugin and by SYCL as dma-bufs.
        npu_export,
        /// The NPU plugin's memory, reached by SYCL copies (not zero-copy).
        npu_to_sycl,
    }

    /// OpenVINO's TENSOR_TYPE: input memory is imported read-only for the NPU (CPU_VA) and may be
    /// write-combined when the plugin allocates it; binded is read-write.
    #[derive(Debug)]
    #[repr(u8)]
    enum TensorType {
        input,
        output,
        binded,
    }

    /// What a pool holds and has done.
    #[derive(Debug, Default)]
    struct PoolStats {
        /// Buffers held.
        buffers: usize,
        /// Bytes held.
        bytes: usize,
        /// Buffers the allocator made.
        allocations: u64,
        /// NPU imports made.
        imports: u64,
        /// Tensors handed out without an import.
        hits: u64,
        /// Tensors handed out after an import.
        misses: u64,
        /// Buffers whose tensor is in use now.
        in_use: usize,
    }

    /// What a pool's trim() released.
    #[derive(Debug, Default)]
    struct PoolTrimmed {
        /// Imports dropped.
        imports: usize,
        /// Buffers released.
        buffers: usize,
        /// Their bytes.
        bytes: usize,
    }
}

pub use shared::{ErrorKind, PoolStats, PoolTrimmed, Reason, SharingPath, StrategyKind, TensorType};

impl From<&RsErrorKind> for ErrorKind {
    fn from(kind: &RsErrorKind) -> Self {
        match kind {
            RsErrorKind::OpenVino { .. } => ErrorKind::openvino,
            RsErrorKind::LevelZero { .. } => ErrorKind::level_zero,
            RsErrorKind::Alignment { .. } => ErrorKind::alignment,
            RsErrorKind::Size { .. } => ErrorKind::size,
            RsErrorKind::Shape => ErrorKind::shape,
            RsErrorKind::ElementType => ErrorKind::element_type,
            RsErrorKind::Unsupported { .. } => ErrorKind::unsupported,
            RsErrorKind::Sycl => ErrorKind::sycl,
            RsErrorKind::Library => ErrorKind::library,
            RsErrorKind::InvalidArgument => ErrorKind::invalid_argument,
            RsErrorKind::Io => ErrorKind::io,
            RsErrorKind::Exhausted => ErrorKind::exhausted,
            RsErrorKind::Busy => ErrorKind::busy,
            _ => ErrorKind::internal,
        }
    }
}

impl ErrorKind {
    /// The value's name in C++ (`"unsupported"`).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::openvino => "openvino",
            ErrorKind::level_zero => "level_zero",
            ErrorKind::alignment => "alignment",
            ErrorKind::size => "size",
            ErrorKind::shape => "shape",
            ErrorKind::element_type => "element_type",
            ErrorKind::unsupported => "unsupported",
            ErrorKind::sycl => "sycl",
            ErrorKind::library => "library",
            ErrorKind::invalid_argument => "invalid_argument",
            ErrorKind::io => "io",
            ErrorKind::exhausted => "exhausted",
            ErrorKind::busy => "busy",
            ErrorKind::internal => "internal",
            _ => "unknown",
        }
    }
}

/// Each path and its C++ value.
const PATHS: [(Path, SharingPath); 12] = [
    (Path::CardPath, SharingPath::card_path),
    (Path::DmaBuf, SharingPath::dma_buf),
    (Path::CpuVa, SharingPath::cpu_va),
    (Path::SharedSystem, SharingPath::shared_system),
    (Path::NpuToSycl, SharingPath::npu_to_sycl),
    (Path::NpuToSyclZeroCopy, SharingPath::npu_to_sycl_zero_copy),
    (Path::HostView, SharingPath::host_view),
    (Path::Auto, SharingPath::automatic),
    (Path::Npu, SharingPath::npu),
    (Path::Sycl, SharingPath::sycl),
    (Path::DeviceCopy, SharingPath::device_copy),
    (Path::NtHandle, SharingPath::nt_handle),
];

impl From<Path> for SharingPath {
    fn from(path: Path) -> Self {
        PATHS.iter().find(|(p, _)| *p == path).map_or(SharingPath::none, |(_, c)| *c)
    }
}

impl SharingPath {
    /// The crate's name of the path (what its messages say); `"none"`, or `"unknown"` for a value
    /// C++ made up.
    pub fn name(self) -> &'static str {
        match self.to_rust() {
            Some(path) => path.as_str(),
            None if self == SharingPath::none => "none",
            None => "unknown",
        }
    }

    /// The crate's path (`None` for `none` and made-up values).
    pub fn to_rust(self) -> Option<Path> {
        PATHS.iter().find(|(_, c)| *c == self).map(|(p, _)| *p)
    }
}

/// Each reason and its C++ value.
const REASONS: [(RsReason, Reason); RsReason::ALL.len()] = [
    (RsReason::NotTheNpu, Reason::not_the_npu),
    (RsReason::NoDmaBufImport, Reason::no_dma_buf_import),
    (RsReason::NotExportable, Reason::not_exportable),
    (RsReason::NoSystemMemoryImport, Reason::no_system_memory_import),
    (RsReason::GpuUsmNotPinnable, Reason::gpu_usm_not_pinnable),
    (RsReason::NoHostAddress, Reason::no_host_address),
    (RsReason::PluginContextMemory, Reason::plugin_context_memory),
    (RsReason::InsideNpuAllocation, Reason::inside_npu_allocation),
    (RsReason::ExporterOwnsMemory, Reason::exporter_owns_memory),
    (RsReason::NoSyclPlatform, Reason::no_sycl_platform),
    (RsReason::NoLevelZeroGpu, Reason::no_level_zero_gpu),
    (RsReason::NotSyclMemory, Reason::not_sycl_memory),
    (RsReason::NoSharedSystemUsm, Reason::no_shared_system_usm),
    (RsReason::NpuExportFailed, Reason::npu_export_failed),
    (RsReason::SyclImportRefused, Reason::sycl_import_refused),
    (RsReason::ProbeMismatch, Reason::probe_mismatch),
    (RsReason::NoCopyQueue, Reason::no_copy_queue),
    (RsReason::NoStrategy, Reason::no_strategy),
    (RsReason::NoNtHandleImport, Reason::no_nt_handle_import),
];

impl From<RsReason> for Reason {
    fn from(reason: RsReason) -> Self {
        REASONS.iter().find(|(r, _)| *r == reason).map_or(Reason::none, |(_, c)| *c)
    }
}

impl Reason {
    /// The reason's name (`"no_dma_buf_import"`), the Rust `Reason::as_str`; `"none"`, or
    /// `"unknown"` for a value C++ made up.
    pub fn name(self) -> &'static str {
        match self.to_rust() {
            Some(reason) => reason.as_str(),
            None if self == Reason::none => "none",
            None => "unknown",
        }
    }

    /// The crate's reason (`None` for `none` and made-up values).
    pub fn to_rust(self) -> Option<RsReason> {
        REASONS.iter().find(|(_, c)| *c == self).map(|(r, _)| *r)
    }
}

/// Each strategy and its C++ value.
const STRATEGIES: [(RsStrategyKind, StrategyKind); RsStrategyKind::ALL.len()] = [
    (RsStrategyKind::CardPath, StrategyKind::card_path),
    (RsStrategyKind::DmaBuf, StrategyKind::dma_buf),
    (RsStrategyKind::CpuVa, StrategyKind::cpu_va),
    (RsStrategyKind::SharedSystem, StrategyKind::shared_system),
    (RsStrategyKind::NpuExport, StrategyKind::npu_export),
    (RsStrategyKind::NpuToSycl, StrategyKind::npu_to_sycl),
];

impl From<RsStrategyKind> for StrategyKind {
    fn from(kind: RsStrategyKind) -> Self {
        STRATEGIES.iter().find(|(k, _)| *k == kind).map(|(_, c)| *c).expect("every StrategyKind has a C++ value")
    }
}

impl StrategyKind {
    /// The crate's strategy, or `None` for a value C++ made up (a cast out of range).
    pub fn to_rust(self) -> Option<RsStrategyKind> {
        STRATEGIES.iter().find(|(_, c)| *c == self).map(|(k, _)| *k)
    }
}

impl TensorType {
    /// The crate's tensor type, or `None` for a value C++ made up.
    pub fn to_rust(self) -> Option<RsTensorType> {
        match self {
            TensorType::input => Some(RsTensorType::Input),
            TensorType::output => Some(RsTensorType::Output),
            TensorType::binded => Some(RsTensorType::Binded),
            _ => None,
        }
    }
}

impl From<pool::PoolStats> for PoolStats {
    fn from(s: pool::PoolStats) -> Self {
        PoolStats {
            buffers: s.buffers,
            bytes: s.bytes,
            allocations: s.allocations,
            imports: s.imports,
            hits: s.hits,
            misses: s.misses,
            in_use: s.in_use,
        }
    }
}
