//! The Intel NPU Level Zero extensions, written by hand.
//!
//! These structures and tables are not in the core Level Zero headers. Their layout follows the public
//! headers of intel/level-zero-npu-extensions (`ze_graph_ext.h` up to graph extension 1.18,
//! `ze_driver_npu_ext.h`, `ze_command_queue_npu_ext.h`, `ze_context_npu_ext.h`,
//! `ze_graph_profiling_ext.h`, `ze_intel_npu_uuid.h`) and the external-memmap-sysmem descriptor of the
//! Level Zero 1.32 headers. Only the ABI is reproduced: field order, field types and numeric values.
//!
//! Structure-type values of these extensions live in per-extension enumerations and collide with the
//! core `ze_structure_type_t` values (`0x1` means something different in every extension). They are
//! therefore plain `u32` constants here, and a `pNext` entry must be interpreted by the call it arrives in.
//!
//! Layout notes:
//! - C enums are 32-bit (`u32`/`i32`) on every ABI the NPU plugin targets, so enum-typed fields are `u32`.
//! - C `bool` is one byte, Rust `bool` has the same ABI.
//! - Fixed-size `char` arrays are `[c_char; N]`.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use std::os::raw::{c_char, c_void};

use crate::{
    ze_command_list_handle_t, ze_command_queue_handle_t, ze_context_handle_t, ze_device_handle_t, ze_driver_handle_t,
    ze_event_handle_t, ze_result_t,
};

use crate::ze_make_version;

// ---------------------------------------------------------------------------------------------------------
// Extension names
// ---------------------------------------------------------------------------------------------------------

/// `ZE_GRAPH_EXT_NAME`.
pub const ZE_GRAPH_EXT_NAME: &str = "ZE_extension_graph";
/// `ZE_DRIVER_NPU_EXT_NAME`.
pub const ZE_DRIVER_NPU_EXT_NAME: &str = "ZE_extension_driver_npu";
/// `ZE_COMMAND_QUEUE_NPU_EXT_NAME`.
pub const ZE_COMMAND_QUEUE_NPU_EXT_NAME: &str = "ZE_extension_command_queue_npu";
/// `ZE_CONTEXT_NPU_EXT_NAME`.
pub const ZE_CONTEXT_NPU_EXT_NAME: &str = "ZE_extension_context_npu";
/// `ZE_PROFILING_DATA_EXT_NAME`.
pub const ZE_PROFILING_DATA_EXT_NAME: &str = "ZE_extension_profiling_data";
/// The name under which the NPU plugin looks for the sysmem import extension.
pub const ZE_EXTERNAL_MEMMAP_SYSMEM_EXT_NAME: &str = "ZE_extension_external_memmap_sysmem";
/// The core mutable-command-list experimental extension name, as advertised by NPU drivers (the core
/// bindings carry it as the byte string `ZE_MUTABLE_COMMAND_LIST_EXP_NAME`).
pub const ZE_MUTABLE_COMMAND_LIST_EXP_EXT_NAME: &str = "ZE_experimental_mutable_command_list";

// ---------------------------------------------------------------------------------------------------------
// UUIDs (`ze_intel_npu_uuid.h`)
// ---------------------------------------------------------------------------------------------------------

/// `ze_intel_npu_driver_uuid`: the NPU plugin accepts only a driver whose `ze_driver_properties_t::uuid`
/// equals this value.
pub const ZE_INTEL_NPU_DRIVER_UUID: [u8; 16] =
    [0x01, 0x7d, 0xe9, 0x31, 0x6b, 0x4d, 0x4f, 0xd4, 0xaa, 0x9b, 0x5b, 0xed, 0x77, 0xfc, 0x8e, 0x89];
/// `ze_intel_npu_device_uuid`.
pub const ZE_INTEL_NPU_DEVICE_UUID: [u8; 16] =
    [0x80, 0xd1, 0xd1, 0x1e, 0xb7, 0x38, 0x11, 0xea, 0xb3, 0xde, 0x02, 0x42, 0xac, 0x13, 0x00, 0x04];

// ---------------------------------------------------------------------------------------------------------
// Opaque handles of the extensions
// ---------------------------------------------------------------------------------------------------------

#[repr(C)]
pub struct _ze_graph_handle_t {
    _private: [u8; 0],
}
/// A graph object of the graph extension.
pub type ze_graph_handle_t = *mut _ze_graph_handle_t;

#[repr(C)]
pub struct _ze_graph_build_log_handle_t {
    _private: [u8; 0],
}
/// A build log returned by `pfnCreate3`.
pub type ze_graph_build_log_handle_t = *mut _ze_graph_build_log_handle_t;

#[repr(C)]
pub struct _ze_graph_query_network_handle_t {
    _private: [u8; 0],
}
/// A query-network object (`core.query_model`).
pub type ze_graph_query_network_handle_t = *mut _ze_graph_query_network_handle_t;

#[repr(C)]
pub struct _ze_graph_profiling_pool_handle_t {
    _private: [u8; 0],
}
/// A profiling pool.
pub type ze_graph_profiling_pool_handle_t = *mut _ze_graph_profiling_pool_handle_t;

#[repr(C)]
pub struct _ze_graph_profiling_query_handle_t {
    _private: [u8; 0],
}
/// A profiling query.
pub type ze_graph_profiling_query_handle_t = *mut _ze_graph_profiling_query_handle_t;

// ---------------------------------------------------------------------------------------------------------
// Graph extension: versions, enumerations, constants
// ---------------------------------------------------------------------------------------------------------

