// npu_sycl_bridge: the C++ API. SYCL memory shared with OpenVINO's NPU plugin without copies, for
// programs that hold an ov::CompiledModel (compiled for "NPU") and a sycl::queue on the iGPU.
//
//   npu_sycl_bridge::Npu npu(compiled, queue);
//   auto strategy = npu_sycl_bridge::Strategy::automatic(npu);   // the first way that works here
//   auto input = strategy.tensor(compiled.input());             // SYCL memory the NPU reads in place
//   auto output = strategy.tensor(compiled.output());
//   input.bind(request, compiled.input());
//   output.bind(request, compiled.output());
//   input.write(data.data(), data.size() * sizeof(float));       // or a SYCL kernel on input.data()
//   request.infer();
//   output.read(result.data(), result.size() * sizeof(float));
//
// One implementation: the strategies, Auto's decision, the import checks, the pool and the lifetime
// rules are the Rust crate's (npu-sycl-bridge), which this API calls; nothing of them is written again
// here. Verified on the virtual Level Zero platform only, not on real hardware.
//
// Ownership (the same rules as the Rust crate's):
// - Every class is move-only and owns what it made. A SharedTensor owns its memory (SYCL memory the
//   strategy allocated, or memory the program handed over with its release callback), the fds the
//   sharing needs, and the NPU import; the memory is released only after OpenVINO freed the remote
//   tensor and every request that used it let go of it.
// - A SharedTensor bound with bind() is detached from each such request when it is destroyed: the
//   destructor waits for the request and gives the port a new host tensor, so the NPU never reads
//   released memory. A tensor bound by hand (request.set_tensor(port, t.tensor())) must outlive
//   that binding: destroy or rebind the request first.
// - Npu, Strategy, Pool and SharedTensor keep alive what they need (the compiled model, the NPU's
//   context, the SYCL context), so they can be destroyed in any order.
// - Host memory and SYCL memory handed to import() or a Pool come with a release callback: it is
//   called exactly once, on any thread, when nothing uses the memory any more (also when the import
//   fails). A dma-buf fd given to import_dma_buf() (an NT handle to import_nt_handle() on Windows) is
//   taken: the bridge closes it, on error too.
//
// Threads: Npu, Strategy and Pool may be used from several threads at once (the Rust types behind them
// are Send + Sync; a pool hands out each buffer once). A SharedTensor is used by one thread at a time.
//
// Errors: every call that can fail throws npu_sycl_bridge::Error, whose kind() is the Rust ErrorKind
// and, for ErrorKind::unsupported, whose path() names the sharing path and reason() why;
// explanation() says why and what works instead. No other exception leaves this API, and no call
// aborts. The enums and the pool's records are in types.hpp, generated from the Rust definitions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <openvino/runtime/compiled_model.hpp>
#include <openvino/runtime/infer_request.hpp>
#include <openvino/runtime/remote_tensor.hpp>
#include <sycl/sycl.hpp>

#include "npu_sycl_bridge/types.hpp"

namespace npu_sycl_bridge {

// ErrorKind, SharingPath, Reason, StrategyKind, TensorType, PoolStats and PoolTrimmed are in
// types.hpp, generated from the Rust definitions (crates/cpp-api/src/types.rs).

/// The one exception type of this API.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, SharingPath path, Reason reason, const std::string& message, std::string explanation);
  ErrorKind kind() const noexcept { return kind_; }
  /// SharingPath::none unless kind() is ErrorKind::unsupported.
  SharingPath path() const noexcept { return path_; }
  /// Why the path is unsupported (Reason::none unless kind() is ErrorKind::unsupported).
  Reason reason() const noexcept { return reason_; }
  /// Why, and what to use instead (may be empty).
  const std::string& explanation() const noexcept { return explanation_; }

 private:
  ErrorKind kind_;
  SharingPath path_;
  Reason reason_;
  std::string explanation_;
};

/// The names of the values, as the Rust crate spells them ("unsupported", "dma-buf",
/// "no_sycl_platform", "NPU→SYCL copy").
const char* to_string(ErrorKind kind) noexcept;
const char* to_string(SharingPath path) noexcept;
const char* to_string(Reason reason) noexcept;
const char* to_string(StrategyKind kind) noexcept;

/// Memory the program owns: `bytes` at `data`. `release` is called once, on any thread, when the
/// NPU, every tensor over it and every request are done with it (or when the import fails); an
/// empty function means the program frees the memory itself, after every tensor over it is gone.
struct ProgramMemory {
  void* data = nullptr;
  std::size_t bytes = 0;
  std::function<void()> release;
};

