// npu_sycl_bridge: the C++ half of the C++ API (include/npu_sycl_bridge/npu.hpp). It holds the
// program's OpenVINO objects for the Rust half (crates/cpp-api/src/lib.rs) and wraps the Rust
// results in move-only classes; every decision is the Rust crate's.
#include "npu_sycl_bridge/npu.hpp"

#include "npu_sycl_bridge/detail/openvino_binding.hpp"
#include "npu-sycl-bridge-cpp/src/lib.rs.h"

#include <sycl/ext/oneapi/backend/level_zero.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace npu_sycl_bridge {

// ---- the objects the Rust half reaches --------------------------------------------------------

namespace detail {

Releaser::~Releaser() {
  if (!release) return;
  try {
    release();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npu_sycl_bridge: a release callback threw (ignored): %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "npu_sycl_bridge: a release callback threw (ignored)\n");
  }
}

namespace {
ProgramBuffer to_buffer(ProgramMemory m) {
  return ProgramBuffer{reinterpret_cast<std::size_t>(m.data), m.bytes, std::make_unique<Releaser>(std::move(m.release))};
}

rust::Vec<Param> to_params(const ov::AnyMap& map) {
  rust::Vec<Param> out;
  for (const auto& [key, value] : map) out.push_back(Param{rust::String(key), rust::String(value.as<std::string>())});
  return out;
}
}  // namespace

ProgramBuffer allocate(const Allocator& allocator, std::size_t bytes) { return to_buffer(allocator.allocate(bytes)); }

rust::String context_device_name(const OvContext& context) { return context.context.get_device_name(); }

rust::Vec<Param> context_params(const OvContext& context) { return to_params(context.context.get_params()); }

std::unique_ptr<OvTensor> context_create_tensor(const OvContext& context, rust::Str element_type,
                                                rust::Slice<const std::size_t> shape, rust::Str mem_type,
                                                std::size_t mem_handle, bool has_mem_handle, rust::Str tensor_type) {
  // The values as the C API passes them: MEM_HANDLE as a pointer value, the others as strings.
  ov::AnyMap properties{{"MEM_TYPE", std::string(mem_type)}};
  if (has_mem_handle) properties.emplace("MEM_HANDLE", reinterpret_cast<void*>(mem_handle));
  if (!tensor_type.empty()) properties.emplace("TENSOR_TYPE", std::string(tensor_type));
  ov::Shape dims(shape.begin(), shape.end());
  ov::RemoteContext handle = context.context;  // create_tensor is not const; a copy shares the context
  auto t = handle.create_tensor(ov::element::Type(std::string(element_type)), dims, properties);
  return std::make_unique<OvTensor>(OvTensor{std::move(t)});
}

rust::String tensor_element_type(const OvTensor& tensor) { return tensor.tensor.get_element_type().get_type_name(); }

rust::Vec<std::size_t> tensor_shape(const OvTensor& tensor) {
  rust::Vec<std::size_t> out;
  for (auto d : tensor.tensor.get_shape()) out.push_back(d);
  return out;
}

std::size_t tensor_byte_size(const OvTensor& tensor) { return tensor.tensor.get_byte_size(); }

rust::String tensor_device_name(const OvTensor& tensor) { return tensor.tensor.get_device_name(); }

rust::Vec<Param> tensor_params(const OvTensor& tensor) { return to_params(tensor.tensor.get_params()); }

// ---- what the public classes hold -------------------------------------------------------------

struct NpuImpl {
  rust::Box<NpuState> state;
};

struct StrategyImpl {
  rust::Box<StrategyState> state;
};

struct Binding {
  ov::InferRequest request;
  ov::Output<const ov::Node> port;
};

struct TensorImpl {
  rust::Box<TensorState> state;
  std::vector<Binding> bindings;

  TensorImpl(rust::Box<TensorState> s) : state(std::move(s)) {}
  ~TensorImpl() {
    // Detach before the Rust side lets go of the memory: a request keeps its tensors until rebound.
    for (auto& b : bindings) {
      try {
        b.request.wait();
      } catch (const std::exception&) {
        // A failed inference has ended too; what matters is that none is running.
      }
      try {
        b.request.set_tensor(b.port, ov::Tensor(b.port.get_element_type(), b.port.get_shape()));
      } catch (const std::exception& e) {
        std::fprintf(stderr, "npu_sycl_bridge: detaching a shared tensor from a request failed: %s\n", e.what());
      }
    }
  }
};

struct PoolImpl {
  rust::Box<PoolState> state;
};

}  // namespace detail

// ---- errors -----------------------------------------------------------------------------------

Error::Error(ErrorKind kind, SharingPath path, Reason reason, const std::string& message, std::string explanation)
    : std::runtime_error(message), kind_(kind), path_(path), reason_(reason), explanation_(std::move(explanation)) {}

