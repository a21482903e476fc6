// A downstream program built against the installed package only: Auto, the pool and the program's own
// SYCL memory, each sharing with the NPU without a copy during inference (checked with the virtual
// platform's counter when it is the Level Zero loader).
#include <npu_sycl_bridge/npu.hpp>
#include <npu_sycl_bridge/sycl_core.hpp>

#include <openvino/op/ops.hpp>
#include <openvino/runtime/core.hpp>

#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace nsb = npu_sycl_bridge;

namespace {

constexpr std::size_t kN = 1024;

std::uint64_t copied() {
  using counter_fn = int (*)(const char*, std::uint64_t*);
  void* loader = dlopen("libze_loader.so.1", RTLD_LAZY | RTLD_NOLOAD);
  auto fn = loader ? reinterpret_cast<counter_fn>(dlsym(loader, "vl0_counter")) : nullptr;
  if (loader) dlclose(loader);
  std::uint64_t gpu = 0, npu = 0;
  if (fn) fn("gpu.bytes_copied", &gpu), fn("npu.bytes_copied", &npu);
  return gpu + npu;
}

// y = 3x - 1, checked against the formula.
bool run(ov::CompiledModel& compiled, nsb::SharedTensor& in, nsb::SharedTensor& out, const char* what) {
  std::vector<float> x(kN), y(kN);
  for (std::size_t i = 0; i < kN; ++i) x[i] = static_cast<float>(i % 13);
  auto request = compiled.create_infer_request();
  in.bind(request, compiled.input());
  out.bind(request, compiled.output());
  in.write(x.data(), in.byte_size());
  const auto before = copied();
  request.infer();
  const auto during = copied() - before;
  out.read(y.data(), out.byte_size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < kN; ++i) wrong += std::fabs(y[i] - (3 * x[i] - 1)) > 1e-5f;
  std::printf("%s: %zu wrong values, %llu bytes copied during inference\n", what, wrong,
              static_cast<unsigned long long>(during));
  return wrong == 0 && during == 0;
}

}  // namespace

// Every file this process mapped that lies under one of `dirs`: with `--not-from <dir>`, a runtime of
// that install must not be loaded (the consumer is meant to run on the user's own installs only).
std::vector<std::string> mapped_under(const std::vector<std::string>& dirs) {
  std::vector<std::string> hits;
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    for (const auto& d : dirs) {
      if (path.rfind(d + "/", 0) == 0 && (hits.empty() || hits.back() != path)) hits.push_back(path);
    }
  }
  return hits;
}

int main(int argc, char** argv) {
  std::vector<std::string> not_from;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--not-from") not_from.emplace_back(argv[i + 1]);
  }
  try {
    auto x = std::make_shared<ov::op::v0::Parameter>(ov::element::f32, ov::Shape{1, kN});
    auto y = std::make_shared<ov::op::v1::Subtract>(
        std::make_shared<ov::op::v1::Multiply>(x, ov::op::v0::Constant::create(ov::element::f32, {1}, {3.0f})),
        ov::op::v0::Constant::create(ov::element::f32, {1}, {1.0f}));
    auto model = std::make_shared<ov::Model>(ov::OutputVector{y}, ov::ParameterVector{x});
    ov::Core core;
    auto compiled = core.compile_model(model, "NPU");
    sycl::queue queue([](const sycl::device& d) {
      return d.is_gpu() && d.get_backend() == sycl::backend::ext_oneapi_level_zero ? 1 : -1;
    });
    nsb::Npu npu(compiled, queue);
    bool ok = true;

    auto strategy = nsb::Strategy::automatic(npu);
    auto in = strategy.tensor(compiled.input());
    auto out = strategy.tensor(compiled.output());
    ok &= run(compiled, in, out, nsb::to_string(strategy.kind()));

    const auto dev = queue.get_device();
    const auto ctx = queue.get_context();
    auto own = [&] {
      void* p = nsb::alloc_exportable_device_mem(kN * sizeof(float), 4096, dev, ctx);
      return nsb::ProgramMemory{p, kN * sizeof(float), [p, dev, ctx] { nsb::free_exportable_device_mem(p, dev, ctx); }};
    };
    auto mine = npu.import_sycl(own(), ov::element::f32, compiled.input().get_shape());
    ok &= run(compiled, mine, out, "the program's own SYCL memory");

    nsb::Pool pool(npu, {own(), own()});
    auto pin = pool.tensor(compiled.input());
    auto pout = pool.tensor(compiled.output());
    ok &= run(compiled, pin, pout, "pool");
    for (const auto& path : mapped_under(not_from)) {
      std::cerr << "FAIL loaded from an install it must not use: " << path << "\n";
      ok = false;
    }
    if (!not_from.empty() && ok) std::cout << "ok   nothing loaded from the runtimes the bridge was built with\n";
    return ok ? 0 : 1;
  } catch (const nsb::Error& e) {
    std::cerr << nsb::to_string(e.kind()) << ": " << e.what() << "\n" << e.explanation() << "\n";
    return 1;
  }
}