/// `ze_graph_ext_version_t`.
pub type ze_graph_ext_version_t = u32;
pub const ZE_GRAPH_EXT_VERSION_1_0: ze_graph_ext_version_t = ze_make_version(1, 0);
pub const ZE_GRAPH_EXT_VERSION_1_1: ze_graph_ext_version_t = ze_make_version(1, 1);
pub const ZE_GRAPH_EXT_VERSION_1_2: ze_graph_ext_version_t = ze_make_version(1, 2);
pub const ZE_GRAPH_EXT_VERSION_1_3: ze_graph_ext_version_t = ze_make_version(1, 3);
pub const ZE_GRAPH_EXT_VERSION_1_4: ze_graph_ext_version_t = ze_make_version(1, 4);
pub const ZE_GRAPH_EXT_VERSION_1_5: ze_graph_ext_version_t = ze_make_version(1, 5);
pub const ZE_GRAPH_EXT_VERSION_1_6: ze_graph_ext_version_t = ze_make_version(1, 6);
pub const ZE_GRAPH_EXT_VERSION_1_7: ze_graph_ext_version_t = ze_make_version(1, 7);
pub const ZE_GRAPH_EXT_VERSION_1_8: ze_graph_ext_version_t = ze_make_version(1, 8);
pub const ZE_GRAPH_EXT_VERSION_1_11: ze_graph_ext_version_t = ze_make_version(1, 11);
pub const ZE_GRAPH_EXT_VERSION_1_12: ze_graph_ext_version_t = ze_make_version(1, 12);
pub const ZE_GRAPH_EXT_VERSION_1_13: ze_graph_ext_version_t = ze_make_version(1, 13);
pub const ZE_GRAPH_EXT_VERSION_1_14: ze_graph_ext_version_t = ze_make_version(1, 14);
pub const ZE_GRAPH_EXT_VERSION_1_15: ze_graph_ext_version_t = ze_make_version(1, 15);
pub const ZE_GRAPH_EXT_VERSION_1_16: ze_graph_ext_version_t = ze_make_version(1, 16);
pub const ZE_GRAPH_EXT_VERSION_1_17: ze_graph_ext_version_t = ze_make_version(1, 17);
pub const ZE_GRAPH_EXT_VERSION_1_18: ze_graph_ext_version_t = ze_make_version(1, 18);

/// `ze_graph_format_t`.
pub type ze_graph_format_t = u32;
/// A pre-compiled, driver-specific blob.
pub const ZE_GRAPH_FORMAT_NATIVE: ze_graph_format_t = 0x1;
/// The OpenVINO IR container described in the module docs of the virtual driver.
pub const ZE_GRAPH_FORMAT_NGRAPH_LITE: ze_graph_format_t = 0x2;

/// `ze_structure_type_graph_ext_t`.
pub type ze_structure_type_graph_ext_t = u32;
pub const ZE_STRUCTURE_TYPE_DEVICE_GRAPH_PROPERTIES: u32 = 0x1;
pub const ZE_STRUCTURE_TYPE_GRAPH_DESC: u32 = 0x2;
pub const ZE_STRUCTURE_TYPE_GRAPH_PROPERTIES: u32 = 0x3;
pub const ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_PROPERTIES: u32 = 0x4;
pub const ZE_STRUCTURE_TYPE_GRAPH_ACTIVATION_KERNEL: u32 = 0x5;
pub const ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_METADATA: u32 = 0x6;
pub const ZE_STRUCTURE_TYPE_MUTABLE_GRAPH_ARGUMENT_EXP_DESC_DEPRECATED: u32 = 0x7;
pub const ZE_STRUCTURE_TYPE_GRAPH_INPUT_HASH: u32 = 0x8;
pub const ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_PROPERTY_STRIDES: u32 = 0x9;
pub const ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_TENSOR: u32 = 0xA;
pub const ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_STRIDES: u32 = 0xB;
pub const ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_PROPERTIES_2: u32 = 0xC;
pub const ZE_STRUCTURE_TYPE_GRAPH_ARGUMENT_PROPERTIES_3: u32 = 0xD;
pub const ZE_STRUCTURE_TYPE_GRAPH_DESC_2: u32 = 0xE;
pub const ZE_STRUCTURE_TYPE_DEVICE_GRAPH_PROPERTIES_2: u32 = 0xF;
pub const ZE_STRUCTURE_TYPE_GRAPH_PROPERTIES_2: u32 = 0x10;
pub const ZE_STRUCTURE_TYPE_GRAPH_PROPERTIES_3: u32 = 0x11;

/// `ze_graph_flags_t` (graph creation flags, `ze_graph_desc_2_t::flags`).
pub type ze_graph_flags_t = u32;
pub const ZE_GRAPH_FLAG_NONE: ze_graph_flags_t = 0;
pub const ZE_GRAPH_FLAG_DISABLE_CACHING: ze_graph_flags_t = 1 << 0;
pub const ZE_GRAPH_FLAG_ENABLE_PROFILING: ze_graph_flags_t = 1 << 1;
pub const ZE_GRAPH_FLAG_INPUT_GRAPH_PERSISTENT: ze_graph_flags_t = 1 << 2;
pub const ZE_GRAPH_FLAG_SECURE_COMPILE: ze_graph_flags_t = 1 << 3;
pub const ZE_GRAPH_FLAG_OPTIMIZE_FOR_DYNAMIC_SHAPES: ze_graph_flags_t = 1 << 4;

/// `ze_graph_properties_flags_t` (`ze_graph_properties_3_t::flags`).
pub type ze_graph_properties_flags_t = u32;
pub const ZE_GRAPH_PROPERTIES_FLAG_LOADED_FROM_CACHE: u32 = 1 << 0;
pub const ZE_GRAPH_PROPERTIES_FLAG_COMPILED: u32 = 1 << 1;
pub const ZE_GRAPH_PROPERTIES_FLAG_PRE_COMPILED: u32 = 1 << 2;
pub const ZE_GRAPH_PROPERTIES_FLAG_NO_STANDARD_ALLOCATION: u32 = 1 << 3;
pub const ZE_GRAPH_PROPERTIES_FLAG_PROFILING_ENABLED: u32 = 1 << 4;

/// `ze_graph_init_stage_t`.
pub type ze_graph_init_stage_t = u32;
pub const ZE_GRAPH_STAGE_COMMAND_LIST_INITIALIZE: u32 = 0x1;
pub const ZE_GRAPH_STAGE_INITIALIZE: u32 = 0x2;

/// `ze_graph_argument_type_t`.
pub type ze_graph_argument_type_t = u32;
pub const ZE_GRAPH_ARGUMENT_TYPE_INPUT: u32 = 0;
pub const ZE_GRAPH_ARGUMENT_TYPE_OUTPUT: u32 = 1;

