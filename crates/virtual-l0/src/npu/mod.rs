//! The virtual NPU driver's extensions: what the OpenVINO NPU plugin reaches through
//! `zeDriverGetExtensionFunctionAddress` on the NPU driver (`virtual-l0-npu.md`).
//!
//! - [`extension_properties`]: the `zeDriverGetExtensionProperties` list of the NPU driver.
//! - [`extension_function_address`]: the table behind an extension name.
//! - `ZE_extension_driver_npu` → [`DRIVER_NPU_TABLE`], whose `pfnGetExtension` hands out the other
//!   tables by name: only with `VL0_NPU_DRIVER_EXT=1` (drivers after 1.32.1). The released 1.32.1
//!   has no such extension, so by default the plugin asks for each table by name.
//! - `ZE_extension_graph` → [`graph::GRAPH_TABLE`] (graph extension 1.16): graphs are compiled and run by
//!   the process's own OpenVINO CPU plugin ([`engine`]); the formats are in [`format`].
//! - `ZE_extension_command_queue_npu` 1.1 (1.0 without the kernel's queue management),
//!   `ZE_extension_context_npu` 1.0: accepted, nothing to tune.
//! - `ZE_extension_profiling_data` 1.0: the table exists; profiling itself is not implemented.
//!
//! `ZE_experimental_mutable_command_list` and `ZE_extension_external_memmap_sysmem` are advertised here
//! but implemented by the platform (`zeCommandListGetNextCommandIdExp`,
//! `zeCommandListUpdateMutableCommandsExp`, `zeMemAllocHost` with the sysmem descriptor).

pub mod cache;
pub mod engine;
pub mod format;
pub mod graph;
pub mod idle;
pub mod ir;
pub mod private;
pub mod profiling;

use std::ffi::{c_void, CStr};

use crate::export::{guard, input, out, ZeResult};
use crate::objects::{context_from, driver_from, queue_from, same_driver, DriverKind};
use crate::sys::npu::*;
use crate::sys::*;

const V1_0: u32 = ze_make_version(1, 0);
const V1_1: u32 = ze_make_version(1, 1);

/// The legacy per-version graph names linux-npu-driver 1.32.1 still lists after the others
/// (`driver_handle.cpp` `getSupportedExtensions`), each with its own version.
const LEGACY_GRAPH_NAMES: [(&str, u32); 7] = [
    ("ZE_extension_graph_1_2", ze_make_version(1, 2)),
    ("ZE_extension_graph_1_3", ze_make_version(1, 3)),
    ("ZE_extension_graph_1_4", ze_make_version(1, 4)),
    ("ZE_extension_graph_1_5", ze_make_version(1, 5)),
    ("ZE_extension_graph_1_6", ze_make_version(1, 6)),
    ("ZE_extension_graph_1_7", ze_make_version(1, 7)),
    ("ZE_extension_graph_1_8", ze_make_version(1, 8)),
];

/// `VL0_NPU_DRIVER_EXT=1`: also advertise `ZE_extension_driver_npu` 1.0, as NPU drivers after 1.32.1
/// do (linux-npu-driver `api/ext/ze_driver_npu.cpp`, unreleased at 1.32.1). Read once.
fn driver_npu_ext() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| std::env::var("VL0_NPU_DRIVER_EXT").is_ok_and(|v| v == "1"))
}

