//! Why a sharing path is [`Unsupported`](super::ErrorKind::Unsupported): one enum to match on, and
//! the one place its long explanations live (why, on which drivers, what to use instead).

use std::fmt;

/// Why a path does not work here. Carried by [`ErrorKind::Unsupported`](super::ErrorKind::Unsupported);
/// [`explanation`](Self::explanation) is what [`Error::explanation`](super::Error::explanation)
/// returns for it.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The OpenVINO object is not the NPU's: a model compiled for another device, a Core without
    /// an NPU, a remote context of another device, or an NPU context whose Level Zero context is
    /// unusable.
    NotTheNpu,
    /// The device's Level Zero driver does not list `DMA_BUF` among its import types.
    NoDmaBufImport,
    /// The memory cannot be exported as a dma-buf (the device exports none, or the allocation was
    /// not made exportable).
    NotExportable,
    /// The NPU driver does not list `STANDARD_ALLOCATION` among its import types: NPU 37xx, or a
    /// kernel without the userptr ioctl.
    NoSystemMemoryImport,
    /// The NPU driver refused to pin the GPU driver's host or shared USM.
    GpuUsmNotPinnable,
    /// Device memory has no CPU address to import as CPU_VA.
    NoHostAddress,
    /// The memory is an allocation of the NPU plugin's own Level Zero context that the plugin did
    /// not make.
    PluginContextMemory,
    /// The pointer lies inside, not at the start of, an allocation of the NPU's context.
    InsideNpuAllocation,
    /// The tensor's memory stays its exporter's, so no host view of it is handed out.
    ExporterOwnsMemory,
    /// No SYCL platform wraps the Level Zero driver of the context (the card path).
    NoSyclPlatform,
    /// SYCL lists no usable Level Zero GPU device for this purpose.
    NoLevelZeroGpu,
    /// Memory the NPU plugin allocated is not SYCL memory.
    NotSyclMemory,
    /// The SYCL device does not reach ordinary process memory directly (no shared-system USM).
    NoSharedSystemUsm,
    /// The NPU driver could not allocate or export memory for SYCL to import.
    NpuExportFailed,
    /// The GPU driver refused to import the NPU driver's dma-buf.
    SyclImportRefused,
    /// A strategy's probe saw different bytes on the two sides of the shared memory.
    ProbeMismatch,
    /// The device has no queue group that can copy.
    NoCopyQueue,
    /// No strategy in Auto's order works here, or none serves the tensor.
    NoStrategy,
    /// The device's Level Zero driver does not list `OPAQUE_WIN32` among its import types
    /// (Windows: no NT-handle import).
    NoNtHandleImport,
}

impl Reason {
    /// Every reason, for tests and tools that list them.
    pub const ALL: [Reason; 19] = [
        Reason::NotTheNpu,
        Reason::NoDmaBufImport,
        Reason::NotExportable,
        Reason::NoSystemMemoryImport,
        Reason::GpuUsmNotPinnable,
        Reason::NoHostAddress,
        Reason::PluginContextMemory,
        Reason::InsideNpuAllocation,
        Reason::ExporterOwnsMemory,
        Reason::NoSyclPlatform,
        Reason::NoLevelZeroGpu,
        Reason::NotSyclMemory,
        Reason::NoSharedSystemUsm,
        Reason::NpuExportFailed,
        Reason::SyclImportRefused,
        Reason::ProbeMismatch,
        Reason::NoCopyQueue,
        Reason::NoStrategy,
        Reason::NoNtHandleImport,
    ];

