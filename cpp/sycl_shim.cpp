// npu_sycl_bridge: the cxx adapter over the pure C++ core. See include/npu_sycl_bridge/sycl_shim.hpp.
#include "npu_sycl_bridge/sycl_shim.hpp"

#include "npu-sycl-bridge/src/sycl/ffi.rs.h"

#include <string>
#include <utility>
#include <vector>

namespace npu_sycl_bridge::rs {

namespace core = ::npu_sycl_bridge;

namespace {

rust::String str(const std::string& s) { return rust::String::lossy(s); }

PlatformRecord to_record(const core::PlatformInfo& p) {
  PlatformRecord r;
  r.index = p.index;
  r.backend = str(p.backend);
  r.name = str(p.name);
  r.vendor = str(p.vendor);
  r.version = str(p.version);
  r.is_level_zero = p.is_level_zero;
  r.native_driver = p.native_driver;
  r.device_count = p.device_count;
  return r;
}

DeviceRecord to_record(const core::DeviceInfo& d) {
  DeviceRecord r;
  r.platform_index = d.platform_index;
  r.device_index = d.device_index;
  r.backend = str(d.backend);
  r.device_type = static_cast<DeviceType>(static_cast<std::uint8_t>(d.type));
  r.name = str(d.name);
  r.vendor = str(d.vendor);
  r.vendor_id = d.vendor_id;
  r.is_level_zero = d.is_level_zero;
  r.native_device = d.native_device;
  r.native_driver = d.native_driver;
  r.usm_system_allocations = d.usm_system_allocations;
  return r;
}

core::UsmKind to_core(UsmKind k) { return static_cast<core::UsmKind>(static_cast<std::uint8_t>(k)); }

} // namespace

// ---- platforms and devices ----

rust::Vec<PlatformRecord> list_platforms() {
  rust::Vec<PlatformRecord> out;
  for (const auto& p : core::list_platforms()) out.push_back(to_record(p));
  return out;
}

rust::Vec<DeviceRecord> list_devices() {
  rust::Vec<DeviceRecord> out;
  for (const auto& d : core::list_devices()) out.push_back(to_record(d));
  return out;
}

std::unique_ptr<SyclDevice> device_at(DeviceLocation location) {
  return std::make_unique<SyclDevice>(SyclDevice{core::device_at(location.platform_index, location.device_index)});
}

DeviceLookup find_device_by_native(std::size_t ze_device) {
  DeviceLookup out;
  out.found = false;
  if (auto d = core::find_device_by_native(ze_device)) {
    out.found = true;
    out.device = to_record(*d);
  }
  return out;
}

PlatformLookup find_platform_by_native_driver(std::size_t ze_driver) {
  PlatformLookup out;
  out.found = false;
  if (auto p = core::find_platform_by_native_driver(ze_driver)) {
    out.found = true;
    out.platform = to_record(*p);
  }
  return out;
}

// ---- contexts and queues ----

std::unique_ptr<SyclContext> make_level_zero_context(std::size_t ze_context, rust::Slice<const DeviceLocation> devices,
                                                     Ownership ownership) {
  std::vector<sycl::device> list;
  list.reserve(devices.size());
  for (const auto& loc : devices) list.push_back(core::device_at(loc.platform_index, loc.device_index));
  const auto own = ownership == Ownership::Keep ? core::Ownership::keep : core::Ownership::transfer;
  return std::make_unique<SyclContext>(SyclContext{core::make_level_zero_context(ze_context, list, own)});
}

std::unique_ptr<SyclContext> make_device_context(const SyclDevice& device) {
  return std::make_unique<SyclContext>(SyclContext{core::make_device_context(device.device)});
}

std::size_t context_native(const SyclContext& context) { return core::native_context(context.context); }

std::size_t context_device_count(const SyclContext& context) { return context.context.get_devices().size(); }

std::unique_ptr<SyclContext> adopt_context(std::size_t address) {
  return std::make_unique<SyclContext>(SyclContext{*reinterpret_cast<const sycl::context*>(address)});
}

rust::Vec<std::size_t> context_native_devices(const SyclContext& context) {
  rust::Vec<std::size_t> out;
  for (const auto& d : context.context.get_devices()) out.push_back(core::native_device(d));
  return out;
}

std::unique_ptr<SyclQueue> make_in_order_queue(const SyclContext& context, const SyclDevice& device) {
  return std::make_unique<SyclQueue>(SyclQueue{core::make_in_order_queue(context.context, device.device)});
}

NativeQueueRecord queue_native(const SyclQueue& queue) {
  const auto n = core::native_queue(queue.queue);
  NativeQueueRecord r;
  r.is_command_list = n.kind == core::NativeQueue::Kind::command_list;
  r.handle = n.handle;
  return r;
}

void queue_wait(const SyclQueue& queue) {
  sycl::queue q = queue.queue; // a copy shares the same queue
  core::queue_wait(q);
}

// ---- USM ----

std::uint8_t* usm_alloc(UsmKind kind, std::size_t size, std::size_t alignment, const SyclDevice& device,
                        const SyclContext& context) {
  return static_cast<std::uint8_t*>(core::usm_alloc(to_core(kind), size, alignment, device.device, context.context));
}

void usm_free(std::uint8_t* ptr, const SyclContext& context) { core::usm_free(ptr, context.context); }

UsmKind pointer_kind(const std::uint8_t* ptr, const SyclContext& context) {
  return static_cast<UsmKind>(static_cast<std::uint8_t>(core::pointer_kind(ptr, context.context)));
}

void queue_memcpy(const SyclQueue& queue, std::uint8_t* dst, const std::uint8_t* src, std::size_t size) {
  sycl::queue q = queue.queue;
  core::queue_memcpy(q, dst, src, size);
}

void queue_memset(const SyclQueue& queue, std::uint8_t* dst, std::uint8_t value, std::size_t size) {
  sycl::queue q = queue.queue;
  core::queue_memset(q, dst, value, size);
}

// ---- external memory (dma-buf) ----

std::uint8_t* alloc_exportable_device_mem(std::size_t size, std::size_t alignment, const SyclDevice& device,
                                          const SyclContext& context) {
  return static_cast<std::uint8_t*>(core::alloc_exportable_device_mem(size, alignment, device.device, context.context));
}

std::uint64_t export_shared_handle(std::uint8_t* ptr, const SyclDevice& device, const SyclContext& context) {
  core::SharedHandle h = core::export_shared_handle(ptr, device.device, context.context);
#ifdef _WIN32
  return reinterpret_cast<std::uintptr_t>(h);
#else
  return static_cast<std::uint64_t>(h);  // an fd, never negative here
#endif
}

void free_exportable_device_mem(std::uint8_t* ptr, const SyclDevice& device, const SyclContext& context) {
  core::free_exportable_device_mem(ptr, device.device, context.context);
}

std::unique_ptr<SyclImported> import_shared_handle(std::uint64_t handle, std::size_t size, const SyclDevice& device,
                                                   const SyclContext& context) {
#ifdef _WIN32
  auto h = reinterpret_cast<core::SharedHandle>(static_cast<std::uintptr_t>(handle));
#else
  if (handle > static_cast<std::uint64_t>(INT32_MAX)) throw std::invalid_argument("import: not a file descriptor");
  auto h = static_cast<core::SharedHandle>(handle);
#endif
  return std::make_unique<SyclImported>(SyclImported{core::import_shared_handle(h, size, device.device, context.context)});
}

std::uint8_t* imported_ptr(const SyclImported& memory) noexcept { return static_cast<std::uint8_t*>(memory.memory.ptr); }

std::size_t imported_size(const SyclImported& memory) noexcept { return memory.memory.size; }

void release_imported(SyclImported& memory, const SyclDevice& device, const SyclContext& context) {
  core::release_imported(memory.memory, device.device, context.context);
}

} // namespace npu_sycl_bridge::rs