namespace {

// The Rust half recorded the failed call's error for this thread (crates/cpp-api/src/lib.rs).
[[noreturn]] void rethrow(const rust::Error&) {
  const detail::BridgeError e = detail::take_error();
  throw Error(e.kind, e.path, e.reason, std::string(e.message), std::string(e.explanation));
}

// An unsupported path found by this file's own checks: the Rust crate's error for it (its message
// and the reason's one explanation).
[[noreturn]] void unsupported(SharingPath path, Reason reason, const std::string& message) {
  const detail::BridgeError e = detail::unsupported_error(path, reason, message);
  throw Error(e.kind, e.path, e.reason, std::string(e.message), std::string(e.explanation));
}

// An error of this file's own checks (no sharing path involved).
[[noreturn]] void fail(ErrorKind kind, const std::string& message, std::string explanation = "") {
  throw Error(kind, SharingPath::none, Reason::none, message, std::move(explanation));
}

// Runs `f`, turning whatever it throws into npu_sycl_bridge::Error.
template <typename F>
auto call(const char* what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const rust::Error& e) {
    rethrow(e);
  } catch (const Error&) {
    throw;
  } catch (const ov::Exception& e) {
    fail(ErrorKind::openvino, std::string(what) + ": " + e.what());
  } catch (const sycl::exception& e) {
    fail(ErrorKind::sycl, std::string(what) + ": " + e.what());
  } catch (const std::exception& e) {
    fail(ErrorKind::internal, std::string(what) + ": " + e.what());
  }
}

rust::Slice<const std::size_t> dims(const ov::Shape& shape) { return {shape.data(), shape.size()}; }

std::string type_name(const ov::element::Type& type) { return type.get_type_name(); }

detail::ProgramBuffer program_buffer(ProgramMemory memory) { return detail::to_buffer(std::move(memory)); }

ov::Shape static_shape(const ov::Output<const ov::Node>& port) {
  if (port.get_partial_shape().is_dynamic()) {
    fail(ErrorKind::shape, "the port's shape " + port.get_partial_shape().to_string() + " is dynamic",
         "shared memory needs a static shape: reshape the model, or pass the element type and shape");
  }
  return port.get_shape();
}

}  // namespace

namespace {
// The crate's names of every value of E, copied once into NUL-terminated strings.
template <typename E>
const char* name_of(E value, rust::Str (*name)(E)) noexcept {
  static const std::array<std::string, 256> names = [name] {
    std::array<std::string, 256> all;
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = std::string(name(static_cast<E>(i)));
    return all;
  }();
  return names[static_cast<std::uint8_t>(value)].c_str();
}
}  // namespace

const char* to_string(ErrorKind kind) noexcept { return name_of(kind, detail::error_kind_name); }
const char* to_string(SharingPath path) noexcept { return name_of(path, detail::path_name); }
const char* to_string(Reason reason) noexcept { return name_of(reason, detail::reason_name); }
const char* to_string(StrategyKind kind) noexcept { return name_of(kind, detail::strategy_name); }

// ---- Npu --------------------------------------------------------------------------------------

Npu::Npu(const ov::CompiledModel& compiled, const sycl::queue& queue) {
  impl_ = call("npu_sycl_bridge::Npu", [&] {
    ov::RemoteContext context;
    try {
      context = compiled.get_context();
    } catch (const ov::Exception& e) {
      unsupported(SharingPath::npu, Reason::not_the_npu,
                  std::string("the compiled model has no remote context, so it was not compiled for the NPU "
                              "(OpenVINO said: ") + e.what() + ")");
    }
    auto ov = std::make_unique<detail::OvContext>(detail::OvContext{compiled, context});
    const sycl::context sycl_context = queue.get_context();
    const sycl::device device = queue.get_device();
    if (device.get_backend() != sycl::backend::ext_oneapi_level_zero) {
      unsupported(SharingPath::sycl, Reason::no_level_zero_gpu, "the queue's device is not a Level Zero device");
    }
    const auto ze_device = reinterpret_cast<std::size_t>(
        sycl::get_native<sycl::backend::ext_oneapi_level_zero>(device));
    return std::make_unique<detail::NpuImpl>(detail::NpuImpl{
        detail::npu_open(std::move(ov), reinterpret_cast<std::size_t>(&sycl_context), ze_device)});
  });
}

Npu::Npu(Npu&&) noexcept = default;
Npu& Npu::operator=(Npu&&) noexcept = default;
Npu::~Npu() = default;

std::string Npu::describe() const { return std::string(detail::npu_describe(*impl_->state)); }

SharedTensor Npu::import_host(ProgramMemory memory, const ov::element::Type& type, const ov::Shape& shape,
                              TensorType tensor_type) const {
  return call("npu_sycl_bridge::Npu::import_host", [&] {
    auto state = detail::npu_import_host(*impl_->state, program_buffer(std::move(memory)), type_name(type),
                                         dims(shape), tensor_type);
    return SharedTensor(std::make_unique<detail::TensorImpl>(std::move(state)));
  });
}

