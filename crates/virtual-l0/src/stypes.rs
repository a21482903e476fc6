//! Structure-type values matched in `pNext` chains, as plain numbers. Each is interpreted only by
//! the call it arrives in (NPU extension enums reuse small values such as 0x1, 0x2 and 0xE).
//! Values from oneapi-src/level-zero v1.32.0 `ze_api.h`; those newer than the 1.20.6 bindings
//! (spec 1.12) are defined here and nowhere else.

/// `ze_device_properties_t` (timerResolution in ns).
pub const DEVICE_PROPERTIES: u32 = 0x3;
/// `ze_device_properties_t` with `ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2` (timerResolution in cycles/s).
pub const DEVICE_PROPERTIES_1_2: u32 = 0x0002_0006;
/// `ze_device_ip_version_ext_t`.
pub const DEVICE_IP_VERSION_EXT: u32 = 0x0001_000f;
/// `ze_memory_free_ext_desc_t`.
pub const MEMORY_FREE_EXT_DESC: u32 = 0x0001_000a;
/// `ze_external_memory_export_desc_t`.
pub const EXTERNAL_MEMORY_EXPORT_DESC: u32 = 0x18;
/// `ze_external_memory_import_fd_t`.
pub const EXTERNAL_MEMORY_IMPORT_FD: u32 = 0x19;
/// `ze_external_memory_export_fd_t`.
pub const EXTERNAL_MEMORY_EXPORT_FD: u32 = 0x1a;
/// `ze_external_memory_import_win32_handle_t`.
pub const EXTERNAL_MEMORY_IMPORT_WIN32: u32 = 0x22;
/// `ze_external_memory_export_win32_handle_t`.
pub const EXTERNAL_MEMORY_EXPORT_WIN32: u32 = 0x23;
/// `ze_external_memmap_sysmem_ext_desc_t` (spec 1.13+; older npu headers used 0x24).
pub const EXTERNAL_MEMMAP_SYSMEM_EXT_DESC: u32 = 0x0002_0037;
/// `ze_ipc_mem_handle_type_ext_desc_t`.
pub const IPC_MEM_HANDLE_TYPE_EXT_DESC: u32 = 0x0002_003d;
/// `ze_init_driver_type_desc_t`.
pub const INIT_DRIVER_TYPE_DESC: u32 = 0x0002_0021;
/// `ze_mutable_command_list_exp_desc_t`.
pub const MUTABLE_COMMAND_LIST_EXP_DESC: u32 = 0x0002_0016;
/// `ze_mutable_command_id_exp_desc_t`.
pub const MUTABLE_COMMAND_ID_EXP_DESC: u32 = 0x0002_0017;
/// `ze_mutable_commands_exp_desc_t`.
pub const MUTABLE_COMMANDS_EXP_DESC: u32 = 0x0002_0018;
/// `ze_mutable_graph_argument_exp_desc_t`.
pub const MUTABLE_GRAPH_ARGUMENT_EXP_DESC: u32 = 0x0002_0020;
/// The graph extension's older stype for the same structure (still accepted by the NPU driver).
pub const MUTABLE_GRAPH_ARGUMENT_EXP_DESC_DEPRECATED: u32 = 0x7;
/// `ZE_MUTABLE_COMMAND_EXP_FLAG_GRAPH_ARGUMENT_DEPRECATED` (graph extension) and
/// `ZE_MUTABLE_COMMAND_EXP_FLAG_GRAPH_ARGUMENTS` (core 1.32): the only flags the NPU driver takes.
pub const MUTABLE_COMMAND_EXP_FLAGS_GRAPH: [u32; 2] = [1 << 6, 1 << 7];
/// `ze_mutable_command_list_exp_properties_t` (device properties chain).
pub const MUTABLE_COMMAND_LIST_EXP_PROPERTIES: u32 = 0x0002_0015;
/// What the NPU reports in `mutableCommandFlags`: both graph-argument flags.
pub const NPU_MUTABLE_COMMAND_FLAGS: u32 = (1 << 6) | (1 << 7);
/// `ze_event_pool_counter_based_exp_desc_t` (tolerated, nothing to do: execution is synchronous).
pub const EVENT_POOL_COUNTER_BASED_EXP_DESC: u32 = 0x0002_0014;

/// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF`.
pub const EXTERNAL_MEMORY_TYPE_FLAG_DMA_BUF: u32 = 0x2;
/// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD`.
pub const EXTERNAL_MEMORY_TYPE_FLAG_OPAQUE_FD: u32 = 0x1;
/// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_STANDARD_ALLOCATION` (`ze_context_npu_ext.h`).
pub const EXTERNAL_MEMORY_TYPE_FLAG_STANDARD_ALLOCATION: u32 = 0x100;

/// `ZE_MAKE_VERSION`.
pub const fn make_version(major: u32, minor: u32) -> u32 {
    (major << 16) | (minor & 0xffff)
}

/// `ze_mutable_graph_argument_exp_desc_t` (spec 1.13+, not in the 1.20.6 bindings).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct MutableGraphArgumentExpDesc {
    /// 0x00020020
    pub stype: u32,
    /// next in chain
    pub pNext: *const std::ffi::c_void,
    /// command id from `zeCommandListGetNextCommandIdExp`
    pub commandId: u64,
    /// graph argument index
    pub argIndex: u32,
    /// new argument value (a pointer)
    pub pArgValue: *const std::ffi::c_void,
}

/// `ze_external_memmap_sysmem_ext_desc_t` (spec 1.13+, not in the 1.20.6 bindings).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ExternalMemmapSysmemExtDesc {
    /// 0x00020037
    pub stype: u32,
    /// next in chain
    pub pNext: *const std::ffi::c_void,
    /// the caller's memory (page-aligned)
    pub pSystemMemory: *const std::ffi::c_void,
    /// its size in bytes (a multiple of the page size)
    pub size: u64,
}