    /// A short name in snake case (`"no_dma_buf_import"`), as the C++ API and the doctor's JSON
    /// spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NotTheNpu => "not_the_npu",
            Reason::NoDmaBufImport => "no_dma_buf_import",
            Reason::NotExportable => "not_exportable",
            Reason::NoSystemMemoryImport => "no_system_memory_import",
            Reason::GpuUsmNotPinnable => "gpu_usm_not_pinnable",
            Reason::NoHostAddress => "no_host_address",
            Reason::PluginContextMemory => "plugin_context_memory",
            Reason::InsideNpuAllocation => "inside_npu_allocation",
            Reason::ExporterOwnsMemory => "exporter_owns_memory",
            Reason::NoSyclPlatform => "no_sycl_platform",
            Reason::NoLevelZeroGpu => "no_level_zero_gpu",
            Reason::NotSyclMemory => "not_sycl_memory",
            Reason::NoSharedSystemUsm => "no_shared_system_usm",
            Reason::NpuExportFailed => "npu_export_failed",
            Reason::SyclImportRefused => "sycl_import_refused",
            Reason::ProbeMismatch => "probe_mismatch",
            Reason::NoCopyQueue => "no_copy_queue",
            Reason::NoStrategy => "no_strategy",
            Reason::NoNtHandleImport => "no_nt_handle_import",
        }
    }

    /// The long explanation: why, on which drivers, and what to use instead.
    pub fn explanation(self) -> &'static str {
        match self {
            Reason::NotTheNpu => {
                "the NPU paths need OpenVINO's NPU plugin: compile the model for \"NPU\" (or take the context \
                 with Core::default_context(\"NPU\")); OpenVINO's own error is the source, and npu-sycl-doctor \
                 shows which devices OpenVINO and Level Zero find"
            }
            Reason::NoDmaBufImport => {
                "the device's Level Zero driver does not list DMA_BUF among its import types. For the NPU, use \
                 CPU_VA memory (a PageAlignedBuffer; from SYCL the SharedSystem strategy), an L0 host tensor, or \
                 the NPU→SYCL copy (NpuToSycl)"
            }
            Reason::NotExportable if cfg!(windows) => {
                "device memory reaches another driver only as an NT handle, and the GPU driver makes one only for \
                 device memory allocated exportable (L0Context::alloc_device_exportable; host memory is never \
                 shareable on Windows); the NPU driver exports none"
            }
            Reason::NotExportable => {
                "device memory reaches another driver only as a dma-buf, and only memory allocated exportable \
                 exports one: allocate it with L0Context::alloc_device_exportable / alloc_host_exportable or as \
                 SYCL exportable device memory (ExportableDeviceMemory); a device whose export types lack \
                 DMA_BUF exports nothing"
            }
            Reason::NoSystemMemoryImport if cfg!(windows) => {
                "the NPU driver's import types lack STANDARD_ALLOCATION: NPU 37xx (Meteor/Arrow Lake) imports no \
                 user memory. Use an NT handle (GPU exportable device memory: NtHandleMemory) or an L0 host tensor"
            }
            Reason::NoSystemMemoryImport => {
                "the NPU driver's import types lack STANDARD_ALLOCATION: NPU 37xx (Meteor/Arrow Lake) imports no \
                 user memory, and NPU 40xx+ needs a kernel with the userptr ioctl. Use a dma-buf (SYCL \
                 exportable device memory: the DmaBuf strategy), an L0 host tensor, or the NPU→SYCL copy \
                 (NpuToSycl)"
            }
            Reason::GpuUsmNotPinnable => {
                "Intel's GPU driver maps host and shared USM from GPU buffer objects, which the NPU's kernel \
                 driver cannot pin (pin_user_pages refuses VM_PFNMAP|VM_IO mappings). Zero-copy works with GPU \
                 memory handed over as a dma-buf (SYCL exportable device memory, a Level Zero exportable \
                 allocation: the DmaBuf strategy, what Auto picks); CPU_VA works with ordinary page-aligned \
                 process memory (PageAlignedBuffer, the SharedSystem strategy) that SYCL copies into"
            }
            Reason::NoHostAddress => {
                "device USM has no CPU address the NPU could import and no fd: use host or shared USM (CPU_VA) \
                 or SYCL exportable device memory (a dma-buf), or let Strategy::tensor allocate"
            }
            Reason::PluginContextMemory => {
                "OpenVINO's NPU plugin does not import memory of its own context: it reuses only allocations it \
                 made itself (L0 host tensors, its earlier imports) and refuses others. Use \
                 NpuContext::l0_host_tensor for memory of the plugin's context, or allocate in a GPU context and \
                 export a dma-buf"
            }
            Reason::InsideNpuAllocation => {
                "OpenVINO's NPU plugin reuses an allocation of its context from the allocation's start and would \
                 silently use other bytes. Pass the allocation's start, or use a separate page-aligned buffer"
            }
            Reason::ExporterOwnsMemory => {
                "the exporter (or another fd of the buffer) can write the pages at any time, so a host view (a \
                 Rust slice) of them could change under its reader. Read and write the data through the \
                 exporter (L0Allocation::read/write, a SYCL queue); the next inference sees such writes without \
                 rebinding"
            }
            Reason::NoSyclPlatform => {
                "DPC++ builds SYCL platforms only from Level Zero drivers that have a GPU device, so the NPU's \
                 driver is never a SYCL platform and no SYCL device matches its context; a SYCL context of one \
                 driver with devices of another is invalid (make_context: UR adapter v2 throws \
                 UR_RESULT_ERROR_INVALID_ARGUMENT, v1 fails later: malloc_shared returns null and teardown \
                 crashes). Use the strategy that works on every laptop generation: dma-buf (DmaBuf: SYCL \
                 exportable device memory -> dma-buf fd -> NPU SHARED_BUF, what Intel recommends on Linux), or \
                 the NPU→SYCL copy (NpuToSycl), or let Auto choose. CPU_VA (CpuVa) of SYCL host/shared USM does \
                 not work: the NPU cannot pin the GPU driver's USM; CPU_VA of page-aligned process memory does \
                 on NPU 40xx+ (the SharedSystem strategy, or NpuContext::import of a PageAlignedBuffer)"
            }
            Reason::NoLevelZeroGpu => {
                "every strategy shares memory of the iGPU's Level Zero driver: make the SYCL queue on the Level \
                 Zero GPU (ONEAPI_DEVICE_SELECTOR=level_zero:gpu) and check that the GPU's Level Zero driver is \
                 installed (npu-sycl-doctor shows what is found)"
            }
            Reason::NotSyclMemory => {
                "the NPU plugin's L0 host allocation belongs to the NPU's Level Zero driver, and SYCL's GPU \
                 driver sees it as a foreign pointer (get_pointer_type: unknown), so SYCL kernels cannot use it. \
                 A SYCL memcpy can still read and write it as plain host memory (a CPU copy): use \
                 SharedTensor::copy_from / copy_to / write / read. For zero-copy, have the NPU driver export its \
                 memory to SYCL (NpuExport), or let SYCL allocate and the NPU import: the dma-buf strategy \
                 (DmaBuf) or CPU_VA (CpuVa)"
            }
            Reason::NoSharedSystemUsm => {
                "the SYCL device has no aspect::usm_system_allocations: the GPU reports no shared-system USM, as \
                 on Meteor/Arrow Lake and on Xe2+ without a kernel that mirrors CPU page tables, so SYCL kernels \
                 cannot use these pages. SYCL memcpys still reach them: use SharedTensor::write / read / \
                 copy_from / copy_to. For zero-copy on the SYCL side use the dma-buf strategy (DmaBuf)"
            }
            Reason::NpuExportFailed => {
                "the NPU driver exports only memory it allocated with an export descriptor, in a context of its \
                 own; where that fails, use the dma-buf strategy (SYCL memory imported by the NPU) or the \
                 NPU→SYCL copy"
            }
            Reason::SyclImportRefused => {
                "the GPU driver refused the NPU driver's dma-buf (SYCL external_memory import); use the dma-buf \
                 strategy (SYCL memory imported by the NPU) or the NPU→SYCL copy"
            }
            Reason::ProbeMismatch => {
                "the two drivers do not see the same bytes through this path on this machine, so it is not used; \
                 npu-sycl-doctor shows every path's result. Report the drivers' versions: this is a driver bug \
                 or a path the drivers do not really share"
            }
            Reason::NoCopyQueue => {
                "a Level Zero device with neither a copy nor a compute queue group cannot run the copy; copy \
                 through host memory instead"
            }
            Reason::NoStrategy => {
                "each strategy tried is listed with the error that ruled it out; npu-sycl-doctor tries every path \
                 and says what the drivers support"
            }
            Reason::NoNtHandleImport => {
                "the device's Level Zero driver does not list OPAQUE_WIN32 among its import types, so it imports \
                 no NT handle. For the NPU, use CPU_VA memory (a PageAlignedBuffer) where the driver imports \
                 system memory, or an L0 host tensor"
            }
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