SharedTensor Npu::import_sycl(ProgramMemory memory, const ov::element::Type& type, const ov::Shape& shape,
                              TensorType tensor_type) const {
  return call("npu_sycl_bridge::Npu::import_sycl", [&] {
    auto state = detail::npu_import_sycl(*impl_->state, program_buffer(std::move(memory)), type_name(type),
                                         dims(shape), tensor_type);
    return SharedTensor(std::make_unique<detail::TensorImpl>(std::move(state)));
  });
}

#ifdef _WIN32
SharedTensor Npu::import_nt_handle(void* handle, const ov::element::Type& type, const ov::Shape& shape,
                                   TensorType tensor_type) const {
  return call("npu_sycl_bridge::Npu::import_nt_handle", [&] {
    auto value = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(handle));
    auto state = detail::npu_import_shared_handle(*impl_->state, value, type_name(type), dims(shape), tensor_type);
    return SharedTensor(std::make_unique<detail::TensorImpl>(std::move(state)));
  });
}
#else
SharedTensor Npu::import_dma_buf(int fd, const ov::element::Type& type, const ov::Shape& shape,
                                 TensorType tensor_type) const {
  return call("npu_sycl_bridge::Npu::import_dma_buf", [&] {
    // A negative fd becomes a value no fd has, which the bridge refuses.
    auto value = static_cast<std::uint64_t>(static_cast<std::int64_t>(fd));
    auto state = detail::npu_import_shared_handle(*impl_->state, value, type_name(type), dims(shape), tensor_type);
    return SharedTensor(std::make_unique<detail::TensorImpl>(std::move(state)));
  });
}
#endif

// ---- Strategy ---------------------------------------------------------------------------------

Strategy Strategy::automatic(const Npu& npu) {
  Strategy s;
  s.impl_ = call("npu_sycl_bridge::Strategy::automatic", [&] {
    return std::make_unique<detail::StrategyImpl>(detail::StrategyImpl{detail::strategy_auto(*npu.impl_->state)});
  });
  return s;
}

Strategy::Strategy(const Npu& npu, StrategyKind kind) {
  impl_ = call("npu_sycl_bridge::Strategy", [&] {
    return std::make_unique<detail::StrategyImpl>(
        detail::StrategyImpl{detail::strategy_new(*npu.impl_->state, kind)});
  });
}

Strategy::Strategy(Strategy&&) noexcept = default;
Strategy& Strategy::operator=(Strategy&&) noexcept = default;
Strategy::~Strategy() = default;

StrategyKind Strategy::kind() const { return detail::strategy_kind(*impl_->state); }
bool Strategy::zero_copy() const { return detail::strategy_zero_copy(*impl_->state); }
std::string Strategy::decision() const { return std::string(detail::strategy_decision(*impl_->state)); }

SharedTensor Strategy::tensor(const ov::element::Type& type, const ov::Shape& shape, TensorType tensor_type) const {
  return call("npu_sycl_bridge::Strategy::tensor", [&] {
    auto state = detail::strategy_tensor(*impl_->state, type_name(type), dims(shape),
                                         tensor_type);
    return SharedTensor(std::make_unique<detail::TensorImpl>(std::move(state)));
  });
}

SharedTensor Strategy::tensor(const ov::Output<const ov::Node>& port, TensorType tensor_type) const {
  return tensor(port.get_element_type(), static_shape(port), tensor_type);
}

// ---- SharedTensor -----------------------------------------------------------------------------

SharedTensor::SharedTensor(std::unique_ptr<detail::TensorImpl> impl) : impl_(std::move(impl)) {}
SharedTensor::SharedTensor(SharedTensor&&) noexcept = default;
SharedTensor& SharedTensor::operator=(SharedTensor&&) noexcept = default;
SharedTensor::~SharedTensor() = default;

const ov::RemoteTensor& SharedTensor::tensor() const { return detail::tensor_remote(*impl_->state).tensor; }

void SharedTensor::bind(ov::InferRequest& request, const ov::Output<const ov::Node>& port) {
  call("npu_sycl_bridge::SharedTensor::bind", [&] {
    // The Rust InferRequest's rules decide: the port's type and static shape, no read-only memory on an output.
    const auto outputs = request.get_compiled_model().outputs();
    const bool writes = std::find(outputs.begin(), outputs.end(), port) != outputs.end();
    const auto& shape = port.get_partial_shape();
    std::vector<std::size_t> dims;
    if (shape.is_static()) dims = shape.to_shape();
    const std::string name = port.get_names().empty() ? std::string() : *port.get_names().begin();
    detail::tensor_check_binding(*impl_->state, name, port.get_element_type().get_type_name(),
                                 rust::Slice<const std::size_t>(dims.data(), dims.size()), shape.is_static(), writes);
    request.set_tensor(port, tensor());
    impl_->bindings.push_back(detail::Binding{request, port});
  });
}