namespace detail {
struct NpuImpl;
struct StrategyImpl;
struct TensorImpl;
struct PoolImpl;
}  // namespace detail

class SharedTensor;

/// The NPU context of a compiled model, with the program's SYCL queue (its context and device: the
/// iGPU's, on Level Zero). Throws ErrorKind::unsupported (SharingPath::npu) when the model was not
/// compiled for the NPU, and (SharingPath::sycl) when the queue is not on a Level Zero device.
class Npu {
 public:
  Npu(const ov::CompiledModel& compiled, const sycl::queue& queue);
  Npu(Npu&&) noexcept;
  Npu& operator=(Npu&&) noexcept;
  ~Npu();

  /// The NPU and its driver's abilities, in one line.
  std::string describe() const;

  /// Bring your own host memory: page-aligned (address and tensor size multiples of 4096) process
  /// memory, imported by the NPU as CPU_VA, zero-copy. No SYCL side: data() is `memory.data`.
  SharedTensor import_host(ProgramMemory memory, const ov::element::Type& type, const ov::Shape& shape,
                           TensorType tensor_type = TensorType::binded) const;
  /// Bring your own SYCL memory: exportable device memory the program allocated in the queue's context
  /// (npu_sycl_bridge::alloc_exportable_device_mem of <npu_sycl_bridge/sycl_core.hpp>, or DPC++'s
  /// sycl::ext::oneapi::experimental::alloc_exportable_device_mem with dma_buf, which needs
  /// <sycl/ext/oneapi/memory_export.hpp>), imported by the NPU as a dma-buf, zero-copy; SYCL reaches it
  /// at data(). Host or shared USM, or plain memory, is ErrorKind::invalid_argument (use import_host for
  /// page-aligned host memory); a buffer smaller than the tensor is ErrorKind::size. The release
  /// callback runs once either way.
  SharedTensor import_sycl(ProgramMemory memory, const ov::element::Type& type, const ov::Shape& shape,
                           TensorType tensor_type = TensorType::binded) const;
#ifdef _WIN32
  /// Bring your own NT handle to shareable GPU memory (Windows): the handle is taken (closed by the
  /// bridge, on error too); the memory must hold at least the tensor's bytes. No SYCL side.
  SharedTensor import_nt_handle(void* handle, const ov::element::Type& type, const ov::Shape& shape,
                                TensorType tensor_type = TensorType::binded) const;
#else
  /// Bring your own dma-buf: the fd is taken (closed by the bridge, on error too). No SYCL side.
  SharedTensor import_dma_buf(int fd, const ov::element::Type& type, const ov::Shape& shape,
                              TensorType tensor_type = TensorType::binded) const;
#endif

 private:
  friend class Strategy;
  friend class Pool;
  std::unique_ptr<detail::NpuImpl> impl_;
};

/// A way of sharing, checked against the drivers when it is made.
class Strategy {
 public:
  /// Tries the strategies in Auto's order (dma-buf, CPU_VA, shared system, NPU→SYCL zero-copy,
  /// NPU→SYCL copy) and keeps the first that works; decision() says what each attempt gave. A
  /// tensor that strategy cannot serve (CPU_VA takes whole pages only) comes from the next one in
  /// the order that can: SharedTensor::kind() says which.
  static Strategy automatic(const Npu& npu);
  /// One strategy; throws ErrorKind::unsupported with the reason where the drivers cannot do it.
  Strategy(const Npu& npu, StrategyKind kind);
  Strategy(Strategy&&) noexcept;
  Strategy& operator=(Strategy&&) noexcept;
  ~Strategy();

  StrategyKind kind() const;
  /// Whether SYCL and the NPU use the same bytes with this strategy here.
  bool zero_copy() const;
  /// Auto's report (empty for a strategy made by kind).
  std::string decision() const;

  /// A new shared tensor (SYCL memory, page-aligned, with the NPU's remote tensor over it).
  SharedTensor tensor(const ov::element::Type& type, const ov::Shape& shape,
                      TensorType tensor_type = TensorType::binded) const;
  /// A shared tensor for a port of the compiled model (its element type and static shape).
  SharedTensor tensor(const ov::Output<const ov::Node>& port, TensorType tensor_type = TensorType::binded) const;

 private:
  Strategy() = default;
  std::unique_ptr<detail::StrategyImpl> impl_;
};

