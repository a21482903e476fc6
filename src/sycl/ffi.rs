//! The one cxx bridge over the C++ SYCL shim.
//!
//! The C++ side is split in two:
//! - `include/npu_sycl_bridge/sycl_core.hpp` + `cpp/sycl_core.cpp`: the pure C++ core (std and SYCL
//!   types only; also built by CMake for plain C++ users);
//! - `include/npu_sycl_bridge/sycl_shim.hpp` + `cpp/sycl_shim.cpp`: this bridge's thin adapter
//!   (namespace `npu_sycl_bridge::rs`), which converts between cxx types and the core's types.
//!
//! Every function that can throw (`sycl::exception`, `std::exception`) is declared `Result` here, so
//! cxx catches the exception and hands its `what()` text to Rust. The functions that are not `Result`
//! (`imported_ptr`, `imported_size`) only read a field. Destructors of the opaque types release
//! reference-counted SYCL handles and do not throw.
//!
//! Raw pointers cross as `*mut u8`; native Level Zero handles cross as `usize`. A function that
//! acts on a raw pointer, handle or fd is `unsafe` (lookups that only compare values are not).

#[cxx::bridge(namespace = "npu_sycl_bridge::rs")]
pub(crate) mod bridge {
    /// `npu_sycl_bridge::DeviceType`.
    #[derive(Debug)]
    #[repr(u8)]
    enum DeviceType {
        Unknown = 0,
        Cpu = 1,
        Gpu = 2,
        Accelerator = 3,
        Custom = 4,
    }

    /// `npu_sycl_bridge::UsmKind` (values of `ze_memory_type_t`).
    #[derive(Debug)]
    #[repr(u8)]
    enum UsmKind {
        Unknown = 0,
        Host = 1,
        Device = 2,
        Shared = 3,
    }

    /// `sycl::ext::oneapi::level_zero::ownership`.
    #[derive(Debug)]
    #[repr(u8)]
    enum Ownership {
        Transfer = 0,
        Keep = 1,
    }

    /// `npu_sycl_bridge::PlatformInfo`.
    #[derive(Debug, Clone)]
    struct PlatformRecord {
        index: usize,
        backend: String,
        name: String,
        vendor: String,
        version: String,
        is_level_zero: bool,
        /// `ze_driver_handle_t`, 0 unless Level Zero.
        native_driver: usize,
        device_count: usize,
    }

    /// `npu_sycl_bridge::DeviceInfo`.
    #[derive(Debug, Clone)]
    struct DeviceRecord {
        platform_index: usize,
        device_index: usize,
        backend: String,
        device_type: DeviceType,
        name: String,
        vendor: String,
        vendor_id: u32,
        is_level_zero: bool,
        /// `ze_device_handle_t`, 0 unless Level Zero.
        native_device: usize,
        /// `ze_driver_handle_t` of the device's platform, 0 unless Level Zero.
        native_driver: usize,
        /// `aspect::usm_system_allocations`.
        usm_system_allocations: bool,
    }

    /// Where a device is: `get_platforms()[platform_index].get_devices()[device_index]`.
    #[derive(Debug, Clone, Copy)]
    struct DeviceLocation {
        platform_index: usize,
        device_index: usize,
    }

    /// Answer of `find_device_by_native`: `found == false` is the normal "no such device".
    #[derive(Debug, Clone)]
    struct DeviceLookup {
        found: bool,
        device: DeviceRecord,
    }

    /// Answer of `find_platform_by_native_driver`: `found == false` is the normal "no such platform".
    #[derive(Debug, Clone)]
    struct PlatformLookup {
        found: bool,
        platform: PlatformRecord,
    }

    /// `get_native<ext_oneapi_level_zero>(queue)`: a `ze_command_queue_handle_t` (adapter v1) or a
    /// `ze_command_list_handle_t` (immediate list, adapter v2).
    #[derive(Debug, Clone, Copy)]
    struct NativeQueueRecord {
        is_command_list: bool,
        handle: usize,
    }