/// `ze_graph_argument_precision_t`.
pub type ze_graph_argument_precision_t = u32;
pub const ZE_GRAPH_ARGUMENT_PRECISION_UNKNOWN: u32 = 0x00;
pub const ZE_GRAPH_ARGUMENT_PRECISION_FP32: u32 = 0x01;
pub const ZE_GRAPH_ARGUMENT_PRECISION_FP16: u32 = 0x02;
pub const ZE_GRAPH_ARGUMENT_PRECISION_UINT16: u32 = 0x03;
pub const ZE_GRAPH_ARGUMENT_PRECISION_UINT8: u32 = 0x04;
pub const ZE_GRAPH_ARGUMENT_PRECISION_INT32: u32 = 0x05;
pub const ZE_GRAPH_ARGUMENT_PRECISION_INT16: u32 = 0x06;
pub const ZE_GRAPH_ARGUMENT_PRECISION_INT8: u32 = 0x07;
pub const ZE_GRAPH_ARGUMENT_PRECISION_BIN: u32 = 0x08;
pub const ZE_GRAPH_ARGUMENT_PRECISION_BF16: u32 = 0x09;
pub const ZE_GRAPH_ARGUMENT_PRECISION_UINT32: u32 = 0x0A;
pub const ZE_GRAPH_ARGUMENT_PRECISION_UINT4: u32 = 0x0B;
pub const ZE_GRAPH_ARGUMENT_PRECISION_INT4: u32 = 0x0C;
pub const ZE_GRAPH_ARGUMENT_PRECISION_DYNAMIC: u32 = 0x0D;
pub const ZE_GRAPH_ARGUMENT_PRECISION_BOOLEAN: u32 = 0x0E;
pub const ZE_GRAPH_ARGUMENT_PRECISION_FP64: u32 = 0x0F;
pub const ZE_GRAPH_ARGUMENT_PRECISION_UINT64: u32 = 0x10;
pub const ZE_GRAPH_ARGUMENT_PRECISION_INT64: u32 = 0x11;
pub const ZE_GRAPH_ARGUMENT_PRECISION_NF4: u32 = 0x12;
pub const ZE_GRAPH_ARGUMENT_PRECISION_FP8_E4M3: u32 = 0x13;
pub const ZE_GRAPH_ARGUMENT_PRECISION_FP8_E5M2: u32 = 0x14;
pub const ZE_GRAPH_ARGUMENT_PRECISION_FP8_E8M0: u32 = 0x15;
pub const ZE_GRAPH_ARGUMENT_PRECISION_UINT2: u32 = 0x16;
pub const ZE_GRAPH_ARGUMENT_PRECISION_INT2: u32 = 0x17;

/// `ze_graph_argument_layout_t`.
pub type ze_graph_argument_layout_t = u32;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_ANY: u32 = 0x00;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_NCHW: u32 = 0x01;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_NHWC: u32 = 0x02;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_NCDHW: u32 = 0x03;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_NDHWC: u32 = 0x04;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_OIHW: u32 = 0x40;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_C: u32 = 0x60;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_CHW: u32 = 0x80;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_HW: u32 = 0xC0;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_NC: u32 = 0xC1;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_CN: u32 = 0xC2;
pub const ZE_GRAPH_ARGUMENT_LAYOUT_BLOCKED: u32 = 0xC8;

/// `ze_graph_metadata_type`.
pub type ze_graph_metadata_type = u32;
pub const ZE_GRAPH_METADATA_TYPE_UNDEFINED: u32 = 0;
pub const ZE_GRAPH_METADATA_TYPE_DYNAMIC: u32 = 1;
pub const ZE_GRAPH_METADATA_TYPE_BOOLEAN: u32 = 2;
pub const ZE_GRAPH_METADATA_TYPE_BF16: u32 = 3;
pub const ZE_GRAPH_METADATA_TYPE_F16: u32 = 4;
pub const ZE_GRAPH_METADATA_TYPE_F32: u32 = 5;
pub const ZE_GRAPH_METADATA_TYPE_F64: u32 = 6;
pub const ZE_GRAPH_METADATA_TYPE_I4: u32 = 7;
pub const ZE_GRAPH_METADATA_TYPE_I8: u32 = 8;
pub const ZE_GRAPH_METADATA_TYPE_I16: u32 = 9;
pub const ZE_GRAPH_METADATA_TYPE_I32: u32 = 10;
pub const ZE_GRAPH_METADATA_TYPE_I64: u32 = 11;
pub const ZE_GRAPH_METADATA_TYPE_U1: u32 = 12;
pub const ZE_GRAPH_METADATA_TYPE_U4: u32 = 13;
pub const ZE_GRAPH_METADATA_TYPE_U8: u32 = 14;
pub const ZE_GRAPH_METADATA_TYPE_U16: u32 = 15;
pub const ZE_GRAPH_METADATA_TYPE_U32: u32 = 16;
pub const ZE_GRAPH_METADATA_TYPE_U64: u32 = 17;

/// `ze_npu_options_type_t` (`pfnCompilerGetSupportedOptions`, `pfnCompilerIsOptionSupported`).
pub type ze_npu_options_type_t = u32;
pub const ZE_NPU_COMPILER_OPTIONS: u32 = 0x1;
pub const ZE_NPU_DRIVER_OPTIONS: u32 = 0x2;

/// `ze_graph_memory_query_type_t`.
pub type ze_graph_memory_query_type_t = u32;
pub const ZE_GRAPH_QUERY_MEMORY_DDR: u32 = 0x01;
pub const ZE_GRAPH_QUERY_MEMORY_DRIVER_CACHE: u32 = 0x02;
pub const ZE_GRAPH_QUERY_MEMORY_PROGRAM_CACHE: u32 = 0x03;

/// `ZE_MAX_GRAPH_ARGUMENT_NAME`.
pub const ZE_MAX_GRAPH_ARGUMENT_NAME: usize = 256;
/// `ZE_MAX_GRAPH_ARGUMENT_DIMENSIONS_SIZE`.
pub const ZE_MAX_GRAPH_ARGUMENT_DIMENSIONS_SIZE: usize = 5;
/// `ZE_MAX_GRAPH_TENSOR_REF_DIMS`.
pub const ZE_MAX_GRAPH_TENSOR_REF_DIMS: usize = 8;
/// `ZE_MAX_GRAPH_TENSOR_NAMES_SIZE`.
pub const ZE_MAX_GRAPH_TENSOR_NAMES_SIZE: usize = 32;

/// `ZE_MUTABLE_COMMAND_EXP_FLAG_GRAPH_ARGUMENT_DEPRECATED` (graph extension's own, older flag).
pub const ZE_MUTABLE_COMMAND_EXP_FLAG_GRAPH_ARGUMENT_DEPRECATED: u32 = 1 << 6;
/// `ZE_MUTABLE_COMMAND_EXP_FLAG_GRAPH_ARGUMENTS` (core 1.32 value).
pub const ZE_MUTABLE_COMMAND_EXP_FLAG_GRAPH_ARGUMENTS: u32 = 1 << 7;

// ---------------------------------------------------------------------------------------------------------
// Graph extension: structures
// ---------------------------------------------------------------------------------------------------------

/// `ze_graph_compiler_version_info_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ze_graph_compiler_version_info_t {
    pub major: u16,
    pub minor: u16,
}

/// `ze_graph_version_info_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ze_graph_version_info_t {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

