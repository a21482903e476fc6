// npu_sycl_bridge: the C++ objects the Rust half of the C++ API reaches through its cxx bridge
// (crates/cpp-api/src/lib.rs). Internal: included by the generated bridge and cpp/npu_api.cpp only.
//
// Every function here may throw (ov::Exception, std::exception); the bridge declares each `Result`,
// so cxx turns the exception into a Rust error.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include <openvino/runtime/compiled_model.hpp>
#include <openvino/runtime/remote_context.hpp>
#include <openvino/runtime/remote_tensor.hpp>

#include "npu_sycl_bridge/npu.hpp"
#include "rust/cxx.h"

namespace npu_sycl_bridge::detail {

struct Param;
struct ProgramBuffer;

/// The program's NPU context, and the compiled model it came from (kept alive with it).
struct OvContext {
  ov::CompiledModel compiled;
  ov::RemoteContext context;
};

/// One remote tensor made by OvContext.
struct OvTensor {
  ov::RemoteTensor tensor;
};

/// The release callback of memory the program handed over: called once, by the destructor.
struct Releaser {
  explicit Releaser(std::function<void()> f) : release(std::move(f)) {}
  Releaser(const Releaser&) = delete;
  Releaser& operator=(const Releaser&) = delete;
  ~Releaser();
  std::function<void()> release;
};

/// The program's allocator of pool buffers.
struct Allocator {
  std::function<ProgramMemory(std::size_t)> allocate;
};

ProgramBuffer allocate(const Allocator& allocator, std::size_t bytes);
rust::String context_device_name(const OvContext& context);
rust::Vec<Param> context_params(const OvContext& context);
std::unique_ptr<OvTensor> context_create_tensor(const OvContext& context, rust::Str element_type,
                                                rust::Slice<const std::size_t> shape, rust::Str mem_type,
                                                std::size_t mem_handle, bool has_mem_handle, rust::Str tensor_type);
rust::String tensor_element_type(const OvTensor& tensor);
rust::Vec<std::size_t> tensor_shape(const OvTensor& tensor);
std::size_t tensor_byte_size(const OvTensor& tensor);
rust::String tensor_device_name(const OvTensor& tensor);
rust::Vec<Param> tensor_params(const OvTensor& tensor);

}  // namespace npu_sycl_bridge::detail
