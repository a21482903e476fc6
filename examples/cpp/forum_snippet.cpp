// The forum snippet, done right, in C++, on the bridge's C++ API (include/npu_sycl_bridge/npu.hpp).
//
// The snippet developers post: take the NPU's Level Zero context from a compiled model, build a SYCL
// context on it with ownership::keep, malloc_shared into it and hand that to the NPU. It cannot work on
// stock DPC++: the NPU's Level Zero driver is never a SYCL platform, and a SYCL context of one driver's
// context with another driver's devices is invalid. The bridge says so with a typed error, then Auto
// shares memory the way that works on this machine, with no copy, and the output is checked against
// OpenVINO's CPU plugin.
//
// Build: see CMakeLists.txt. Run on the virtual platform: LD_LIBRARY_PATH=target/virtual-l0 ./forum_snippet
#include <npu_sycl_bridge/npu.hpp>

#include "example_support.hpp"

#include <cstdio>

namespace nsb = npu_sycl_bridge;

int main() try {
  constexpr std::size_t kElements = 1024;
  ov::Core core;
  auto model = example::scale_bias_model(kElements);
  ov::CompiledModel compiled = core.compile_model(model, "NPU");
  sycl::queue queue = example::level_zero_gpu_queue();
  const std::vector<float> x = example::sample_input(kElements);
  std::vector<float> y(kElements);

  nsb::Npu npu(compiled, queue);
  std::printf("%s\n", npu.describe().c_str());
  try {
    nsb::Strategy card(npu, nsb::StrategyKind::card_path);  // the snippet's route
    std::printf("card path: works here (a SYCL platform lists the NPU's driver: not stock DPC++)\n");
  } catch (const nsb::Error& e) {
    std::printf("card path: %s error on the %s path (%s): %s\n  why: %s\n", nsb::to_string(e.kind()),
                nsb::to_string(e.path()), nsb::to_string(e.reason()), e.what(), e.explanation().c_str());
  }

  // ---- the zero-copy part: share, bind, infer, read back ----
  auto strategy = nsb::Strategy::automatic(npu);
  auto input = strategy.tensor(compiled.input(), nsb::TensorType::input);
  auto output = strategy.tensor(compiled.output(), nsb::TensorType::output);
  auto request = compiled.create_infer_request();
  input.bind(request, compiled.input());
  output.bind(request, compiled.output());
  input.write(x.data(), input.byte_size());  // or a SYCL kernel writing input.data()
  const auto copied_before = example::device_bytes_copied();  // measurement, not part of the program
  request.infer();
  const auto copied_after = example::device_bytes_copied();  // measurement, not part of the program
  output.read(y.data(), output.byte_size());
  // ---- 9 lines of the program ----

  std::printf("strategy: %s (zero-copy: %s)\n%s\n", nsb::to_string(strategy.kind()), strategy.zero_copy() ? "yes" : "no",
              strategy.decision().c_str());
  const std::size_t bad = example::mismatches(y, example::CpuReference(core, model)(x));
  if (bad != 0) {
    std::printf("%zu of %zu outputs differ from the CPU plugin\n", bad, kElements);
    return 1;
  }
  std::printf("output equals the CPU plugin (%zu values)\n", kElements);
  if (copied_before && copied_after) {
    const auto copied = *copied_after - *copied_before;
    std::printf("zero-copy: the device copied %llu bytes during inference\n", static_cast<unsigned long long>(copied));
    if (copied != 0 && strategy.zero_copy()) return 1;
  }
  return 0;
} catch (const npu_sycl_bridge::Error& e) {
  std::fprintf(stderr, "forum_snippet: %s error: %s\n%s\n", npu_sycl_bridge::to_string(e.kind()), e.what(),
               e.explanation().c_str());
  return 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "forum_snippet: error: %s\n", e.what());
  return 1;
}