void* SharedTensor::data() const { return reinterpret_cast<void*>(detail::tensor_data(*impl_->state)); }
std::size_t SharedTensor::byte_size() const { return detail::tensor_byte_size_of(*impl_->state); }
bool SharedTensor::has_strategy() const { return detail::tensor_has_sycl(*impl_->state); }

StrategyKind SharedTensor::kind() const {
  return call("npu_sycl_bridge::SharedTensor::kind", [&] { return detail::tensor_kind(*impl_->state); });
}

bool SharedTensor::zero_copy() const { return detail::tensor_zero_copy(*impl_->state); }
bool SharedTensor::read_only_for_npu() const { return detail::tensor_read_only(*impl_->state); }

namespace {
// The program starts inferences on its own ov::InferRequest, which the bridge cannot see starting; so a
// SYCL copy first waits for every request the tensor is bound to (bind), and never overlaps an inference
// that uses it. A failed inference has ended too: its error stays the request's, for the program's wait().
void wait_for_bound_requests(detail::TensorImpl& impl) {
  for (auto& b : impl.bindings) {
    try {
      b.request.wait();
    } catch (const std::exception&) {
    }
  }
}
}  // namespace

void SharedTensor::write(const void* src, std::size_t bytes, std::size_t offset) {
  call("npu_sycl_bridge::SharedTensor::write", [&] {
    wait_for_bound_requests(*impl_);
    detail::tensor_write(*impl_->state, offset,
                         rust::Slice<const std::uint8_t>(static_cast<const std::uint8_t*>(src), bytes));
  });
}

void SharedTensor::read(void* dst, std::size_t bytes, std::size_t offset) const {
  call("npu_sycl_bridge::SharedTensor::read", [&] {
    wait_for_bound_requests(*impl_);
    detail::tensor_read(*impl_->state, offset, rust::Slice<std::uint8_t>(static_cast<std::uint8_t*>(dst), bytes));
  });
}

// ---- Pool -------------------------------------------------------------------------------------

namespace {
rust::Vec<detail::ProgramBuffer> program_buffers(std::vector<ProgramMemory>& memory) {
  rust::Vec<detail::ProgramBuffer> buffers;
  for (auto& m : memory) buffers.push_back(program_buffer(std::move(m)));
  return buffers;
}
}  // namespace

Pool::Pool(const Npu& npu, std::vector<ProgramMemory> sycl_buffers) {
  impl_ = call("npu_sycl_bridge::Pool", [&] {
    return std::make_unique<detail::PoolImpl>(
        detail::PoolImpl{detail::pool_from_sycl(*npu.impl_->state, program_buffers(sycl_buffers))});
  });
}

Pool Pool::of_host_memory(const Npu& npu, std::vector<ProgramMemory> buffers) {
  Pool pool;
  pool.impl_ = call("npu_sycl_bridge::Pool::of_host_memory", [&] {
    return std::make_unique<detail::PoolImpl>(
        detail::PoolImpl{detail::pool_from_host(*npu.impl_->state, program_buffers(buffers))});
  });
  return pool;
}

Pool Pool::with_allocator(const Npu& npu, PoolLimits limits, std::function<ProgramMemory(std::size_t)> allocate) {
  Pool pool;
  pool.impl_ = call("npu_sycl_bridge::Pool::with_allocator", [&] {
    auto allocator = std::make_unique<detail::Allocator>(detail::Allocator{std::move(allocate)});
    return std::make_unique<detail::PoolImpl>(detail::PoolImpl{detail::pool_with_allocator(
        *npu.impl_->state, limits.max_buffers, limits.max_bytes, std::move(allocator))});
  });
  return pool;
}

Pool::Pool(Pool&&) noexcept = default;
Pool& Pool::operator=(Pool&&) noexcept = default;
Pool::~Pool() = default;

SharedTensor Pool::tensor(const ov::element::Type& type, const ov::Shape& shape) {
  return call("npu_sycl_bridge::Pool::tensor", [&] {
    auto state = detail::pool_tensor(*impl_->state, type_name(type), dims(shape));
    return SharedTensor(std::make_unique<detail::TensorImpl>(std::move(state)));
  });
}

SharedTensor Pool::tensor(const ov::Output<const ov::Node>& port) {
  return tensor(port.get_element_type(), static_shape(port));
}

PoolStats Pool::stats() const { return detail::pool_stats(*impl_->state); }

PoolTrimmed Pool::trim() { return detail::pool_trim(*impl_->state); }

}  // namespace npu_sycl_bridge
