// The forum snippet, done right, in C++.
//
// The snippet developers post: take the NPU's Level Zero context from a compiled model, build a SYCL
// context on it with ownership::keep, malloc_shared into it and hand that to the NPU. It cannot work
// on stock DPC++: the NPU's Level Zero driver is never exposed as a SYCL platform (DPC++ only makes
// platforms of drivers with GPU devices), and a SYCL context made of one driver's context with
// another driver's devices is invalid. This program shows that precisely, then shares memory the way
// that works: SYCL exportable device memory on the iGPU -> dma-buf fd -> NPU remote tensor
// (SHARED_BUF), with no copy, and checks the NPU's output against OpenVINO's CPU plugin.
//
// Build: see CMakeLists.txt. Run on the virtual platform: LD_LIBRARY_PATH=target/virtual-l0 ./forum_snippet

#include <npu_sycl_bridge/sycl_core.hpp>

#include <openvino/openvino.hpp>
#include <openvino/op/ops.hpp>
#include <openvino/runtime/intel_npu/level_zero/level_zero.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <vector>

namespace nsb = npu_sycl_bridge;

namespace {

constexpr std::size_t kElements = 1024;  // 4 KiB of f32: page-sized, as CPU_VA would need
constexpr float kScale = 2.0f;
constexpr float kBias = 0.5f;

// y = x * 2 + 0.5, built in code so the example needs no model file.
std::shared_ptr<ov::Model> build_model() {
  auto x = std::make_shared<ov::op::v0::Parameter>(ov::element::f32, ov::Shape{1, kElements});
  x->set_friendly_name("x");
  x->output(0).set_names({"x"});
  auto scale = ov::op::v0::Constant::create(ov::element::f32, ov::Shape{1}, {kScale});
  auto bias = ov::op::v0::Constant::create(ov::element::f32, ov::Shape{1}, {kBias});
  auto mul = std::make_shared<ov::op::v1::Multiply>(x, scale);
  auto add = std::make_shared<ov::op::v1::Add>(mul, bias);
  add->output(0).set_names({"y"});
  auto result = std::make_shared<ov::op::v0::Result>(add);
  return std::make_shared<ov::Model>(ov::ResultVector{result}, ov::ParameterVector{x}, "scale_bias");
}

// Whether the Level Zero loader in this process is the virtual platform (it exports vl0_counter).
bool on_virtual_platform() {
  void* loader = dlopen("libze_loader.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!loader) return false;
  const bool is_virtual = dlsym(loader, "vl0_counter") != nullptr;
  dlclose(loader);  // drops only the reference RTLD_NOLOAD added
  return is_virtual;
}

// The virtual platform's copy counter, when it is the loader in use (absent on real hardware).
bool device_bytes_copied(std::uint64_t& total) {
  using counter_fn = int (*)(const char*, std::uint64_t*);
  // The runtimes opened the loader privately (RTLD_LOCAL): look it up by soname, without loading one.
  void* loader = dlopen("libze_loader.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (!loader) return false;
  auto fn = reinterpret_cast<counter_fn>(dlsym(loader, "vl0_counter"));
  dlclose(loader);  // drops only the reference RTLD_NOLOAD added
  if (!fn) return false;
  std::uint64_t gpu = 0, npu = 0;
  if (fn("gpu.bytes_copied", &gpu) != 0 || fn("npu.bytes_copied", &npu) != 0) return false;
  total = gpu + npu;
  return true;
}

// Owners, so that an exception on any step (export, create_tensor, infer, ...) still frees the
// exportable memory and closes the fds. Declared memory first, fds second: the fds close first, then
// the memory is freed (the remote tensors are gone by then).
struct ExportableMemory {
  ExportableMemory(std::size_t bytes, const sycl::device& d, const sycl::context& c)
      : ptr(nsb::alloc_exportable_device_mem(bytes, 4096, d, c)), dev(d), ctx(c) {}
  ExportableMemory(const ExportableMemory&) = delete;
  ExportableMemory& operator=(const ExportableMemory&) = delete;
  ~ExportableMemory() {
    try {
      nsb::free_exportable_device_mem(ptr, dev, ctx);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "forum_snippet: free_exportable_memory: %s\n", e.what());
    }
  }
  void* ptr;
  sycl::device dev;
  sycl::context ctx;
};

struct Fd {
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  int fd = -1;
};

}  // namespace

int main() try {
  ov::Core core;
  auto model = build_model();
  std::printf("step 1: compile the model for NPU\n");
  ov::CompiledModel npu_model = core.compile_model(model, "NPU");

  std::printf("step 2: compiled_model.get_context() -> ZeroContext\n");
  auto npu_ctx = npu_model.get_context().as<ov::intel_npu::level_zero::ZeroContext>();
  auto ze_context = reinterpret_cast<std::uintptr_t>(npu_ctx.get());
  std::printf("        L0_CONTEXT = 0x%zx (owned by the NPU plugin: never destroy it)\n", static_cast<std::size_t>(ze_context));

  std::printf("step 3: the snippet's route: a SYCL device for that context, then make_context(keep)\n");
  auto platforms = nsb::list_platforms();
  std::vector<sycl::device> gpu_devices;
  std::size_t gpu_platform = 0;
  // Forcing the probe hands the NPU's driver a GPU device handle: only the virtual platform's loader is
  // known to reject that; a real driver need not check (undefined behaviour), so it is skipped there.
  const bool force_probe = on_virtual_platform();
  for (const auto& p : platforms) {
    if (!p.is_level_zero) continue;
    auto devices = sycl::platform::get_platforms().at(p.index).get_devices();
    if (!force_probe) {
      std::printf("        platform %zu (%s) is another driver's; not probed on real drivers\n", p.index,
                  p.name.c_str());
    } else {
      try {
        nsb::check_context_accepts_devices(ze_context, devices);
        std::printf("        platform %zu accepts the NPU's context (unexpected on stock DPC++)\n", p.index);
      } catch (const std::exception& e) {
        std::printf("        platform %zu (%s) rejects it: %s\n", p.index, p.name.c_str(), e.what());
      }
    }
    if (gpu_devices.empty()) {
      gpu_devices = devices;
      gpu_platform = p.index;
    }
  }
  std::printf("        => the NPU's Level Zero driver is not a SYCL platform: DPC++ exposes only drivers with\n"
              "           GPU devices, and a context of one driver with devices of another is invalid.\n"
              "           Share memory through a dma-buf fd (or page-aligned CPU_VA) instead.\n");
  if (gpu_devices.empty()) {
    std::printf("no Level Zero GPU platform: the dma-buf strategy needs the iGPU's SYCL device\n");
    return 2;
  }

  std::printf("step 4: strategy dma-buf: SYCL exportable device memory on the iGPU (platform %zu)\n", gpu_platform);
  const sycl::device& gpu = gpu_devices.front();
  sycl::context sycl_ctx = nsb::make_device_context(gpu);
  sycl::queue q = nsb::make_in_order_queue(sycl_ctx, gpu);
  const std::size_t bytes = kElements * sizeof(float);
  ExportableMemory in_buf(bytes, gpu, sycl_ctx);
  ExportableMemory out_buf(bytes, gpu, sycl_ctx);
  void* const in_mem = in_buf.ptr;
  void* const out_mem = out_buf.ptr;
  Fd in_fd(nsb::export_dma_buf(in_mem, gpu, sycl_ctx));
  Fd out_fd(nsb::export_dma_buf(out_mem, gpu, sycl_ctx));

  std::vector<float> input(kElements);
  for (std::size_t i = 0; i < kElements; ++i) input[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
  nsb::queue_memcpy(q, in_mem, input.data(), bytes);
  nsb::queue_wait(q);

  std::uint64_t copied_before = 0;
  bool have_counter = device_bytes_copied(copied_before);
  std::vector<float> output(kElements);
  {
    // The remote tensors must be gone before the fds are closed and the memory freed.
    auto in_tensor = npu_ctx.create_tensor(ov::element::f32, ov::Shape{1, kElements}, in_fd.fd);
    auto out_tensor = npu_ctx.create_tensor(ov::element::f32, ov::Shape{1, kElements}, out_fd.fd);
    auto request = npu_model.create_infer_request();
    request.set_input_tensor(in_tensor);
    request.set_output_tensor(out_tensor);
    std::printf("step 5: infer on the NPU straight from and into SYCL memory\n");
    request.infer();
  }
  std::uint64_t copied_after = 0;
  if (have_counter) device_bytes_copied(copied_after);
  nsb::queue_memcpy(q, output.data(), out_mem, bytes);
  nsb::queue_wait(q);

  // The reference: the same model on OpenVINO's CPU plugin.
  auto cpu_request = core.compile_model(model, "CPU").create_infer_request();
  ov::Tensor cpu_in(ov::element::f32, ov::Shape{1, kElements}, input.data());
  cpu_request.set_input_tensor(cpu_in);
  cpu_request.infer();
  const float* expected = cpu_request.get_output_tensor().data<const float>();
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < kElements; ++i) {
    if (std::fabs(output[i] - expected[i]) > 1e-5f) ++mismatches;
  }

  if (mismatches != 0) {
    std::printf("strategy dma-buf: %zu of %zu outputs differ from the CPU plugin\n", mismatches, kElements);
    return 1;
  }
  std::printf("strategy dma-buf: output equals the CPU plugin (%zu values)\n", kElements);
  if (have_counter) {
    std::printf("zero-copy: the device copied %llu bytes during inference\n",
                static_cast<unsigned long long>(copied_after - copied_before));
    if (copied_after != copied_before) return 1;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "forum_snippet: error: %s\n", e.what());
  return 1;
}