/// `ze_device_graph_properties_t` (stype `0x1`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_device_graph_properties_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub graphExtensionVersion: ze_graph_ext_version_t,
    pub compilerVersion: ze_graph_compiler_version_info_t,
    pub graphFormatsSupported: ze_graph_format_t,
    pub maxOVOpsetVersionSupported: u32,
}

/// `ze_device_graph_properties_2_t` (stype `0xF`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_device_graph_properties_2_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub graphExtensionVersion: ze_graph_ext_version_t,
    pub compilerVersion: ze_graph_compiler_version_info_t,
    pub graphFormatsSupported: ze_graph_format_t,
    pub maxOVOpsetVersionSupported: u32,
    pub elfVersion: ze_graph_version_info_t,
    pub runtimeVersion: ze_graph_version_info_t,
}

/// `ze_graph_desc_t` (stype `0x2`), used by `pfnCreate` and `pfnQueryNetworkCreate`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_desc_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub format: ze_graph_format_t,
    pub inputSize: usize,
    pub pInput: *const u8,
    pub pBuildFlags: *const c_char,
}

/// `ze_graph_desc_2_t` (stype `0xE`), used by `pfnCreate2`, `pfnCreate3` and `pfnQueryNetworkCreate2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_desc_2_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub format: ze_graph_format_t,
    pub inputSize: usize,
    pub pInput: *const u8,
    pub pBuildFlags: *const c_char,
    pub flags: u32,
}

/// `ze_graph_properties_t` (stype `0x3`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_properties_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub numGraphArgs: u32,
}

/// `ze_graph_properties_2_t` (stype `0x10`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_properties_2_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub numGraphArgs: u32,
    pub initStageRequired: ze_graph_init_stage_t,
}

/// `ze_graph_properties_3_t` (stype `0x11`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_properties_3_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub numGraphArgs: u32,
    pub initStageRequired: ze_graph_init_stage_t,
    pub flags: ze_graph_properties_flags_t,
}

/// `ze_graph_argument_properties_t` (stype `0x4`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ze_graph_argument_properties_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub name: [c_char; ZE_MAX_GRAPH_ARGUMENT_NAME],
    pub type_: ze_graph_argument_type_t,
    pub dims: [u32; ZE_MAX_GRAPH_ARGUMENT_DIMENSIONS_SIZE],
    pub networkPrecision: ze_graph_argument_precision_t,
    pub networkLayout: ze_graph_argument_layout_t,
    pub devicePrecision: ze_graph_argument_precision_t,
    pub deviceLayout: ze_graph_argument_layout_t,
}

/// `ze_graph_argument_properties_2_t` (stype `0xC`): version 1 plus quantisation parameters.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ze_graph_argument_properties_2_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub name: [c_char; ZE_MAX_GRAPH_ARGUMENT_NAME],
    pub type_: ze_graph_argument_type_t,
    pub dims: [u32; ZE_MAX_GRAPH_ARGUMENT_DIMENSIONS_SIZE],
    pub networkPrecision: ze_graph_argument_precision_t,
    pub networkLayout: ze_graph_argument_layout_t,
    pub devicePrecision: ze_graph_argument_precision_t,
    pub deviceLayout: ze_graph_argument_layout_t,
    pub quantReverseScale: f32,
    pub quantZeroPoint: u8,
}

/// `ze_graph_argument_properties_3_t` (stype `0xD`): version 2 plus rank, debug name and tensor names.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ze_graph_argument_properties_3_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub name: [c_char; ZE_MAX_GRAPH_ARGUMENT_NAME],
    pub type_: ze_graph_argument_type_t,
    pub dims: [u32; ZE_MAX_GRAPH_ARGUMENT_DIMENSIONS_SIZE],
    pub networkPrecision: ze_graph_argument_precision_t,
    pub networkLayout: ze_graph_argument_layout_t,
    pub devicePrecision: ze_graph_argument_precision_t,
    pub deviceLayout: ze_graph_argument_layout_t,
    pub quantReverseScale: f32,
    pub quantZeroPoint: u8,
    pub dims_count: u32,
    pub debug_friendly_name: [c_char; ZE_MAX_GRAPH_ARGUMENT_NAME],
    pub associated_tensor_names: [[c_char; ZE_MAX_GRAPH_ARGUMENT_NAME]; ZE_MAX_GRAPH_TENSOR_NAMES_SIZE],
    pub associated_tensor_names_count: u32,
}

/// `ze_graph_argument_metadata_t` (stype `0x6`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ze_graph_argument_metadata_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub type_: ze_graph_argument_type_t,
    pub friendly_name: [c_char; ZE_MAX_GRAPH_ARGUMENT_NAME],
    pub data_type: ze_graph_metadata_type,
    pub shape: [u64; ZE_MAX_GRAPH_TENSOR_REF_DIMS],
    pub shape_size: u32,
    pub tensor_names: [[c_char; ZE_MAX_GRAPH_ARGUMENT_NAME]; ZE_MAX_GRAPH_TENSOR_NAMES_SIZE],
    pub tensor_names_count: u32,
    pub input_name: [c_char; ZE_MAX_GRAPH_ARGUMENT_NAME],
}

/// `ze_graph_memory_query_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ze_graph_memory_query_t {
    pub total: u64,
    pub allocated: u64,
}

/// `ze_graph_input_hash_t` (stype `0x8`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_input_hash_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub hash: u64,
}

/// `ze_graph_argument_property_strides_t` (stype `0x9`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_argument_property_strides_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub supportsDynamicStrides: bool,
}

/// `ze_graph_argument_value_tensor_t` (stype `0xA`), a `pArgValue` form of `pfnSetArgumentValue2`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_argument_value_tensor_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub pTensor: *const c_void,
}

/// `ze_graph_argument_value_strides_t` (stype `0xB`), chained to a `ze_graph_argument_value_tensor_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_argument_value_strides_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub userStrides: [u32; ZE_MAX_GRAPH_ARGUMENT_DIMENSIONS_SIZE],
}

/// `ze_activation_kernel_desc_t` (stype `0x5`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_activation_kernel_desc_t {
    pub stype: ze_structure_type_graph_ext_t,
    pub pNext: *mut c_void,
    pub kernelDataSize: usize,
    pub pKernelData: *const u8,
}

// ---------------------------------------------------------------------------------------------------------
// Graph extension: function pointer types and the table
// ---------------------------------------------------------------------------------------------------------

pub type ze_pfnGraphCreate_ext_t = Option<
    unsafe extern "C" fn(
        ze_context_handle_t,
        ze_device_handle_t,
        *const ze_graph_desc_t,
        *mut ze_graph_handle_t,
    ) -> ze_result_t,