    unsafe extern "C++" {
        include!("npu_sycl_bridge/sycl_shim.hpp");

        /// Holds a `sycl::device`.
        type SyclDevice;
        /// Holds a `sycl::context`.
        type SyclContext;
        /// Holds an in-order `sycl::queue`.
        type SyclQueue;
        /// Holds an imported `external_mem` and its mapped linear range.
        type SyclImported;

        // ---- platforms and devices ----
        fn list_platforms() -> Result<Vec<PlatformRecord>>;
        fn list_devices() -> Result<Vec<DeviceRecord>>;
        fn device_at(location: DeviceLocation) -> Result<UniquePtr<SyclDevice>>;
        fn find_device_by_native(ze_device: usize) -> Result<DeviceLookup>;
        fn find_platform_by_native_driver(ze_driver: usize) -> Result<PlatformLookup>;

        // ---- contexts and queues ----
        /// `make_context<ext_oneapi_level_zero>({ze_context, devices, ownership})`, after checking
        /// that the devices are Level Zero devices of one platform and that the context accepts them.
        /// Unsafe: `ze_context` is a raw handle (see `Context::from_level_zero`).
        unsafe fn make_level_zero_context(
            ze_context: usize,
            devices: &[DeviceLocation],
            ownership: Ownership,
        ) -> Result<UniquePtr<SyclContext>>;
        fn make_device_context(device: &SyclDevice) -> Result<UniquePtr<SyclContext>>;
        fn context_native(context: &SyclContext) -> Result<usize>;
        fn context_device_count(context: &SyclContext) -> Result<usize>;
        /// A copy of the `sycl::context` at `address` (a reference-counted handle).
        /// Unsafe: `address` must point to a live `sycl::context`.
        unsafe fn adopt_context(address: usize) -> Result<UniquePtr<SyclContext>>;
        /// The native `ze_device_handle_t` of each of the context's devices (throws for other backends).
        fn context_native_devices(context: &SyclContext) -> Result<Vec<usize>>;
        fn make_in_order_queue(context: &SyclContext, device: &SyclDevice) -> Result<UniquePtr<SyclQueue>>;
        fn queue_native(queue: &SyclQueue) -> Result<NativeQueueRecord>;
        fn queue_wait(queue: &SyclQueue) -> Result<()>;

        // ---- USM ----
        fn usm_alloc(
            kind: UsmKind,
            size: usize,
            alignment: usize,
            device: &SyclDevice,
            context: &SyclContext,
        ) -> Result<*mut u8>;
        unsafe fn usm_free(ptr: *mut u8, context: &SyclContext) -> Result<()>;
        unsafe fn pointer_kind(ptr: *const u8, context: &SyclContext) -> Result<UsmKind>;
        /// Submits `queue.memcpy`; completes at the next `queue_wait`.
        unsafe fn queue_memcpy(queue: &SyclQueue, dst: *mut u8, src: *const u8, size: usize) -> Result<()>;
        /// Submits `queue.memset`; completes at the next `queue_wait`.
        unsafe fn queue_memset(queue: &SyclQueue, dst: *mut u8, value: u8, size: usize) -> Result<()>;

        // ---- external memory (a dma-buf fd on Linux, an NT handle on Windows, as its value) ----
        fn alloc_exportable_device_mem(
            size: usize,
            alignment: usize,
            device: &SyclDevice,
            context: &SyclContext,
        ) -> Result<*mut u8>;
        /// A new dma-buf fd (NT handle) per call; the caller owns it.
        unsafe fn export_shared_handle(ptr: *mut u8, device: &SyclDevice, context: &SyclContext) -> Result<u64>;
        unsafe fn free_exportable_device_mem(ptr: *mut u8, device: &SyclDevice, context: &SyclContext) -> Result<()>;
        /// Imports and maps `size` bytes of the dma-buf fd (NT handle) `handle` (which stays owned by
        /// the caller and must stay open until `release_imported` has returned).
        /// Unsafe: `handle` is a raw fd number or handle value.
        unsafe fn import_shared_handle(
            handle: u64,
            size: usize,
            device: &SyclDevice,
            context: &SyclContext,
        ) -> Result<UniquePtr<SyclImported>>;
        fn imported_ptr(memory: &SyclImported) -> *mut u8;
        fn imported_size(memory: &SyclImported) -> usize;
        /// Unmaps and releases; idempotent.
        fn release_imported(memory: Pin<&mut SyclImported>, device: &SyclDevice, context: &SyclContext) -> Result<()>;
    }
}
