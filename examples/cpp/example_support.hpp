// What the C++ examples and tests share and is not the bridge's business: a model built in code, the
// CPU plugin's answer for it, the Level Zero GPU's queue, and the virtual platform's copy counters.
#pragma once

#include <openvino/op/ops.hpp>
#include <openvino/openvino.hpp>
#include <sycl/sycl.hpp>

#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace example {

// y = x * 2 + 0.5 over `elements` f32 values: a model the NPU reads and writes in one pass.
inline std::shared_ptr<ov::Model> scale_bias_model(std::size_t elements) {
  auto x = std::make_shared<ov::op::v0::Parameter>(ov::element::f32, ov::Shape{1, elements});
  x->output(0).set_names({"x"});
  auto scale = ov::op::v0::Constant::create(ov::element::f32, ov::Shape{1}, {2.0f});
  auto bias = ov::op::v0::Constant::create(ov::element::f32, ov::Shape{1}, {0.5f});
  auto y = std::make_shared<ov::op::v1::Add>(std::make_shared<ov::op::v1::Multiply>(x, scale), bias);
  y->output(0).set_names({"y"});
  return std::make_shared<ov::Model>(ov::ResultVector{std::make_shared<ov::op::v0::Result>(y)},
                                     ov::ParameterVector{x}, "scale_bias");
}

inline std::vector<float> sample_input(std::size_t elements, int seed = 0) {
  std::vector<float> v(elements);
  for (std::size_t i = 0; i < elements; ++i) v[i] = static_cast<float>((i + seed) % 97) * 0.25f - 3.0f;
  return v;
}

// The CPU plugin's outputs: the reference every NPU output is checked against (compiled once).
class CpuReference {
 public:
  CpuReference(ov::Core& core, const std::shared_ptr<ov::Model>& model)
      : request_(core.compile_model(model, "CPU").create_infer_request()) {}

  std::vector<float> operator()(std::vector<float> input) {
    request_.set_input_tensor(ov::Tensor(ov::element::f32, ov::Shape{1, input.size()}, input.data()));
    request_.infer();
    const float* y = request_.get_output_tensor().data<const float>();
    return std::vector<float>(y, y + input.size());
  }

 private:
  ov::InferRequest request_;
};

inline std::size_t mismatches(const std::vector<float>& got, const std::vector<float>& want) {
  std::size_t n = got.size() == want.size() ? 0 : 1;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) n += std::fabs(got[i] - want[i]) > 1e-5f;
  return n;
}

// An in-order queue on the first Level Zero GPU (the iGPU).
inline sycl::queue level_zero_gpu_queue() {
  auto pick = [](const sycl::device& d) {
    return d.is_gpu() && d.get_backend() == sycl::backend::ext_oneapi_level_zero ? 1 : -1;
  };
  return sycl::queue(pick, sycl::property::queue::in_order());
}

// A counter of the virtual Level Zero platform (vl0_counter), when it is the loader in this process.
inline std::optional<std::uint64_t> virtual_counter(const char* name) {
  using counter_fn = int (*)(const char*, std::uint64_t*);
  void* loader = dlopen("libze_loader.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!loader) return std::nullopt;
  auto fn = reinterpret_cast<counter_fn>(dlsym(loader, "vl0_counter"));
  dlclose(loader);  // drops only the reference RTLD_NOLOAD added
  std::uint64_t v = 0;
  if (!fn || fn(name, &v) != 0) return std::nullopt;
  return v;
}

// Bytes the virtual GPU and NPU copied so far (absent on real hardware).
inline std::optional<std::uint64_t> device_bytes_copied() {
  auto gpu = virtual_counter("gpu.bytes_copied");
  auto npu = virtual_counter("npu.bytes_copied");
  if (!gpu || !npu) return std::nullopt;
  return *gpu + *npu;
}

}  // namespace example