>;
pub type ze_pfnGraphDestroy_ext_t = Option<unsafe extern "C" fn(ze_graph_handle_t) -> ze_result_t>;
pub type ze_pfnGraphGetProperties_ext_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, *mut ze_graph_properties_t) -> ze_result_t>;
pub type ze_pfnGraphGetArgumentProperties_ext_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, u32, *mut ze_graph_argument_properties_t) -> ze_result_t>;
pub type ze_pfnGraphSetArgumentValue_ext_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, u32, *const c_void) -> ze_result_t>;
pub type ze_pfnAppendGraphInitialize_ext_t = Option<
    unsafe extern "C" fn(
        ze_command_list_handle_t,
        ze_graph_handle_t,
        ze_event_handle_t,
        u32,
        *mut ze_event_handle_t,
    ) -> ze_result_t,
>;
pub type ze_pfnAppendGraphExecute_ext_t = Option<
    unsafe extern "C" fn(
        ze_command_list_handle_t,
        ze_graph_handle_t,
        ze_graph_profiling_query_handle_t,
        ze_event_handle_t,
        u32,
        *mut ze_event_handle_t,
    ) -> ze_result_t,
>;
pub type ze_pfnGraphGetNativeBinary_ext_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, *mut usize, *mut u8) -> ze_result_t>;
pub type ze_pfnDeviceGetGraphProperties_ext_t =
    Option<unsafe extern "C" fn(ze_device_handle_t, *mut ze_device_graph_properties_t) -> ze_result_t>;
pub type ze_pfnGraphGetArgumentMetadata_ext_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, u32, *mut ze_graph_argument_metadata_t) -> ze_result_t>;
pub type ze_pfnGraphGetArgumentProperties_ext_2_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, u32, *mut ze_graph_argument_properties_2_t) -> ze_result_t>;
pub type ze_pfnGraphGetArgumentProperties_ext_3_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, u32, *mut ze_graph_argument_properties_3_t) -> ze_result_t>;
pub type ze_pfnGraphQueryNetworkCreate_ext_t = Option<
    unsafe extern "C" fn(
        ze_context_handle_t,
        ze_device_handle_t,
        *const ze_graph_desc_t,
        *mut ze_graph_query_network_handle_t,
    ) -> ze_result_t,
>;
pub type ze_pfnGraphQueryNetworkDestroy_ext_t =
    Option<unsafe extern "C" fn(ze_graph_query_network_handle_t) -> ze_result_t>;
pub type ze_pfnGraphQueryNetworkGetSupportedLayers_ext_t =
    Option<unsafe extern "C" fn(ze_graph_query_network_handle_t, *mut usize, *mut c_char) -> ze_result_t>;
pub type ze_pfnGraphBuildLogGetString_ext_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, *mut u32, *mut c_char) -> ze_result_t>;
pub type ze_pfnGraphCreate_ext_2_t = Option<
    unsafe extern "C" fn(
        ze_context_handle_t,
        ze_device_handle_t,
        *const ze_graph_desc_2_t,
        *mut ze_graph_handle_t,
    ) -> ze_result_t,
>;
pub type ze_pfnGraphQueryNetworkCreate_ext_2_t = Option<
    unsafe extern "C" fn(
        ze_context_handle_t,
        ze_device_handle_t,
        *const ze_graph_desc_2_t,
        *mut ze_graph_query_network_handle_t,
    ) -> ze_result_t,
>;
pub type ze_pfnGraphQueryContextMemory_ext_t = Option<
    unsafe extern "C" fn(
        ze_context_handle_t,
        ze_graph_memory_query_type_t,
        *mut ze_graph_memory_query_t,
    ) -> ze_result_t,
>;
pub type ze_pfnDeviceGetGraphProperties_ext_2_t =
    Option<unsafe extern "C" fn(ze_device_handle_t, *mut ze_device_graph_properties_2_t) -> ze_result_t>;
pub type ze_pfnGraphGetNativeBinary_ext_2_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, *mut usize, *mut *const u8) -> ze_result_t>;
pub type ze_pfnGraphGetProperties_ext_2_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, *mut ze_graph_properties_2_t) -> ze_result_t>;
pub type ze_pfnGraphInitialize_ext_t = Option<unsafe extern "C" fn(ze_graph_handle_t) -> ze_result_t>;
pub type ze_pfnGetSupportedOptions_ext_t =
    Option<unsafe extern "C" fn(ze_device_handle_t, ze_npu_options_type_t, *mut usize, *mut c_char) -> ze_result_t>;
pub type ze_pfnIsOptionSupported_ext_t = Option<
    unsafe extern "C" fn(ze_device_handle_t, ze_npu_options_type_t, *const c_char, *const c_char) -> ze_result_t,
>;
pub type ze_pfnGraphCreate_ext_3_t = Option<
    unsafe extern "C" fn(
        ze_context_handle_t,
        ze_device_handle_t,
        *const ze_graph_desc_2_t,
        *mut ze_graph_handle_t,
        *mut ze_graph_build_log_handle_t,
    ) -> ze_result_t,
>;
pub type ze_pfnGraphGetProperties_ext_3_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, *mut ze_graph_properties_3_t) -> ze_result_t>;
pub type ze_pfnGraphBuildLogGetString_ext_2_t =
    Option<unsafe extern "C" fn(ze_graph_build_log_handle_t, *mut u32, *mut c_char) -> ze_result_t>;
pub type ze_pfnGraphBuildLogDestroy_ext_t = Option<unsafe extern "C" fn(ze_graph_build_log_handle_t) -> ze_result_t>;
pub type ze_pfnGraphEvict_ext_t = Option<unsafe extern "C" fn(ze_graph_handle_t) -> ze_result_t>;

