// npu_sycl_bridge: pure C++ core of the SYCL side (no cxx types; usable from plain C++ through CMake).
//
// Host-only: nothing here launches a kernel. Only USM allocation, memcpy, memset and the Level Zero
// interop / external-memory entry points of DPC++ are used, so a plain C++17 compiler builds it against
// the DPC++ runtime's headers (define SYCL_DISABLE_FSYCL_SYCLHPP_WARNING) and links libsycl.
//
// Errors: every function may throw sycl::exception (from the runtime) or std::runtime_error (from the
// checks made here). Lookup functions that can legitimately find nothing return std::optional instead
// of throwing.
//
// Native Level Zero handles are passed as std::uintptr_t so that this header does not need ze_api.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <sycl/sycl.hpp>

namespace npu_sycl_bridge {

/// sycl::info::device_type, reduced to what a device reports about itself.
enum class DeviceType : std::uint8_t { unknown = 0, cpu = 1, gpu = 2, accelerator = 3, custom = 4 };

/// sycl::usm::alloc with stable numeric values (the Level Zero ze_memory_type_t values).
enum class UsmKind : std::uint8_t { unknown = 0, host = 1, device = 2, shared = 3 };

/// sycl::ext::oneapi::level_zero::ownership of a native handle given to make_context.
enum class Ownership : std::uint8_t {
  /// SYCL owns the handle from now on and calls zeContextDestroy when the last copy is released. If
  /// make_level_zero_context throws, whether SYCL took it is unspecified: treat it as given away (never
  /// destroy it yourself; at worst it leaks).
  transfer = 0,
  /// The caller keeps the handle; SYCL never destroys it. The caller must destroy it only after the
  /// sycl::context and everything made from it are gone.
  keep = 1,
};

/// One SYCL platform, in sycl::platform::get_platforms() order.
struct PlatformInfo {
  std::size_t index = 0;
  std::string backend; ///< "level_zero", "opencl", "cuda", "hip", "native_cpu", "offload", "unknown"
  std::string name;
  std::string vendor;
  std::string version;
  bool is_level_zero = false;
  /// ze_driver_handle_t of a Level Zero platform, 0 otherwise.
  std::uintptr_t native_driver = 0;
  std::size_t device_count = 0;
};

/// One root device of a SYCL platform.
struct DeviceInfo {
  std::size_t platform_index = 0;
  std::size_t device_index = 0; ///< index in platform.get_devices()
  std::string backend;
  DeviceType type = DeviceType::unknown;
  std::string name;
  std::string vendor;
  std::uint32_t vendor_id = 0;
  bool is_level_zero = false;
  /// ze_device_handle_t of a Level Zero device, 0 otherwise.
  std::uintptr_t native_device = 0;
  /// ze_driver_handle_t of the device's platform (Level Zero only), 0 otherwise.
  std::uintptr_t native_driver = 0;
  /// aspect::usm_system_allocations: kernels and copies reach ordinary process memory (malloc,
  /// mmap) directly; Level Zero reports it as the device's shared-system allocation capabilities.
  bool usm_system_allocations = false;
};

/// The native queue object behind a Level Zero sycl::queue: a command queue (adapter v1) or an
/// immediate command list (adapter v2).
struct NativeQueue {
  enum class Kind : std::uint8_t { command_queue = 0, command_list = 1 } kind = Kind::command_queue;
  std::uintptr_t handle = 0;
};

/// A dma-buf import: the runtime's external memory handle and the mapped linear range.
struct ImportedLinearMemory {
  sycl::ext::oneapi::experimental::external_mem external{};
  void* ptr = nullptr;
  std::size_t size = 0;
};

// ---- platforms and devices ----------------------------------------------------------------------

std::string backend_name(sycl::backend b);
std::vector<PlatformInfo> list_platforms();
/// All root devices of all platforms.
std::vector<DeviceInfo> list_devices();
PlatformInfo platform_info(const sycl::platform& p, std::size_t index);
DeviceInfo device_info(const sycl::device& d, std::size_t platform_index, std::size_t device_index);
/// platform get_platforms()[platform_index], device get_devices()[device_index]; throws if out of range.
sycl::device device_at(std::size_t platform_index, std::size_t device_index);
/// The Level Zero SYCL device whose native ze_device_handle_t is `ze_device`; nullopt if none.
std::optional<DeviceInfo> find_device_by_native(std::uintptr_t ze_device);
/// The Level Zero SYCL platform whose native ze_driver_handle_t is `ze_driver`; nullopt if none.
std::optional<PlatformInfo> find_platform_by_native_driver(std::uintptr_t ze_driver);

// ---- native handles (Level Zero backend only; throw otherwise) -----------------------------------

std::uintptr_t native_driver(const sycl::platform& p);
std::uintptr_t native_device(const sycl::device& d);
std::uintptr_t native_context(const sycl::context& c);
NativeQueue native_queue(const sycl::queue& q);

// ---- contexts and queues -------------------------------------------------------------------------

/// sycl::make_context<backend::ext_oneapi_level_zero>({ze_context, devices, ownership}).
/// The devices must be Level Zero devices of one platform, and ze_context must have been created on
/// that platform's driver. The runtime checks neither (adapter v1 then crashes at teardown; see
/// dpcpp-level-zero.md), so this function checks the device list (non-empty, Level Zero, one
/// platform) and probes the context with check_context_accepts_devices() before make_context (which
/// turns a context of another driver into an exception only where drivers check handles: see there).
sycl::context make_level_zero_context(std::uintptr_t ze_context, const std::vector<sycl::device>& devices,
                                      Ownership ownership);
/// Probes each device with zeMemAllocDevice(ze_context, size 1) + zeMemFree, through the Level Zero
/// loader already loaded in the process (skipped if there is none). Throws std::invalid_argument if the
/// context rejects a device. make_level_zero_context calls it.
///
/// It catches a context of another driver only where that driver (or the loader) rejects a foreign
/// device handle, as the virtual platform does. A real driver need not check: the call hands it the
/// other driver's device handle, which is undefined behaviour there. So never pass a context of another
/// driver on real hardware; the probe is a safety net, not a test of that.
void check_context_accepts_devices(std::uintptr_t ze_context, const std::vector<sycl::device>& devices);
/// A plain (SYCL-created) context of one device.
sycl::context make_device_context(const sycl::device& d);
/// An in-order queue on `ctx` and `dev`. Its async_handler rethrows the first asynchronous error from
/// queue_wait() (DPC++'s default handler would call std::terminate()).
sycl::queue make_in_order_queue(const sycl::context& ctx, const sycl::device& dev);

// ---- USM -----------------------------------------------------------------------------------------

/// aligned_alloc_{host,shared,device}(alignment, size, ...). Throws std::runtime_error instead of
/// returning nullptr. alignment 0 means the runtime's default.
void* usm_alloc(UsmKind kind, std::size_t size, std::size_t alignment, const sycl::device& dev,
                const sycl::context& ctx);
void usm_free(void* ptr, const sycl::context& ctx);
UsmKind pointer_kind(const void* ptr, const sycl::context& ctx);
/// q.memcpy(dst, src, n).wait()-less: returns after submission; call queue_wait() to complete.
void queue_memcpy(sycl::queue& q, void* dst, const void* src, std::size_t n);
void queue_memset(sycl::queue& q, void* dst, int value, std::size_t n);
/// q.wait_and_throw().
void queue_wait(sycl::queue& q);

// ---- external memory (a dma-buf fd on Linux, an NT handle on Windows) ----------------------------

/// The OS's handle to shareable memory: a dma-buf file descriptor on Linux, an NT handle on Windows.
#ifdef _WIN32
using SharedHandle = void*;
#else
using SharedHandle = int;
#endif

/// alloc_exportable_device_mem(alignment, size, dma_buf, dev, ctx). Throws instead of returning nullptr.
void* alloc_exportable_device_mem(std::size_t size, std::size_t alignment, const sycl::device& dev,
                                  const sycl::context& ctx);
/// export_device_mem_handle<dma_buf> (<win32_nt_handle> on Windows), duplicated: a NEW fd or NT handle
/// each call, owned by the caller (close it). The runtime's own is the GPU driver's (compute-runtime
/// keeps one per allocation and closes it when the memory is freed, on Linux and on Windows), so it
/// is never handed out.
SharedHandle export_shared_handle(void* ptr, const sycl::device& dev, const sycl::context& ctx);
/// The first compute-runtime build whose dma-buf import closes the fd it was given (26.14.37833).
constexpr unsigned long kComputeRuntimeImportClosesFdBuild = 37833;
/// Whether `dev`'s Level Zero driver closes the fd of a successful dma-buf import (compute-runtime
/// 26.14.37833 and later, read from the driver version's build number).
bool gpu_driver_closes_imported_fds(const sycl::device& dev);
void free_exportable_device_mem(void* ptr, const sycl::device& dev, const sycl::context& ctx);
/// import_external_memory(resource_fd{fd}, dma_buf, size) (resource_win32_handle, win32_nt_handle on
/// Windows) + map_external_linear_memory(0, size). The handle stays owned by the caller, who must keep
/// it open until release_imported() has returned: a Linux driver that closes imported fds is given a
/// duplicate; compute-runtime on Windows never closes an imported handle.
ImportedLinearMemory import_shared_handle(SharedHandle handle, std::size_t size, const sycl::device& dev,
                                          const sycl::context& ctx);
/// unmap_external_linear_memory + release_external_memory (both attempted; the first error is rethrown).
void release_imported(ImportedLinearMemory& mem, const sycl::device& dev, const sycl::context& ctx);

} // namespace npu_sycl_bridge