/// Memory shared by SYCL and the NPU: the remote tensor to bind, and the SYCL pointer.
class SharedTensor {
 public:
  SharedTensor(SharedTensor&&) noexcept;
  SharedTensor& operator=(SharedTensor&&) noexcept;
  /// Detaches the tensor from the requests it was bound to with bind(), then releases it.
  ~SharedTensor();

  /// The NPU remote tensor. Binding it by hand makes the caller keep this object alive until the
  /// request is rebound or destroyed; prefer bind().
  const ov::RemoteTensor& tensor() const;
  /// Binds the tensor to `port` of `request`, and remembers the request so that destroying this
  /// object detaches it. The Rust API's binding rules hold: ErrorKind::element_type / shape for a port
  /// of another type or static shape, ErrorKind::invalid_argument for a read-only_for_npu() tensor on an
  /// output.
  void bind(ov::InferRequest& request, const ov::Output<const ov::Node>& port);
  /// The memory SYCL kernels and copies use (USM device memory of the queue's context for dma-buf and
  /// NPU export; host memory for CPU_VA and shared system; the program's pointer for imports; null for
  /// an imported dma-buf).
  void* data() const;
  std::size_t byte_size() const;
  /// Whether it has a SYCL side: true for strategies' tensors and import_sycl (kind() dma_buf),
  /// false for import_host and import_dma_buf / import_nt_handle.
  bool has_strategy() const;
  /// The strategy that made it; throws ErrorKind::invalid_argument when has_strategy() is false.
  StrategyKind kind() const;
  bool zero_copy() const;
  /// A CPU_VA import made with TensorType::input: the NPU may only read it.
  bool read_only_for_npu() const;

  /// SYCL copies into / out of the tensor, waited for. Each first waits for the inferences of the requests
  /// the tensor is bound to (bind), so a copy never overlaps an inference that uses it (the Rust API, which
  /// sees its own requests start, refuses with ErrorKind::busy instead). ErrorKind::invalid_argument for
  /// tensors without a SYCL side.
  void write(const void* src, std::size_t bytes, std::size_t offset = 0);
  void read(void* dst, std::size_t bytes, std::size_t offset = 0) const;

 private:
  friend class Npu;
  friend class Strategy;
  friend class Pool;
  explicit SharedTensor(std::unique_ptr<detail::TensorImpl> impl);
  std::unique_ptr<detail::TensorImpl> impl_;
};

/// Bounds of a pool that allocates (Pool::with_allocator).
struct PoolLimits {
  std::size_t max_buffers = 16;
  std::size_t max_bytes = std::size_t(1) << 30;
};

/// The program's own buffers, each imported by the NPU once and handed out again: a tensor comes back
/// to the pool when its SharedTensor is destroyed (after it was detached from its requests). A pool
/// hands out a tensor only when nothing but the pool holds it.
class Pool {
 public:
  /// SYCL buffers: exportable device memory of the queue's context (shared tensors with a SYCL side).
  Pool(const Npu& npu, std::vector<ProgramMemory> sycl_buffers);
  /// Page-aligned process memory, imported as CPU_VA (NPU 40xx+ with the kernel's userptr import;
  /// elsewhere taking a tensor throws ErrorKind::unsupported). Tensors have no SYCL side: data() is the
  /// buffer's address, which the program reads and writes itself.
  static Pool of_host_memory(const Npu& npu, std::vector<ProgramMemory> buffers);
  /// SYCL buffers the pool asks `allocate` for (exportable device memory of the queue's context, at
  /// least the bytes asked, which are whole pages), within `limits`, when no free buffer fits. The
  /// allocator is called on the thread that takes a tensor, never concurrently; an exception it throws
  /// becomes ErrorKind::invalid_argument.
  static Pool with_allocator(const Npu& npu, PoolLimits limits, std::function<ProgramMemory(std::size_t)> allocate);
  Pool(Pool&&) noexcept;
  Pool& operator=(Pool&&) noexcept;
  ~Pool();

  /// A tensor over a free buffer large enough; throws ErrorKind::exhausted when every one is in use.
  SharedTensor tensor(const ov::element::Type& type, const ov::Shape& shape);
  SharedTensor tensor(const ov::Output<const ov::Node>& port);
  PoolStats stats() const;
  /// Releases what no tensor uses: the imports of free buffers, and the free buffers the allocator made (the
  /// program's own buffers stay). Returns what it released.
  PoolTrimmed trim();

 private:
  Pool() = default;
  std::unique_ptr<detail::PoolImpl> impl_;
};

}  // namespace npu_sycl_bridge