/// `ze_graph_dditable_ext_t` as of graph extension 1.16 (1.17 and 1.18 add no slots).
///
/// A caller reads only the slots of the version it was given; the slot order per version is documented
/// on the fields. Every slot up to the advertised version must be filled.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_dditable_ext_t {
    // 1.0
    pub pfnCreate: ze_pfnGraphCreate_ext_t,
    pub pfnDestroy: ze_pfnGraphDestroy_ext_t,
    pub pfnGetProperties: ze_pfnGraphGetProperties_ext_t,
    pub pfnGetArgumentProperties: ze_pfnGraphGetArgumentProperties_ext_t,
    pub pfnSetArgumentValue: ze_pfnGraphSetArgumentValue_ext_t,
    pub pfnAppendGraphInitialize: ze_pfnAppendGraphInitialize_ext_t,
    pub pfnAppendGraphExecute: ze_pfnAppendGraphExecute_ext_t,
    pub pfnGetNativeBinary: ze_pfnGraphGetNativeBinary_ext_t,
    pub pfnDeviceGetGraphProperties: ze_pfnDeviceGetGraphProperties_ext_t,
    // 1.1
    pub pfnGraphGetArgumentMetadata: ze_pfnGraphGetArgumentMetadata_ext_t,
    pub pfnGetArgumentProperties2: ze_pfnGraphGetArgumentProperties_ext_2_t,
    // 1.2
    pub pfnGetArgumentProperties3: ze_pfnGraphGetArgumentProperties_ext_3_t,
    // 1.3
    pub pfnQueryNetworkCreate: ze_pfnGraphQueryNetworkCreate_ext_t,
    pub pfnQueryNetworkDestroy: ze_pfnGraphQueryNetworkDestroy_ext_t,
    pub pfnQueryNetworkGetSupportedLayers: ze_pfnGraphQueryNetworkGetSupportedLayers_ext_t,
    // 1.4
    pub pfnBuildLogGetString: ze_pfnGraphBuildLogGetString_ext_t,
    // 1.5
    pub pfnCreate2: ze_pfnGraphCreate_ext_2_t,
    pub pfnQueryNetworkCreate2: ze_pfnGraphQueryNetworkCreate_ext_2_t,
    pub pfnQueryContextMemory: ze_pfnGraphQueryContextMemory_ext_t,
    // 1.6
    pub pfnDeviceGetGraphProperties2: ze_pfnDeviceGetGraphProperties_ext_2_t,
    // 1.7
    pub pfnGetNativeBinary2: ze_pfnGraphGetNativeBinary_ext_2_t,
    // 1.8
    pub pfnGetProperties2: ze_pfnGraphGetProperties_ext_2_t,
    pub pfnGraphInitialize: ze_pfnGraphInitialize_ext_t,
    // 1.11
    pub pfnCompilerGetSupportedOptions: ze_pfnGetSupportedOptions_ext_t,
    pub pfnCompilerIsOptionSupported: ze_pfnIsOptionSupported_ext_t,
    // 1.12
    pub pfnCreate3: ze_pfnGraphCreate_ext_3_t,
    pub pfnGetProperties3: ze_pfnGraphGetProperties_ext_3_t,
    pub pfnBuildLogGetString2: ze_pfnGraphBuildLogGetString_ext_2_t,
    pub pfnBuildLogDestroy: ze_pfnGraphBuildLogDestroy_ext_t,
    // 1.15
    pub pfnSetArgumentValue2: ze_pfnGraphSetArgumentValue_ext_t,
    // 1.16
    pub pfnEvict: ze_pfnGraphEvict_ext_t,
}

/// Number of `ze_graph_dditable_ext_t` slots a caller of graph extension `version` reads.
pub const fn graph_table_slots(version: u32) -> usize {
    let minor = version & 0xffff;
    match minor {
        0 => 9,
        1 => 11,
        2 => 12,
        3 => 15,
        4 => 16,
        5 => 19,
        6 => 20,
        7 => 21,
        8..=10 => 23,
        11 => 25,
        12..=14 => 29,
        15 => 30,
        _ => 31,
    }
}

// ---------------------------------------------------------------------------------------------------------
// Driver NPU extension (`ze_driver_npu_ext.h`)
// ---------------------------------------------------------------------------------------------------------

/// `ZE_STRUCTURE_TYPE_DRIVER_EXTENSION_NPU_EXT`.
pub const ZE_STRUCTURE_TYPE_DRIVER_EXTENSION_NPU_EXT: u32 = 0x1;
/// `ZE_DRIVER_NPU_EXT_VERSION_1_0`.
pub const ZE_DRIVER_NPU_EXT_VERSION_1_0: u32 = ze_make_version(1, 0);

/// `ze_driver_extension_npu_ext_t`: the request passed to `pfnGetExtension`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_driver_extension_npu_ext_t {
    pub stype: u32,
    pub pNext: *const c_void,
    /// The extension name, e.g. `"ZE_extension_graph"`.
    pub name: *const c_char,
    /// The version the caller wants (`ZE_MAKE_VERSION`).
    pub version: u32,
    /// Receives the address of the extension's function table.
    pub ppFunctionAddress: *mut *mut c_void,
}

pub type ze_pfnDriverGetExtension_ext_t =
    Option<unsafe extern "C" fn(ze_driver_handle_t, *mut ze_driver_extension_npu_ext_t) -> ze_result_t>;

/// `ze_driver_npu_dditable_ext_t`, returned for `ZE_extension_driver_npu`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_driver_npu_dditable_ext_t {
    pub pfnGetExtension: ze_pfnDriverGetExtension_ext_t,
}

// ---------------------------------------------------------------------------------------------------------
// Command queue NPU extension (`ze_command_queue_npu_ext.h`)
// ---------------------------------------------------------------------------------------------------------

/// `ZE_COMMAND_QUEUE_NPU_EXT_VERSION_1_1`.
pub const ZE_COMMAND_QUEUE_NPU_EXT_VERSION_1_1: u32 = ze_make_version(1, 1);
/// `ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC_NPU_EXT` (in a `zeCommandQueueCreate` chain).
pub const ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC_NPU_EXT: u32 = 0x1;
/// `ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC_NPU_EXT_2` (in a `zeCommandQueueCreate` chain).
pub const ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC_NPU_EXT_2: u32 = 0x2;

/// `ze_command_queue_desc_npu_ext_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_command_queue_desc_npu_ext_t {
    pub stype: u32,
    pub pNext: *const c_void,
    pub turbo: bool,
}

/// `ze_npu_command_queue_options_t`.
pub type ze_npu_command_queue_options_t = u32;
pub const ZE_NPU_COMMAND_QUEUE_OPTION_TURBO: u32 = 1 << 0;
pub const ZE_NPU_COMMAND_QUEUE_OPTION_DEVICE_SYNC: u32 = 1 << 1;

/// `ze_command_queue_desc_npu_ext_2_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_command_queue_desc_npu_ext_2_t {
    pub stype: u32,
    pub pNext: *const c_void,
    pub options: ze_npu_command_queue_options_t,
}

/// `ze_command_queue_workload_type_t`.
pub type ze_command_queue_workload_type_t = u32;
pub const ZE_WORKLOAD_TYPE_DEFAULT: u32 = 0x0;
pub const ZE_WORKLOAD_TYPE_BACKGROUND: u32 = 0x1;

