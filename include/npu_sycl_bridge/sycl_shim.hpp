// npu_sycl_bridge: the cxx adapter over the pure C++ core (sycl_core.hpp). Used only by the Rust build
// (src/sycl/ffi.rs); plain C++ users include sycl_core.hpp instead.
//
// Every function that can throw is declared `Result` in the bridge, so cxx turns the exception into a
// Rust error with its what() text. imported_ptr / imported_size cannot throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "npu_sycl_bridge/sycl_core.hpp"
#include "rust/cxx.h"

namespace npu_sycl_bridge::rs {

// Shared types, defined by the generated bridge header.
enum class DeviceType : std::uint8_t;
enum class UsmKind : std::uint8_t;
enum class Ownership : std::uint8_t;
struct PlatformRecord;
struct DeviceRecord;
struct DeviceLocation;
struct DeviceLookup;
struct PlatformLookup;
struct NativeQueueRecord;

/// Opaque to Rust: one sycl::device.
struct SyclDevice {
  sycl::device device;
};
/// Opaque to Rust: one sycl::context.
struct SyclContext {
  sycl::context context;
};
/// Opaque to Rust: one in-order sycl::queue.
struct SyclQueue {
  sycl::queue queue;
};
/// Opaque to Rust: one imported dma-buf mapping.
struct SyclImported {
  ImportedLinearMemory memory;
};

// ---- platforms and devices ----
rust::Vec<PlatformRecord> list_platforms();
rust::Vec<DeviceRecord> list_devices();
std::unique_ptr<SyclDevice> device_at(DeviceLocation location);
DeviceLookup find_device_by_native(std::size_t ze_device);
PlatformLookup find_platform_by_native_driver(std::size_t ze_driver);

// ---- contexts and queues ----
std::unique_ptr<SyclContext> make_level_zero_context(std::size_t ze_context, rust::Slice<const DeviceLocation> devices,
                                                     Ownership ownership);
std::unique_ptr<SyclContext> make_device_context(const SyclDevice& device);
std::size_t context_native(const SyclContext& context);
std::size_t context_device_count(const SyclContext& context);
std::unique_ptr<SyclContext> adopt_context(std::size_t address);
rust::Vec<std::size_t> context_native_devices(const SyclContext& context);
std::unique_ptr<SyclQueue> make_in_order_queue(const SyclContext& context, const SyclDevice& device);
NativeQueueRecord queue_native(const SyclQueue& queue);
void queue_wait(const SyclQueue& queue);

// ---- USM ----
std::uint8_t* usm_alloc(UsmKind kind, std::size_t size, std::size_t alignment, const SyclDevice& device,
                        const SyclContext& context);
void usm_free(std::uint8_t* ptr, const SyclContext& context);
UsmKind pointer_kind(const std::uint8_t* ptr, const SyclContext& context);
void queue_memcpy(const SyclQueue& queue, std::uint8_t* dst, const std::uint8_t* src, std::size_t size);
void queue_memset(const SyclQueue& queue, std::uint8_t* dst, std::uint8_t value, std::size_t size);

// ---- external memory (a dma-buf fd on Linux, an NT handle on Windows, as its value) ----
std::uint8_t* alloc_exportable_device_mem(std::size_t size, std::size_t alignment, const SyclDevice& device,
                                          const SyclContext& context);
std::uint64_t export_shared_handle(std::uint8_t* ptr, const SyclDevice& device, const SyclContext& context);
void free_exportable_device_mem(std::uint8_t* ptr, const SyclDevice& device, const SyclContext& context);
std::unique_ptr<SyclImported> import_shared_handle(std::uint64_t handle, std::size_t size, const SyclDevice& device,
                                                   const SyclContext& context);
std::uint8_t* imported_ptr(const SyclImported& memory) noexcept;
std::size_t imported_size(const SyclImported& memory) noexcept;
void release_imported(SyclImported& memory, const SyclDevice& device, const SyclContext& context);

} // namespace npu_sycl_bridge::rs