/// Extensions the NPU driver advertises, in the order linux-npu-driver 1.32.1 lists them
/// (`driver_handle.cpp` `getSupportedExtensions`): (name, `ZE_MAKE_VERSION(major, minor)`).
///
/// Per profile: `ZE_extension_external_memmap_sysmem` only where the NPU imports user memory
/// (NPU 40xx+ with the kernel's userptr ioctl); `ZE_extension_command_queue_npu` 1.1 with the
/// kernel's command-queue management, else 1.0.
///
/// `VL0_NPU_MUTABLE_COMMAND_LISTS=0` leaves out `ZE_experimental_mutable_command_list`, like an NPU
/// driver (or loader older than 1.16.1) without it: the plugin then keeps its own buffers and copies
/// every user tensor in and out on the CPU. Read once, at the first call.
pub fn extension_properties() -> &'static [(&'static str, u32)] {
    static LIST: std::sync::OnceLock<Vec<(&'static str, u32)>> = std::sync::OnceLock::new();
    LIST.get_or_init(|| {
        let prof = crate::profile::current();
        let without_mcl = std::env::var("VL0_NPU_MUTABLE_COMMAND_LISTS").is_ok_and(|v| v == "0");
        let mut list = vec![(ZE_GRAPH_EXT_NAME, graph::GRAPH_EXT_VERSION), (ZE_PROFILING_DATA_EXT_NAME, V1_0)];
        if !without_mcl {
            list.push((ZE_MUTABLE_COMMAND_LIST_EXP_EXT_NAME, V1_1));
        }
        list.push((ZE_COMMAND_QUEUE_NPU_EXT_NAME, ze_make_version(1, prof.npu_command_queue_ext_minor)));
        list.push((ZE_CONTEXT_NPU_EXT_NAME, V1_0));
        if prof.npu_userptr {
            list.push((ZE_EXTERNAL_MEMMAP_SYSMEM_EXT_NAME, V1_0));
        }
        list.extend(LEGACY_GRAPH_NAMES);
        if driver_npu_ext() {
            list.push((ZE_DRIVER_NPU_EXT_NAME, V1_0));
        }
        list
    })
}

fn table_ptr<T>(t: &'static T) -> *mut c_void {
    t as *const T as *mut c_void
}

/// The table behind an extension name, for the NPU driver (`None`: not a table of ours; the platform
/// answers `ZE_RESULT_ERROR_INVALID_ARGUMENT`).
///
/// As linux-npu-driver's `zeDriverGetExtensionFunctionAddress` (`api/ze_driver.cpp`): any name that
/// contains `ZE_extension_graph` (the legacy `_1_x` names too) gets the one graph table.
pub fn extension_function_address(name: &CStr) -> Option<*mut c_void> {
    let bytes = name.to_bytes();
    if bytes.windows(ZE_GRAPH_EXT_NAME.len()).any(|w| w == ZE_GRAPH_EXT_NAME.as_bytes()) {
        return Some(table_ptr(&graph::GRAPH_TABLE));
    }
    match bytes {
        b"ZE_extension_driver_npu" if driver_npu_ext() => Some(table_ptr(&DRIVER_NPU_TABLE)),
        b"ZE_extension_command_queue_npu" => Some(table_ptr(&COMMAND_QUEUE_NPU_TABLE)),
        b"ZE_extension_context_npu" => Some(table_ptr(&CONTEXT_NPU_TABLE)),
        b"ZE_extension_profiling_data" => Some(table_ptr(&profiling::PROFILING_TABLE)),
        _ => private::function_address(name),
    }
}

/// Highest version of each table-bearing extension (the requested version may be lower: the tables are
/// prefix-compatible, a caller of version v reads only the slots of v).
fn table_version(name: &[u8]) -> Option<u32> {
    extension_properties().iter().find(|(n, _)| n.as_bytes() == name).map(|&(_, v)| v).filter(|_| {
        name != ZE_MUTABLE_COMMAND_LIST_EXP_EXT_NAME.as_bytes() && name != ZE_EXTERNAL_MEMMAP_SYSMEM_EXT_NAME.as_bytes()
    })
}

// ---------------------------------------------------------------------------------------------------------
// ZE_extension_driver_npu
// ---------------------------------------------------------------------------------------------------------

unsafe extern "C" fn pfnGetExtension(
    hDriver: ze_driver_handle_t,
    pExtension: *mut ze_driver_extension_npu_ext_t,
) -> ze_result_t {
    guard("pfnGetExtension", || -> ZeResult {
        // SAFETY: handle validation.
        let d = unsafe { driver_from(hDriver) }?;
        same_driver(DriverKind::Npu, d)?;
        // SAFETY: caller-provided in/out structure.
        let ext = unsafe { out(pExtension) }?;
        if ext.name.is_null() || ext.ppFunctionAddress.is_null() {
            return Err(ZE_RESULT_ERROR_INVALID_NULL_POINTER);
        }
        // SAFETY: NUL-terminated extension name per the structure's contract.
        let name = unsafe { CStr::from_ptr(ext.name) };
        // SAFETY: non-null out-pointer checked above.
        unsafe { *ext.ppFunctionAddress = std::ptr::null_mut() };
        let ours = table_version(name.to_bytes()).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        // The exact name and a version the driver has (ze_driver_npu.cpp `zeDriverGetExtensionExt`).
        if ze_major_version(ext.version) != ze_major_version(ours) || ext.version > ours {
            return Err(ZE_RESULT_ERROR_UNSUPPORTED_VERSION);
        }
        let table = extension_function_address(name).ok_or(ZE_RESULT_ERROR_INVALID_ARGUMENT)?;
        // SAFETY: as above.
        unsafe { *ext.ppFunctionAddress = table };
        crate::export::trace(format_args!(
            "npu pfnGetExtension {} v{}.{} (driver has v{}.{})",
            name.to_string_lossy(),
            ze_major_version(ext.version),
            ze_minor_version(ext.version),
            ze_major_version(ours),
            ze_minor_version(ours)
        ));
        Ok(())
    })
}

/// The `ZE_extension_driver_npu` table.
pub static DRIVER_NPU_TABLE: ze_driver_npu_dditable_ext_t =
    ze_driver_npu_dditable_ext_t { pfnGetExtension: Some(pfnGetExtension) };

// ---------------------------------------------------------------------------------------------------------
// ZE_extension_command_queue_npu, ZE_extension_context_npu
// ---------------------------------------------------------------------------------------------------------

unsafe extern "C" fn pfnSetWorkloadType(
    hCommandQueue: ze_command_queue_handle_t,
    workloadType: ze_command_queue_workload_type_t,
) -> ze_result_t {
    guard("pfnSetWorkloadType", || -> ZeResult {
        // SAFETY: handle validation.
        let q = unsafe { queue_from(hCommandQueue) }?;
        same_driver(DriverKind::Npu, q)?;
        match workloadType {
            ZE_WORKLOAD_TYPE_DEFAULT | ZE_WORKLOAD_TYPE_BACKGROUND => Ok(()),
            _ => Err(ZE_RESULT_ERROR_INVALID_ENUMERATION),
        }
    })
}

/// The `ZE_extension_command_queue_npu` table (1.1).
pub static COMMAND_QUEUE_NPU_TABLE: ze_command_queue_npu_dditable_ext_t =
    ze_command_queue_npu_dditable_ext_t { pfnSetWorkloadType: Some(pfnSetWorkloadType) };

unsafe extern "C" fn pfnContextSetProperties(
    hContext: ze_context_handle_t,
    props: *mut ze_context_properties_npu_ext_t,
) -> ze_result_t {
    guard("pfnContextSetProperties", || -> ZeResult {
        // SAFETY: handle validation.
        same_driver(DriverKind::Npu, unsafe { context_from(hContext) }?)?;
        // SAFETY: caller-provided structure.
        let p = unsafe { input(props as *const ze_context_properties_npu_ext_t) }?;
        idle::set_cleaner(hContext as usize, p.options & ZE_NPU_CONTEXT_OPTION_IDLE_OPTIMIZATIONS != 0);
        Ok(())
    })
}

unsafe extern "C" fn pfnContextReleaseMemory(hContext: ze_context_handle_t) -> ze_result_t {
    guard("pfnContextReleaseMemory", || -> ZeResult {
        // SAFETY: handle validation.
        same_driver(DriverKind::Npu, unsafe { context_from(hContext) }?)?;
        idle::release(hContext as usize);
        Ok(())
    })
}

/// The `ZE_extension_context_npu` table (1.0).
pub static CONTEXT_NPU_TABLE: ze_context_npu_dditable_ext_t = ze_context_npu_dditable_ext_t {
    pfnSetProperties: Some(pfnContextSetProperties),
    pfnReleaseMemory: Some(pfnContextReleaseMemory),
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertised_versions() {
        let p = extension_properties();
        let graph = p.iter().find(|(n, _)| *n == "ZE_extension_graph").unwrap().1;
        assert!(graph <= ze_make_version(1, 18) && graph >= ze_make_version(1, 5));
        assert_eq!(graph_table_slots(graph), 31);
        for (n, _) in p {
            let c = std::ffi::CString::new(*n).unwrap();
            let table = extension_function_address(&c);
            let expect_table =
                !matches!(*n, "ZE_experimental_mutable_command_list" | "ZE_extension_external_memmap_sysmem");
            assert_eq!(table.is_some(), expect_table, "{n}");
        }
    }
}