pub type ze_pfnCommandQueueSetWorkloadType_ext_t =
    Option<unsafe extern "C" fn(ze_command_queue_handle_t, ze_command_queue_workload_type_t) -> ze_result_t>;

/// `ze_command_queue_npu_dditable_ext_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_command_queue_npu_dditable_ext_t {
    pub pfnSetWorkloadType: ze_pfnCommandQueueSetWorkloadType_ext_t,
}

// ---------------------------------------------------------------------------------------------------------
// Context NPU extension (`ze_context_npu_ext.h`)
// ---------------------------------------------------------------------------------------------------------

/// `ZE_CONTEXT_NPU_EXT_VERSION_1_0`.
pub const ZE_CONTEXT_NPU_EXT_VERSION_1_0: u32 = ze_make_version(1, 0);
/// `ZE_EXTERNAL_MEMORY_TYPE_FLAG_STANDARD_ALLOCATION` (defined by `ze_context_npu_ext.h`).
pub use crate::ZE_EXTERNAL_MEMORY_TYPE_FLAG_STANDARD_ALLOCATION;
/// `ZE_STRUCTURE_TYPE_CONTEXT_PROPERTIES_NPU_EXT`.
pub const ZE_STRUCTURE_TYPE_CONTEXT_PROPERTIES_NPU_EXT: u32 = 0x1;
/// `ZE_NPU_CONTEXT_OPTION_IDLE_OPTIMIZATIONS`.
pub const ZE_NPU_CONTEXT_OPTION_IDLE_OPTIMIZATIONS: u32 = 1 << 0;

/// `ze_context_properties_npu_ext_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_context_properties_npu_ext_t {
    pub stype: u32,
    pub pNext: *const c_void,
    pub options: u32,
}

pub type ze_pfnContextSetProperties_ext_t =
    Option<unsafe extern "C" fn(ze_context_handle_t, *mut ze_context_properties_npu_ext_t) -> ze_result_t>;
pub type ze_pfnContextReleaseMemory_ext_t = Option<unsafe extern "C" fn(ze_context_handle_t) -> ze_result_t>;

/// `ze_context_npu_dditable_ext_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_context_npu_dditable_ext_t {
    pub pfnSetProperties: ze_pfnContextSetProperties_ext_t,
    pub pfnReleaseMemory: ze_pfnContextReleaseMemory_ext_t,
}

// ---------------------------------------------------------------------------------------------------------
// Profiling data extension (`ze_graph_profiling_ext.h`)
// ---------------------------------------------------------------------------------------------------------

/// `ZE_PROFILING_DATA_EXT_VERSION_1_0`.
pub const ZE_PROFILING_DATA_EXT_VERSION_1_0: u32 = ze_make_version(1, 0);
/// `ZE_STRUCTURE_TYPE_DEVICE_PROFILING_DATA_PROPERTIES`.
pub const ZE_STRUCTURE_TYPE_DEVICE_PROFILING_DATA_PROPERTIES: u32 = 0x1;

/// `ze_graph_profiling_type_t`.
pub type ze_graph_profiling_type_t = u32;
pub const ZE_GRAPH_PROFILING_LAYER_LEVEL: u32 = 0x1;
pub const ZE_GRAPH_PROFILING_TASK_LEVEL: u32 = 0x2;
pub const ZE_GRAPH_PROFILING_RAW: u32 = 0x4;

/// `ZE_MAX_GRAPH_PROFILING_LAYER_NAME`.
pub const ZE_MAX_GRAPH_PROFILING_LAYER_NAME: usize = 256;
/// `ZE_MAX_GRAPH_PROFILING_LAYER_TYPE`.
pub const ZE_MAX_GRAPH_PROFILING_LAYER_TYPE: usize = 50;

/// `ze_layer_status_t`.
pub type ze_layer_status_t = u32;
pub const ZE_LAYER_STATUS_NOT_RUN: u32 = 1;
pub const ZE_LAYER_STATUS_OPTIMIZED_OUT: u32 = 2;
pub const ZE_LAYER_STATUS_EXECUTED: u32 = 3;

/// `ze_task_execute_type_t`.
pub type ze_task_execute_type_t = u32;
pub const ZE_TASK_EXECUTE_NONE: u32 = 0;
pub const ZE_TASK_EXECUTE_DPU: u32 = 1;
pub const ZE_TASK_EXECUTE_SW: u32 = 2;
pub const ZE_TASK_EXECUTE_DMA: u32 = 3;

/// `ze_profiling_layer_info` (one per layer of `ZE_GRAPH_PROFILING_LAYER_LEVEL` data).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_profiling_layer_info {
    pub name: [c_char; ZE_MAX_GRAPH_PROFILING_LAYER_NAME],
    pub layer_type: [c_char; ZE_MAX_GRAPH_PROFILING_LAYER_TYPE],
    pub status: ze_layer_status_t,
    pub start_time_ns: u64,
    pub duration_ns: u64,
    pub layer_id: u32,
    pub fused_layer_id: u64,
    pub dpu_ns: u64,
    pub sw_ns: u64,
    pub dma_ns: u64,
}

/// `ze_profiling_task_info` (one per task of `ZE_GRAPH_PROFILING_TASK_LEVEL` data).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_profiling_task_info {
    pub name: [c_char; ZE_MAX_GRAPH_PROFILING_LAYER_NAME],
    pub layer_type: [c_char; ZE_MAX_GRAPH_PROFILING_LAYER_TYPE],
    pub exec_type: ze_task_execute_type_t,
    pub start_time_ns: u64,
    pub duration_ns: u64,
    pub active_cycles: u32,
    pub stall_cycles: u32,
    pub task_id: u32,
    pub parent_layer_id: u32,
}

/// `ze_device_profiling_data_properties_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_device_profiling_data_properties_t {
    pub stype: u32,
    pub pNext: *mut c_void,
    pub extensionVersion: u32,
}

pub type ze_pfnGraphProfilingPoolCreate_ext_t =
    Option<unsafe extern "C" fn(ze_graph_handle_t, u32, *mut ze_graph_profiling_pool_handle_t) -> ze_result_t>;
pub type ze_pfnGraphProfilingPoolDestroy_ext_t =
    Option<unsafe extern "C" fn(ze_graph_profiling_pool_handle_t) -> ze_result_t>;
pub type ze_pfnGraphProfilingQueryCreate_ext_t = Option<
    unsafe extern "C" fn(ze_graph_profiling_pool_handle_t, u32, *mut ze_graph_profiling_query_handle_t) -> ze_result_t,
