// npu_sycl_bridge: pure C++ core of the SYCL side. See include/npu_sycl_bridge/sycl_core.hpp.
#include "npu_sycl_bridge/sycl_core.hpp"

#include <sycl/ext/oneapi/backend/level_zero.hpp>
#include <sycl/ext/oneapi/bindless_images.hpp>
#include <sycl/ext/oneapi/memory_export.hpp>

#ifdef _WIN32
#include <windows.h>
#else
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <variant>

namespace npu_sycl_bridge {

namespace syclex = sycl::ext::oneapi::experimental;
constexpr auto L0 = sycl::backend::ext_oneapi_level_zero;

namespace {

DeviceType to_device_type(sycl::info::device_type t) {
  switch (t) {
    case sycl::info::device_type::cpu: return DeviceType::cpu;
    case sycl::info::device_type::gpu: return DeviceType::gpu;
    case sycl::info::device_type::accelerator: return DeviceType::accelerator;
    case sycl::info::device_type::custom: return DeviceType::custom;
    default: return DeviceType::unknown;
  }
}

#ifdef _WIN32
// A duplicate of an NT handle in this process, or an exception naming what it was for.
SharedHandle duplicate(SharedHandle h, const char* what) {
  HANDLE d = nullptr;
  if (!::DuplicateHandle(::GetCurrentProcess(), h, ::GetCurrentProcess(), &d, 0, FALSE, DUPLICATE_SAME_ACCESS))
    throw std::runtime_error(std::string(what) + ": DuplicateHandle failed with error " + std::to_string(::GetLastError()));
  return d;
}
#else
// Whether `a` is an open fd of the same file as the open fd `b`.
bool same_open_file(int a, int b) {
  struct stat sa {}, sb {};
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

// A duplicate of fd (close-on-exec), or an exception naming what it was for.
SharedHandle duplicate(SharedHandle fd, const char* what) {
  int d = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (d < 0) throw std::runtime_error(std::string(what) + ": duplicating fd " + std::to_string(fd) + " failed");
  return d;
}
#endif

std::string context_where(const char* what, std::size_t a, std::size_t b) {
  return std::string(what) + " " + std::to_string(a) + " (of " + std::to_string(b) + ")";
}

} // namespace

std::string backend_name(sycl::backend b) {
  switch (b) {
    case sycl::backend::ext_oneapi_level_zero: return "level_zero";
    case sycl::backend::opencl: return "opencl";
    case sycl::backend::ext_oneapi_cuda: return "cuda";
    case sycl::backend::ext_oneapi_hip: return "hip";
    case sycl::backend::ext_oneapi_native_cpu: return "native_cpu";
    case sycl::backend::ext_oneapi_offload: return "offload";
    default: return "unknown";
  }
}

// ---- platforms and devices ----------------------------------------------------------------------

PlatformInfo platform_info(const sycl::platform& p, std::size_t index) {
  PlatformInfo info;
  info.index = index;
  info.backend = backend_name(p.get_backend());
  info.name = p.get_info<sycl::info::platform::name>();
  info.vendor = p.get_info<sycl::info::platform::vendor>();
  info.version = p.get_info<sycl::info::platform::version>();
  info.is_level_zero = p.get_backend() == L0;
  if (info.is_level_zero) info.native_driver = native_driver(p);
  info.device_count = p.get_devices().size();
  return info;
}

DeviceInfo device_info(const sycl::device& d, std::size_t platform_index, std::size_t device_index) {
  DeviceInfo info;
  info.platform_index = platform_index;
  info.device_index = device_index;
  info.backend = backend_name(d.get_backend());
  info.type = to_device_type(d.get_info<sycl::info::device::device_type>());
  info.name = d.get_info<sycl::info::device::name>();
  info.vendor = d.get_info<sycl::info::device::vendor>();
  info.vendor_id = d.get_info<sycl::info::device::vendor_id>();
  info.is_level_zero = d.get_backend() == L0;
  info.usm_system_allocations = d.has(sycl::aspect::usm_system_allocations);
  if (info.is_level_zero) {
    info.native_device = native_device(d);
    info.native_driver = native_driver(d.get_platform());
  }
  return info;
}

std::vector<PlatformInfo> list_platforms() {
  std::vector<PlatformInfo> out;
  auto platforms = sycl::platform::get_platforms();
  out.reserve(platforms.size());
  for (std::size_t i = 0; i < platforms.size(); ++i) out.push_back(platform_info(platforms[i], i));
  return out;
}

std::vector<DeviceInfo> list_devices() {
  std::vector<DeviceInfo> out;
  auto platforms = sycl::platform::get_platforms();
  for (std::size_t p = 0; p < platforms.size(); ++p) {
    auto devices = platforms[p].get_devices();
    for (std::size_t d = 0; d < devices.size(); ++d) out.push_back(device_info(devices[d], p, d));
  }
  return out;
}

sycl::device device_at(std::size_t platform_index, std::size_t device_index) {
  auto platforms = sycl::platform::get_platforms();
  if (platform_index >= platforms.size())
    throw std::out_of_range("no SYCL " + context_where("platform", platform_index, platforms.size()));
  auto devices = platforms[platform_index].get_devices();
  if (device_index >= devices.size())
    throw std::out_of_range("no SYCL " + context_where("device", device_index, devices.size()) + " on platform " +
                            std::to_string(platform_index));
  return devices[device_index];
}

std::optional<DeviceInfo> find_device_by_native(std::uintptr_t ze_device) {
  if (ze_device == 0) return std::nullopt;
  auto platforms = sycl::platform::get_platforms();
  for (std::size_t p = 0; p < platforms.size(); ++p) {
    if (platforms[p].get_backend() != L0) continue;
    auto devices = platforms[p].get_devices();
    for (std::size_t d = 0; d < devices.size(); ++d)
      if (native_device(devices[d]) == ze_device) return device_info(devices[d], p, d);
  }
  return std::nullopt;
}

std::optional<PlatformInfo> find_platform_by_native_driver(std::uintptr_t ze_driver) {
  if (ze_driver == 0) return std::nullopt;
  auto platforms = sycl::platform::get_platforms();
  for (std::size_t p = 0; p < platforms.size(); ++p) {
    if (platforms[p].get_backend() != L0) continue;
    if (native_driver(platforms[p]) == ze_driver) return platform_info(platforms[p], p);
  }
  return std::nullopt;
}

// ---- native handles ------------------------------------------------------------------------------

namespace {
void require_level_zero(sycl::backend b, const char* what) {
  if (b != L0)
    throw std::invalid_argument(std::string(what) + " is not a Level Zero object (backend " + backend_name(b) + ")");
}
} // namespace

std::uintptr_t native_driver(const sycl::platform& p) {
  require_level_zero(p.get_backend(), "platform");
  return reinterpret_cast<std::uintptr_t>(sycl::get_native<L0>(p));
}

std::uintptr_t native_device(const sycl::device& d) {
  require_level_zero(d.get_backend(), "device");
  return reinterpret_cast<std::uintptr_t>(sycl::get_native<L0>(d));
}

std::uintptr_t native_context(const sycl::context& c) {
  require_level_zero(c.get_backend(), "context");
  return reinterpret_cast<std::uintptr_t>(sycl::get_native<L0>(c));
}

NativeQueue native_queue(const sycl::queue& q) {
  require_level_zero(q.get_backend(), "queue");
  auto v = sycl::get_native<L0>(q);
  NativeQueue out;
  if (auto* cq = std::get_if<ze_command_queue_handle_t>(&v)) {
    out.kind = NativeQueue::Kind::command_queue;
    out.handle = reinterpret_cast<std::uintptr_t>(*cq);
  } else {
    out.kind = NativeQueue::Kind::command_list;
    out.handle = reinterpret_cast<std::uintptr_t>(std::get<ze_command_list_handle_t>(v));
  }
  return out;
}

// ---- contexts and queues -------------------------------------------------------------------------

namespace {

// Minimal Level Zero ABI for the context/device probe (ze_api.h, spec 1.x); the loader is looked up
// at run time in the process (SYCL has loaded it by now), never linked.
struct ZeDeviceMemAllocDesc {
  std::uint32_t stype; // ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC
  const void* pNext;
  std::uint32_t flags;
  std::uint32_t ordinal;
};
constexpr std::uint32_t kZeStructureTypeDeviceMemAllocDesc = 0x15;
using ZeMemAllocDeviceFn = std::int32_t (*)(void* ctx, const ZeDeviceMemAllocDesc*, std::size_t, std::size_t,
                                            void* dev, void** out);
using ZeMemFreeFn = std::int32_t (*)(void* ctx, void* ptr);

#ifdef _WIN32
// The loader module the process already uses (the one SYCL opened), without a reference: nothing to close.
struct LoaderRef {
  HMODULE module = ::GetModuleHandleA("ze_loader.dll");
  explicit operator bool() const { return module != nullptr; }
  void* get() const { return module; }
};
void* loader_symbol(const LoaderRef& l, const char* name) {
  return reinterpret_cast<void*>(::GetProcAddress(l.module, name));
}
#else
struct DlClose {
  void operator()(void* handle) const noexcept { dlclose(handle); }
};
// RTLD_NOLOAD: only the loader instance the process already uses (the one SYCL opened). The reference
// RTLD_NOLOAD adds is dropped on every path out, exceptions included.
struct LoaderRef {
  std::unique_ptr<void, DlClose> handle{dlopen("libze_loader.so.1", RTLD_LAZY | RTLD_NOLOAD)};
  explicit operator bool() const { return handle != nullptr; }
};
void* loader_symbol(const LoaderRef& l, const char* name) { return dlsym(l.handle.get(), name); }
#endif

std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

} // namespace

void check_context_accepts_devices(std::uintptr_t ze_context, const std::vector<sycl::device>& devices) {
  // The loader the process already uses; native_device() and get_info() below can throw.
  LoaderRef loader;
  if (!loader) return; // no loader in the process: nothing to probe with
  auto alloc = reinterpret_cast<ZeMemAllocDeviceFn>(loader_symbol(loader, "zeMemAllocDevice"));
  auto release = reinterpret_cast<ZeMemFreeFn>(loader_symbol(loader, "zeMemFree"));
  if (alloc == nullptr || release == nullptr) return;
  std::string failure;
  for (const auto& d : devices) {
    // The same probe UR's USM pools make at context creation (size 1, alignment 64), done first so
    // that a context of another driver is an error here instead of a crash at teardown (adapter v1).
    ZeDeviceMemAllocDesc desc{kZeStructureTypeDeviceMemAllocDesc, nullptr, 0, 0};
    void* p = nullptr;
    void* dev = reinterpret_cast<void*>(native_device(d));
    std::int32_t r = alloc(reinterpret_cast<void*>(ze_context), &desc, 1, 64, dev, &p);
    if (r != 0 || p == nullptr) {
      failure = "make_context: the ze_context " + hex(ze_context) + " does not accept device " + hex(
                    reinterpret_cast<std::uintptr_t>(dev)) + " ('" + d.get_info<sycl::info::device::name>() +
                "'): a 1-byte zeMemAllocDevice probe returned " + hex(static_cast<std::uint32_t>(r)) +
                ". The usual cause is a context of another Level Zero driver (such as the NPU plugin's): "
                "the context must be created on the driver of the devices' platform (" +
                hex(native_driver(d.get_platform())) + ")";
      break;
    }
    release(reinterpret_cast<void*>(ze_context), p);
  }
  if (!failure.empty()) throw std::invalid_argument(failure);
}

sycl::context make_level_zero_context(std::uintptr_t ze_context, const std::vector<sycl::device>& devices,
                                      Ownership ownership) {
  if (ze_context == 0) throw std::invalid_argument("make_context: the ze_context_handle_t is null");
  if (devices.empty()) throw std::invalid_argument("make_context: the device list is empty");
  const sycl::platform platform = devices.front().get_platform();
  for (const auto& d : devices) {
    require_level_zero(d.get_backend(), "make_context: device");
    if (d.get_platform() != platform)
      throw std::invalid_argument("make_context: the devices belong to different platforms (Level Zero drivers)");
  }
  check_context_accepts_devices(ze_context, devices);
  sycl::backend_input_t<L0, sycl::context> input{
      reinterpret_cast<ze_context_handle_t>(ze_context), devices,
      ownership == Ownership::keep ? sycl::ext::oneapi::level_zero::ownership::keep
                                   : sycl::ext::oneapi::level_zero::ownership::transfer};
  return sycl::make_context<L0>(input);
}

sycl::context make_device_context(const sycl::device& d) { return sycl::context(d); }

namespace {
// DPC++'s default async_handler prints the exceptions and calls std::terminate(), from inside
// wait_and_throw(). This one rethrows the first, so queue_wait() reports asynchronous errors (a failed
// command, an exception from a host_task) as an ordinary exception.
void rethrow_first_async_error(sycl::exception_list errors) {
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}
} // namespace

sycl::queue make_in_order_queue(const sycl::context& ctx, const sycl::device& dev) {
  return sycl::queue(ctx, dev, rethrow_first_async_error, sycl::property_list{sycl::property::queue::in_order{}});
}

// ---- USM -----------------------------------------------------------------------------------------

void* usm_alloc(UsmKind kind, std::size_t size, std::size_t alignment, const sycl::device& dev,
                const sycl::context& ctx) {
  if (size == 0) throw std::invalid_argument("USM allocation of 0 bytes");
  if (alignment != 0 && (alignment & (alignment - 1)) != 0)
    throw std::invalid_argument("USM alignment " + std::to_string(alignment) + " is not a power of two");
  void* p = nullptr;
  const char* what = "";
  switch (kind) {
    case UsmKind::host:
      what = "aligned_alloc_host";
      p = sycl::aligned_alloc_host(alignment, size, ctx);
      break;
    case UsmKind::device:
      what = "aligned_alloc_device";
      p = sycl::aligned_alloc_device(alignment, size, dev, ctx);
      break;
    case UsmKind::shared:
      what = "aligned_alloc_shared";
      p = sycl::aligned_alloc_shared(alignment, size, dev, ctx);
      break;
    default: throw std::invalid_argument("USM allocation of kind unknown");
  }
  if (p == nullptr)
    throw std::runtime_error(std::string(what) + "(" + std::to_string(alignment) + ", " + std::to_string(size) +
                             ") returned nullptr");
  return p;
}

void usm_free(void* ptr, const sycl::context& ctx) { sycl::free(ptr, ctx); }

UsmKind pointer_kind(const void* ptr, const sycl::context& ctx) {
  switch (sycl::get_pointer_type(ptr, ctx)) {
    case sycl::usm::alloc::host: return UsmKind::host;
    case sycl::usm::alloc::device: return UsmKind::device;
    case sycl::usm::alloc::shared: return UsmKind::shared;
    default: return UsmKind::unknown;
  }
}

void queue_memcpy(sycl::queue& q, void* dst, const void* src, std::size_t n) { q.memcpy(dst, src, n); }

void queue_memset(sycl::queue& q, void* dst, int value, std::size_t n) { q.memset(dst, value, n); }

void queue_wait(sycl::queue& q) { q.wait_and_throw(); }

// ---- external memory (dma-buf) -------------------------------------------------------------------

void* alloc_exportable_device_mem(std::size_t size, std::size_t alignment, const sycl::device& dev,
                                  const sycl::context& ctx) {
  if (size == 0) throw std::invalid_argument("exportable allocation of 0 bytes");
#ifdef _WIN32
  constexpr auto kind = syclex::external_mem_handle_type::win32_nt_handle;
#else
  constexpr auto kind = syclex::external_mem_handle_type::dma_buf;
#endif
  void* p = syclex::alloc_exportable_device_mem(alignment, size, kind, dev, ctx);
  if (p == nullptr) throw std::runtime_error("alloc_exportable_device_mem returned nullptr");
  return p;
}

bool gpu_driver_closes_imported_fds(const sycl::device& dev) {
  if (dev.get_backend() != L0) return false;
  // UR reports the L0 driverVersion as "major.minor.build"; compute-runtime's build is the last part.
  std::string v = dev.get_info<sycl::info::device::driver_version>();
  auto dot = v.rfind('.');
  unsigned long build = 0;
  try {
    build = std::stoul(dot == std::string::npos ? v : v.substr(dot + 1));
  } catch (...) {
    return false;
  }
  return build >= kComputeRuntimeImportClosesFdBuild;
}

SharedHandle export_shared_handle(void* ptr, const sycl::device& dev, const sycl::context& ctx) {
  // The runtime returns the GPU driver's own handle (compute-runtime keeps one per allocation and
  // closes it in zeMemFree; UR passes it through): hand out a duplicate the caller owns.
#ifdef _WIN32
  void* h = syclex::export_device_mem_handle<syclex::external_mem_handle_type::win32_nt_handle>(ptr, dev, ctx);
  if (h == nullptr) throw std::runtime_error("export_device_mem_handle<win32_nt_handle> returned no handle");
  return duplicate(h, "export_device_mem_handle<win32_nt_handle>");
#else
  int fd = syclex::export_device_mem_handle<syclex::external_mem_handle_type::dma_buf>(ptr, dev, ctx);
  if (fd < 0) throw std::runtime_error("export_device_mem_handle<dma_buf> returned fd " + std::to_string(fd));
  return duplicate(fd, "export_device_mem_handle<dma_buf>");
#endif
}

void free_exportable_device_mem(void* ptr, const sycl::device& dev, const sycl::context& ctx) {
  syclex::free_exportable_memory(ptr, dev, ctx);
}

namespace {

#ifdef _WIN32
// compute-runtime on Windows opens the resource behind the handle and never closes the handle.
bool import_consumes(const sycl::device&) { return false; }
bool valid(SharedHandle h) { return h != nullptr && h != INVALID_HANDLE_VALUE; }
void close_handle(SharedHandle h) { ::CloseHandle(h); }
bool still_ours(SharedHandle, SharedHandle) { return false; }
syclex::external_mem_descriptor<syclex::resource_win32_handle> descriptor(SharedHandle h, std::size_t size) {
  return {syclex::resource_win32_handle{h}, syclex::external_mem_handle_type::win32_nt_handle, size};
}
#else
bool import_consumes(const sycl::device& dev) { return gpu_driver_closes_imported_fds(dev); }
bool valid(SharedHandle fd) { return fd >= 0; }
void close_handle(SharedHandle fd) { ::close(fd); }
// UR imports at map time (zeMemAllocDevice with the fd); the driver closes the duplicate only when
// that import succeeds. If it is still ours (open, on the same buffer), it is ours to close.
bool still_ours(SharedHandle given, SharedHandle original) { return same_open_file(given, original); }
syclex::external_mem_descriptor<syclex::resource_fd> descriptor(SharedHandle fd, std::size_t size) {
  return {syclex::resource_fd{fd}, syclex::external_mem_handle_type::dma_buf, size};
}
#endif

} // namespace

ImportedLinearMemory import_shared_handle(SharedHandle handle, std::size_t size, const sycl::device& dev,
                                          const sycl::context& ctx) {
  if (!valid(handle)) throw std::invalid_argument("import_external_memory: invalid handle");
  if (size == 0) throw std::invalid_argument("import_external_memory: size 0");
  // A driver that closes what it imports gets a duplicate, so the caller's handle stays the caller's.
  const bool consumed = import_consumes(dev);
  const SharedHandle given = consumed ? duplicate(handle, "import_external_memory") : handle;
  auto desc = descriptor(given, size);
  ImportedLinearMemory out;
  out.size = size;
  try {
    out.external = syclex::import_external_memory(desc, dev, ctx);
  } catch (...) {
    if (consumed) close_handle(given);  // a failed import does not consume it
    throw;
  }
  try {
    out.ptr = syclex::map_external_linear_memory(out.external, 0, size, dev, ctx);
    if (out.ptr == nullptr) throw std::runtime_error("map_external_linear_memory returned nullptr");
  } catch (...) {
    try {
      syclex::release_external_memory(out.external, dev, ctx);
    } catch (...) {
    }
    if (consumed && still_ours(given, handle)) close_handle(given);
    throw;
  }
  return out;
}

void release_imported(ImportedLinearMemory& mem, const sycl::device& dev, const sycl::context& ctx) {
  std::exception_ptr first;
  if (mem.ptr != nullptr) {
    try {
      syclex::unmap_external_linear_memory(mem.ptr, dev, ctx);
    } catch (...) {
      first = std::current_exception();
    }
    mem.ptr = nullptr;
  }
  if (mem.external.raw_handle != nullptr) {
    try {
      syclex::release_external_memory(mem.external, dev, ctx);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    mem.external.raw_handle = nullptr;
  }
  if (first) std::rethrow_exception(first);
}

} // namespace npu_sycl_bridge
