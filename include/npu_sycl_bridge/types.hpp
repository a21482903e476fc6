// Generated from crates/cpp-api/src/types.rs by cxx (cxx-gen 0.7.177); do not edit: change types.rs and run
// NPU_SYCL_BRIDGE_BLESS=1 cargo test -p npu-sycl-bridge-cpp --test types_header
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdollar-in-identifier-extension"
#endif // __clang__

#if __cplusplus >= 201402L
#define CXX_DEFAULT_VALUE(value) = value
#else
#define CXX_DEFAULT_VALUE(value)
#endif

namespace npu_sycl_bridge {
  enum class ErrorKind : ::std::uint8_t;
  enum class SharingPath : ::std::uint8_t;
  enum class Reason : ::std::uint8_t;
  enum class StrategyKind : ::std::uint8_t;
  enum class TensorType : ::std::uint8_t;
  struct PoolStats;
  struct PoolTrimmed;
}

namespace npu_sycl_bridge {
#ifndef CXXBRIDGE1_ENUM_npu_sycl_bridge$ErrorKind
#define CXXBRIDGE1_ENUM_npu_sycl_bridge$ErrorKind
// What went wrong: the Rust crate's ErrorKind, one to one (internal: a bug in the bridge).
enum class ErrorKind : ::std::uint8_t {
  // An OpenVINO call failed (the message carries OpenVINO's).
  openvino = 0,
  // A Level Zero call failed.
  level_zero = 1,
  // A pointer or size is not a multiple of what the path needs (CPU_VA: 4096).
  alignment = 2,
  // A buffer holds fewer bytes than the tensor needs.
  size = 3,
  // A shape does not match (or is dynamic where a static one is needed).
  shape = 4,
  // An element type does not match.
  element_type = 5,
  // A sharing path that cannot work here: Error::path() and Error::reason() say which and why.
  unsupported = 6,
  // The SYCL runtime threw.
  sycl = 7,
  // A native runtime could not be found or loaded.
  library = 8,
  // An invalid argument or call.
  invalid_argument = 9,
  // An I/O operation failed.
  io = 10,
  // A pool has nothing free and may not grow.
  exhausted = 11,
  // A bug in the bridge (a panic caught at the boundary).
  internal = 12,
  // A tensor in use: a running inference, a data view or a SYCL access holds it (retry later).
  busy = 13,
};
#endif // CXXBRIDGE1_ENUM_npu_sycl_bridge$ErrorKind

#ifndef CXXBRIDGE1_ENUM_npu_sycl_bridge$SharingPath
#define CXXBRIDGE1_ENUM_npu_sycl_bridge$SharingPath
// The sharing path an ErrorKind::unsupported error is about (the Rust crate's Path).
enum class SharingPath : ::std::uint8_t {
  // Not an unsupported error.
  none = 0,
  // A SYCL context over the NPU's Level Zero context (the forum snippet).
  card_path = 1,
  // A dma-buf fd imported by the NPU (SHARED_BUF).
  dma_buf = 2,
  // Host memory imported by the NPU (CPU_VA).
  cpu_va = 3,
  // Page-aligned process memory shared by the NPU and the SYCL device.
  shared_system = 4,
  // NPU memory reached by SYCL copies.
  npu_to_sycl = 5,
  // NPU memory used by SYCL in place.
  npu_to_sycl_zero_copy = 6,
  // A host view of a remote tensor's memory.
  host_view = 7,
  // Strategy::automatic: no strategy works, or none serves the tensor.
  automatic = 8,
  // The NPU itself (no NPU plugin, driver or context).
  npu = 9,
  // SYCL itself (no Level Zero GPU device).
  sycl = 10,
  // A Level Zero device copy.
  device_copy = 11,
  // An NT handle imported by the NPU (SHARED_BUF on Windows).
  nt_handle = 12,
};
#endif // CXXBRIDGE1_ENUM_npu_sycl_bridge$SharingPath

#ifndef CXXBRIDGE1_ENUM_npu_sycl_bridge$Reason
#define CXXBRIDGE1_ENUM_npu_sycl_bridge$Reason
// Why a path is unsupported (the Rust crate's Reason; Error::explanation() is its long text).
enum class Reason : ::std::uint8_t {
  // Not an unsupported error.
  none = 0,
  // Not the NPU's: a model compiled for another device, no NPU, an unusable NPU context.
  not_the_npu = 1,
  // The driver does not import dma-bufs.
  no_dma_buf_import = 2,
  // The memory cannot be exported as a dma-buf.
  not_exportable = 3,
  // The NPU imports no system memory (NPU 37xx, or a kernel without userptr).
  no_system_memory_import = 4,
  // The NPU cannot pin the GPU driver's host or shared USM.
  gpu_usm_not_pinnable = 5,
  // Device memory has no CPU address.
  no_host_address = 6,
  // An allocation of the NPU plugin's own context that the plugin did not make.
  plugin_context_memory = 7,
  // A pointer inside, not at the start of, an allocation of the NPU's context.
  inside_npu_allocation = 8,
  // The memory stays its exporter's: no host view.
  exporter_owns_memory = 9,
  // No SYCL platform wraps the context's Level Zero driver (the card path).
  no_sycl_platform = 10,
  // SYCL lists no usable Level Zero GPU.
  no_level_zero_gpu = 11,
  // NPU plugin memory is not SYCL memory.
  not_sycl_memory = 12,
  // The SYCL device does not reach process memory directly.
  no_shared_system_usm = 13,
  // The NPU driver could not allocate or export memory for SYCL.
  npu_export_failed = 14,
  // The GPU driver refused the NPU's dma-buf.
  sycl_import_refused = 15,
  // A strategy's probe saw different bytes on the two sides.
  probe_mismatch = 16,
  // The device has no queue group that can copy.
  no_copy_queue = 17,
  // No strategy works here, or none serves the tensor.
  no_strategy = 18,
  // The driver does not import NT handles (Windows).
  no_nt_handle_import = 19,
};
#endif // CXXBRIDGE1_ENUM_npu_sycl_bridge$Reason

#ifndef CXXBRIDGE1_ENUM_npu_sycl_bridge$StrategyKind
#define CXXBRIDGE1_ENUM_npu_sycl_bridge$StrategyKind
// The ways of sharing memory between SYCL and the NPU (the Rust crate's StrategyKind).
enum class StrategyKind : ::std::uint8_t {
  // A SYCL context over the NPU's Level Zero context (the forum snippet): never works on stock DPC++.
  card_path = 0,
  // SYCL exportable device memory, imported by the NPU as a dma-buf.
  dma_buf = 1,
  // SYCL host USM imported by the NPU as CPU_VA.
  cpu_va = 2,
  // Page-aligned process memory: the NPU imports it, SYCL uses it in place where the GPU has
  // shared-system USM and copies otherwise.
  shared_system = 3,
  // NPU memory the crate allocates exportable, imported by the plugin and by SYCL as dma-bufs.
  npu_export = 4,
  // The NPU plugin's memory, reached by SYCL copies (not zero-copy).
  npu_to_sycl = 5,
};
#endif // CXXBRIDGE1_ENUM_npu_sycl_bridge$StrategyKind

#ifndef CXXBRIDGE1_ENUM_npu_sycl_bridge$TensorType
#define CXXBRIDGE1_ENUM_npu_sycl_bridge$TensorType
// OpenVINO's TENSOR_TYPE: input memory is imported read-only for the NPU (CPU_VA) and may be
// write-combined when the plugin allocates it; binded is read-write.
enum class TensorType : ::std::uint8_t {
  input = 0,
  output = 1,
  binded = 2,
};
#endif // CXXBRIDGE1_ENUM_npu_sycl_bridge$TensorType

#ifndef CXXBRIDGE1_STRUCT_npu_sycl_bridge$PoolStats
#define CXXBRIDGE1_STRUCT_npu_sycl_bridge$PoolStats
// What a pool holds and has done.
struct PoolStats final {
  // Buffers held.
  ::std::size_t buffers CXX_DEFAULT_VALUE(0);
  // Bytes held.
  ::std::size_t bytes CXX_DEFAULT_VALUE(0);
  // Buffers the allocator made.
  ::std::uint64_t allocations CXX_DEFAULT_VALUE(0);
  // NPU imports made.
  ::std::uint64_t imports CXX_DEFAULT_VALUE(0);
  // Tensors handed out without an import.
  ::std::uint64_t hits CXX_DEFAULT_VALUE(0);
  // Tensors handed out after an import.
  ::std::uint64_t misses CXX_DEFAULT_VALUE(0);
  // Buffers whose tensor is in use now.
  ::std::size_t in_use CXX_DEFAULT_VALUE(0);

  using IsRelocatable = ::std::true_type;
};
#endif // CXXBRIDGE1_STRUCT_npu_sycl_bridge$PoolStats

#ifndef CXXBRIDGE1_STRUCT_npu_sycl_bridge$PoolTrimmed
#define CXXBRIDGE1_STRUCT_npu_sycl_bridge$PoolTrimmed
// What a pool's trim() released.
struct PoolTrimmed final {
  // Imports dropped.
  ::std::size_t imports CXX_DEFAULT_VALUE(0);
  // Buffers released.
  ::std::size_t buffers CXX_DEFAULT_VALUE(0);
  // Their bytes.
  ::std::size_t bytes CXX_DEFAULT_VALUE(0);

  using IsRelocatable = ::std::true_type;
};
#endif // CXXBRIDGE1_STRUCT_npu_sycl_bridge$PoolTrimmed
} // namespace npu_sycl_bridge

#ifdef __clang__
#pragma clang diagnostic pop
#endif // __clang__
