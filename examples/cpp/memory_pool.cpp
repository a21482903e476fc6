// "Can I give the NPU plugin my own pre-allocated memory, as a pool?" Yes: eight SYCL buffers of the
// program's own (exportable device memory in its queue's context) in an npu_sycl_bridge::Pool, and 200
// inferences on two requests with tensors from it. Each buffer is imported by the NPU once, on its first
// use; the inferences copy nothing; every output equals the CPU plugin's.
//
// Build: see CMakeLists.txt. Run on the virtual platform: LD_LIBRARY_PATH=target/virtual-l0 ./memory_pool
#include <npu_sycl_bridge/npu.hpp>
#include <npu_sycl_bridge/sycl_core.hpp>

#include "example_support.hpp"

#include <atomic>
#include <cstdio>

namespace nsb = npu_sycl_bridge;

int main() try {
  constexpr std::size_t kElements = 1024, kBuffers = 8, kInferences = 200;
  ov::Core core;
  auto model = example::scale_bias_model(kElements);
  ov::CompiledModel compiled = core.compile_model(model, "NPU");
  sycl::queue queue = example::level_zero_gpu_queue();
  nsb::Npu npu(compiled, queue);
  example::CpuReference cpu(core, model);

  // The program's buffers: allocated once, freed by the release callback when the pool is done with them.
  std::atomic<std::size_t> released{0};
  std::vector<nsb::ProgramMemory> buffers;
  const sycl::device dev = queue.get_device();
  const sycl::context ctx = queue.get_context();
  for (std::size_t i = 0; i < kBuffers; ++i) {
    void* p = nsb::alloc_exportable_device_mem(kElements * sizeof(float), 4096, dev, ctx);
    buffers.push_back({p, kElements * sizeof(float), [p, dev, ctx, &released] {
                         nsb::free_exportable_device_mem(p, dev, ctx);
                         ++released;
                       }});
  }
  std::size_t copied = 0, wrong = 0;
  {
    nsb::Pool pool(npu, std::move(buffers));
    ov::InferRequest requests[2] = {compiled.create_infer_request(), compiled.create_infer_request()};
    for (std::size_t i = 0; i < kInferences; ++i) {
      auto& request = requests[i % 2];
      auto input = pool.tensor(compiled.input());
      auto output = pool.tensor(compiled.output());
      input.bind(request, compiled.input());
      output.bind(request, compiled.output());
      const auto x = example::sample_input(kElements, static_cast<int>(i));
      input.write(x.data(), input.byte_size());
      const auto before = example::device_bytes_copied();
      request.infer();
      const auto after = example::device_bytes_copied();
      if (before && after) copied += *after - *before;
      std::vector<float> y(kElements);
      output.read(y.data(), output.byte_size());
      wrong += example::mismatches(y, cpu(x)) != 0;
    }  // input and output go back to the pool here, detached from the request
    const auto s = pool.stats();
    std::printf("pool: %zu buffers, %zu inferences, %zu imports, %zu hits, %zu misses\n", s.buffers, kInferences,
                s.imports, s.hits, s.misses);
    if (s.imports > kBuffers) return 1;
  }
  std::printf("inferences with an output unlike the CPU plugin's: %zu\n", wrong);
  std::printf("bytes the devices copied during inferences: %zu\n", copied);
  std::printf("buffers released after the pool: %zu of %zu\n", released.load(), kBuffers);
  return wrong == 0 && copied == 0 && released == kBuffers ? 0 : 1;
} catch (const npu_sycl_bridge::Error& e) {
  std::fprintf(stderr, "memory_pool: %s error: %s\n%s\n", npu_sycl_bridge::to_string(e.kind()), e.what(),
               e.explanation().c_str());
  return 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "memory_pool: error: %s\n", e.what());
  return 1;
}