>;
pub type ze_pfnGraphProfilingQueryDestroy_ext_t =
    Option<unsafe extern "C" fn(ze_graph_profiling_query_handle_t) -> ze_result_t>;
pub type ze_pfnGraphProfilingQueryGetData_ext_t = Option<
    unsafe extern "C" fn(
        ze_graph_profiling_query_handle_t,
        ze_graph_profiling_type_t,
        *mut u32,
        *mut u8,
    ) -> ze_result_t,
>;
pub type ze_pfnDeviceGetProfilingDataProperties_ext_t =
    Option<unsafe extern "C" fn(ze_device_handle_t, *mut ze_device_profiling_data_properties_t) -> ze_result_t>;
pub type ze_pfnGraphProfilingLogGetString_ext_t =
    Option<unsafe extern "C" fn(ze_graph_profiling_query_handle_t, *mut u32, *mut c_char) -> ze_result_t>;

/// `ze_graph_profiling_dditable_ext_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_graph_profiling_dditable_ext_t {
    pub pfnProfilingPoolCreate: ze_pfnGraphProfilingPoolCreate_ext_t,
    pub pfnProfilingPoolDestroy: ze_pfnGraphProfilingPoolDestroy_ext_t,
    pub pfnProfilingQueryCreate: ze_pfnGraphProfilingQueryCreate_ext_t,
    pub pfnProfilingQueryDestroy: ze_pfnGraphProfilingQueryDestroy_ext_t,
    pub pfnProfilingQueryGetData: ze_pfnGraphProfilingQueryGetData_ext_t,
    pub pfnDeviceGetProfilingDataProperties: ze_pfnDeviceGetProfilingDataProperties_ext_t,
    pub pfnProfilingLogGetString: ze_pfnGraphProfilingLogGetString_ext_t,
}

// ---------------------------------------------------------------------------------------------------------
// External memmap sysmem (Level Zero 1.32 `ze_external_memmap_sysmem_ext_desc_t`)
// ---------------------------------------------------------------------------------------------------------

/// Structure type of [`ze_external_memmap_sysmem_ext_desc_t`] (`0x00020037`). Older NPU headers used
/// other names and, before 2025-07, the value `0x24`; match on this value.
pub use crate::ZE_STRUCTURE_TYPE_EXTERNAL_MEMMAP_SYSMEM_EXT_DESC;

/// `ze_external_memmap_sysmem_ext_desc_t`: chained to `ze_host_mem_alloc_desc_t` in `zeMemAllocHost`,
/// maps caller-owned, page-aligned system memory; the returned pointer is `pSystemMemory` itself.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct ze_external_memmap_sysmem_ext_desc_t {
    pub stype: u32,
    pub pNext: *const c_void,
    pub pSystemMemory: *const c_void,
    pub size: u64,
}

// ---------------------------------------------------------------------------------------------------------
// Mutable graph argument
// ---------------------------------------------------------------------------------------------------------
// `ze_mutable_graph_argument_exp_desc_t` (stype `ZE_STRUCTURE_TYPE_MUTABLE_GRAPH_ARGUMENT_EXP_DESC`,
// 0x00020020) is part of the core bindings; the graph extension's deprecated variant uses the same layout
// with stype `ZE_STRUCTURE_TYPE_MUTABLE_GRAPH_ARGUMENT_EXP_DESC_DEPRECATED` (0x7).
pub use crate::ze_mutable_graph_argument_exp_desc_t;

#[cfg(test)]
mod layout_tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn graph_desc_2_layout() {
        assert_eq!(offset_of!(ze_graph_desc_2_t, format), 16);
        assert_eq!(offset_of!(ze_graph_desc_2_t, inputSize), 24);
        assert_eq!(offset_of!(ze_graph_desc_2_t, pInput), 32);
        assert_eq!(offset_of!(ze_graph_desc_2_t, pBuildFlags), 40);
        assert_eq!(offset_of!(ze_graph_desc_2_t, flags), 48);
        assert_eq!(size_of::<ze_graph_desc_2_t>(), 56);
    }

    #[test]
    fn argument_properties_3_layout() {
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, name), 16);
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, type_), 272);
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, dims), 276);
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, networkPrecision), 296);
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, quantReverseScale), 312);
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, quantZeroPoint), 316);
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, dims_count), 320);
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, debug_friendly_name), 324);
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, associated_tensor_names), 580);
        assert_eq!(offset_of!(ze_graph_argument_properties_3_t, associated_tensor_names_count), 580 + 8192);
    }

    #[test]
    fn argument_metadata_layout() {
        assert_eq!(offset_of!(ze_graph_argument_metadata_t, type_), 16);
        assert_eq!(offset_of!(ze_graph_argument_metadata_t, friendly_name), 20);
        assert_eq!(offset_of!(ze_graph_argument_metadata_t, data_type), 276);
        assert_eq!(offset_of!(ze_graph_argument_metadata_t, shape), 280);
        assert_eq!(offset_of!(ze_graph_argument_metadata_t, shape_size), 344);
        assert_eq!(offset_of!(ze_graph_argument_metadata_t, tensor_names), 348);
        assert_eq!(offset_of!(ze_graph_argument_metadata_t, tensor_names_count), 348 + 8192);
        assert_eq!(offset_of!(ze_graph_argument_metadata_t, input_name), 348 + 8192 + 4);
    }

    #[test]
    fn table_sizes() {
        assert_eq!(size_of::<ze_graph_dditable_ext_t>(), 31 * size_of::<usize>());
        assert_eq!(graph_table_slots(ZE_GRAPH_EXT_VERSION_1_16), 31);
        assert_eq!(graph_table_slots(ZE_GRAPH_EXT_VERSION_1_5), 19);
        assert_eq!(size_of::<ze_mutable_graph_argument_exp_desc_t>(), 40);
        // 306 bytes of names, then C alignment: status at 308, start at 312, fused_layer_id at 336.
        assert_eq!(offset_of!(ze_profiling_layer_info, status), 308);
        assert_eq!(offset_of!(ze_profiling_layer_info, fused_layer_id), 336);
        assert_eq!(size_of::<ze_profiling_layer_info>(), 368);
        assert_eq!(offset_of!(ze_profiling_task_info, start_time_ns), 312);
        assert_eq!(size_of::<ze_profiling_task_info>(), 344);
        assert_eq!(size_of::<ze_external_memmap_sysmem_ext_desc_t>(), 32);
        assert_eq!(offset_of!(ze_device_graph_properties_t, compilerVersion), 20);
        assert_eq!(size_of::<ze_driver_extension_npu_ext_t>(), 40);
    }
}
