//! The virtual-memory API on Windows: not modelled. compute-runtime implements it on WDDM too, but
//! this platform's reservations and physical memory are Linux mappings (`virtual_mem.rs`); here
//! every call is `UNSUPPORTED_FEATURE`, a limit of the platform, not of the driver. Neither the
//! NPU plugin nor the bridge reserves virtual memory.
ze_unsupported! {
    zeVirtualMemQueryPageSize zeVirtualMemReserve zeVirtualMemFree zePhysicalMemCreate zePhysicalMemDestroy
    zeVirtualMemMap zeVirtualMemUnmap zeVirtualMemSetAccessAttribute zeVirtualMemGetAccessAttribute
    zeMemSetAtomicAccessAttributeExp zeMemGetAtomicAccessAttributeExp
}

/// No reservations on Windows: nothing to refuse.
pub fn gpu_may_access(_ptr: usize, _len: usize, _write: bool) -> bool {
    true
}
