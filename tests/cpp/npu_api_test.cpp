// Tests of the C++ API (include/npu_sycl_bridge/npu.hpp) on the virtual Level Zero platform, with the real
// OpenVINO NPU plugin and DPC++ runtime. One group per process: npu_api_test <group>.
//
//   strategies   every strategy against the CPU plugin, zero-copy counters, Auto's choice and report
//   imports      the program's own SYCL memory, host memory and dma-buf fds; release callbacks and fds
//   errors       errors arrive as npu_sycl_bridge::Error of the right kind and path
//   busy         SYCL copies wait for an inference the program started on a request the tensor is bound to
//   destruction  every order of destroying the compiled model, request, Npu, Strategy and tensors
//   pool         reuse, exhaustion, statistics, trim
#include <npu_sycl_bridge/npu.hpp>
#include <npu_sycl_bridge/sycl_core.hpp>

#include "../../examples/cpp/example_support.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>

namespace nsb = npu_sycl_bridge;

// Every class owns what it made: movable, never copied.
static_assert(!std::is_copy_constructible_v<nsb::Npu> && std::is_nothrow_move_constructible_v<nsb::Npu>);
static_assert(!std::is_copy_constructible_v<nsb::Strategy> && std::is_nothrow_move_constructible_v<nsb::Strategy>);
static_assert(!std::is_copy_constructible_v<nsb::SharedTensor> &&
              std::is_nothrow_move_constructible_v<nsb::SharedTensor>);
static_assert(!std::is_copy_constructible_v<nsb::Pool> && std::is_nothrow_move_constructible_v<nsb::Pool>);
static_assert(std::is_base_of_v<std::runtime_error, nsb::Error>);

namespace {

constexpr std::size_t kElements = 1024;  // 4 KiB of f32: page-sized
constexpr std::size_t kBytes = kElements * sizeof(float);

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

// Runs `f` and returns the npu_sycl_bridge::Error it throws; any other outcome is a failure.
std::optional<nsb::Error> error_of(const std::string& what, const std::function<void()>& f) {
  try {
    f();
  } catch (const nsb::Error& e) {
    return e;
  } catch (const std::exception& e) {
    check(false, what + ": threw something else than npu_sycl_bridge::Error: " + e.what());
    return std::nullopt;
  }
  check(false, what + ": did not throw");
  return std::nullopt;
}

// The error `f` throws has `kind`, `path` and `reason` (none but for unsupported errors, which also explain).
void expect_error(const std::string& what, nsb::ErrorKind kind, nsb::SharingPath path, nsb::Reason reason,
                  const std::function<void()>& f) {
  if (auto e = error_of(what, f)) {
    check(e->kind() == kind && e->path() == path && e->reason() == reason,
          what + ": " + nsb::to_string(e->kind()) + "/" + nsb::to_string(e->path()) + "/" + nsb::to_string(e->reason()) +
              " (want " + nsb::to_string(kind) + "/" + nsb::to_string(path) + "/" + nsb::to_string(reason) +
              "): " + e->what());
    if (kind == nsb::ErrorKind::unsupported) {
      check(!e->explanation().empty(), what + ": an unsupported error carries its reason's explanation");
    }
  }
}

void expect_error(const std::string& what, nsb::ErrorKind kind, nsb::SharingPath path, const std::function<void()>& f) {
  expect_error(what, kind, path, nsb::Reason::none, f);
}

std::size_t open_fds() {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator("/proc/self/fd"), {}));
}

std::uint64_t live_allocations() {
  return example::virtual_counter("gpu.live_allocations").value_or(0) +
         example::virtual_counter("npu.live_allocations").value_or(0);
}

struct Fixture {
  ov::Core core;
  std::shared_ptr<ov::Model> model = example::scale_bias_model(kElements);
  ov::CompiledModel compiled = core.compile_model(model, "NPU");
  sycl::queue queue = example::level_zero_gpu_queue();
  std::vector<float> x = example::sample_input(kElements);
  std::vector<float> want = example::CpuReference(core, model)(x);
};

// Binds `in` and `out`, writes the sample input through SYCL, infers and reads back: true when the
// output equals the CPU plugin's; `copied` gets the bytes the devices copied during the inference.
bool infer(Fixture& f, ov::InferRequest& request, nsb::SharedTensor& in, nsb::SharedTensor& out,
           std::uint64_t* copied = nullptr) {
  in.bind(request, f.compiled.input());
  out.bind(request, f.compiled.output());
  in.write(f.x.data(), kBytes);
  const auto before = example::device_bytes_copied();
  request.infer();
  const auto after = example::device_bytes_copied();
  if (copied) *copied = after.value_or(0) - before.value_or(0);
  std::vector<float> y(kElements);
  out.read(y.data(), kBytes);
  return example::mismatches(y, f.want) == 0;
}

// Binds `in` (whose input the program has written already) and `out` to a new request, infers and reads
// `out` back through SYCL: true when it equals the CPU plugin's output.
bool infer_written(Fixture& f, nsb::SharedTensor& in, nsb::SharedTensor& out) {
  auto request = f.compiled.create_infer_request();
  in.bind(request, f.compiled.input());
  out.bind(request, f.compiled.output());
  request.infer();
  std::vector<float> y(kElements);
  out.read(y.data(), kBytes);
  return example::mismatches(y, f.want) == 0;
}

nsb::SharingPath path_of(nsb::StrategyKind k) {
  switch (k) {
    case nsb::StrategyKind::card_path: return nsb::SharingPath::card_path;
    case nsb::StrategyKind::dma_buf: return nsb::SharingPath::dma_buf;
    case nsb::StrategyKind::cpu_va: return nsb::SharingPath::cpu_va;
    case nsb::StrategyKind::shared_system: return nsb::SharingPath::shared_system;
    case nsb::StrategyKind::npu_export: return nsb::SharingPath::npu_to_sycl_zero_copy;
    case nsb::StrategyKind::npu_to_sycl: return nsb::SharingPath::npu_to_sycl;
  }
  return nsb::SharingPath::none;
}

constexpr std::array<nsb::StrategyKind, 6> kOrder = {
    nsb::StrategyKind::card_path,     nsb::StrategyKind::dma_buf,    nsb::StrategyKind::cpu_va,
    nsb::StrategyKind::shared_system, nsb::StrategyKind::npu_export, nsb::StrategyKind::npu_to_sycl};

void strategies() {
  Fixture f;
  nsb::Npu npu(f.compiled, f.queue);
  std::optional<nsb::StrategyKind> first_working;
  for (auto kind : kOrder) {
    const std::string name = std::string("strategy ") + nsb::to_string(kind);
    std::optional<nsb::Strategy> s;
    try {
      s.emplace(npu, kind);
    } catch (const nsb::Error& e) {
      check(e.kind() == nsb::ErrorKind::unsupported && e.path() == path_of(kind) && !e.explanation().empty() &&
                e.reason() != nsb::Reason::none && std::string(nsb::to_string(e.reason())) != "unknown",
            name + ": refused as unsupported on its own path, with a reason and its explanation: " + e.what());
      if (kind == nsb::StrategyKind::card_path) {
        check(e.reason() == nsb::Reason::no_sycl_platform, name + ": no SYCL platform wraps the NPU's driver");
      }
      continue;
    }
    check(kind != nsb::StrategyKind::card_path, name + ": the card path never works on stock DPC++");
    check(s->kind() == kind && s->decision().empty(), name + ": kind and no Auto report");
    std::optional<nsb::SharedTensor> in, out;
    try {
      in.emplace(s->tensor(f.compiled.input(), nsb::TensorType::input));
      out.emplace(s->tensor(f.compiled.output(), nsb::TensorType::output));
    } catch (const nsb::Error& e) {
      // A strategy is checked against the drivers when its tensors are made (CPU_VA of GPU USM).
      check(e.kind() == nsb::ErrorKind::unsupported && e.path() == path_of(kind),
            name + ": its tensors are refused as unsupported on its path: " + e.what());
      continue;
    }
    if (!first_working) first_working = kind;
    check(in->tensor().get_device_name().rfind("NPU", 0) == 0, name + ": the remote tensor is the NPU's");
    check(in->data() != nullptr && in->byte_size() == kBytes, name + ": the SYCL side has the tensor's bytes");
    auto request = f.compiled.create_infer_request();
    std::uint64_t copied = 0;
    check(infer(f, request, *in, *out, &copied), name + ": output equals the CPU plugin");
    if (s->zero_copy()) check(copied == 0, name + ": zero-copy, the devices copied " + std::to_string(copied) + " bytes");
  }
  check(first_working.has_value(), "at least one strategy works");
  auto a = nsb::Strategy::automatic(npu);
  check(first_working && a.kind() == *first_working,
        std::string("Auto chose ") + nsb::to_string(a.kind()) + ", the first strategy that works");
  check(a.decision().find(nsb::to_string(a.kind())) != std::string::npos, "Auto's report names its choice");

  // One strategy, used from four threads at once, each with its own tensors and request.
  std::atomic<int> correct{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      try {
        for (int i = 0; i < 5; ++i) {
          auto in = a.tensor(f.compiled.input(), nsb::TensorType::input);
          auto out = a.tensor(f.compiled.output(), nsb::TensorType::output);
          auto request = f.compiled.create_infer_request();
          correct += infer(f, request, in, out);
        }
      } catch (const std::exception& e) {
        std::printf("thread: %s\n", e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  check(correct == 20, std::to_string(correct.load()) + " of 20 inferences from four threads equal the CPU plugin");
}

void imports() {
  Fixture f;
  nsb::Npu npu(f.compiled, f.queue);
  auto out_strategy = nsb::Strategy(npu, nsb::StrategyKind::dma_buf);
  const auto dev = f.queue.get_device();
  const auto ctx = f.queue.get_context();
  const std::size_t fds = open_fds();

  {  // the program's own SYCL memory, released by its callback once the NPU is done with it
    std::atomic<int> released{0};
    void* p = nsb::alloc_exportable_device_mem(kBytes, 4096, dev, ctx);
    {
      auto in = npu.import_sycl({p, kBytes, [&, p] { nsb::free_exportable_device_mem(p, dev, ctx); ++released; }},
                                ov::element::f32, f.compiled.input().get_shape());
      auto out = out_strategy.tensor(f.compiled.output());
      check(in.has_strategy() && in.kind() == nsb::StrategyKind::dma_buf && in.data() == p,
            "import_sycl: a dma-buf shared tensor at the program's pointer");
      auto request = f.compiled.create_infer_request();
      std::uint64_t copied = 0;
      check(infer(f, request, in, out, &copied) && copied == 0, "import_sycl: output equals the CPU plugin, zero-copy");
      check(released == 0, "import_sycl: not released while in use");
    }
    check(released == 1, "import_sycl: released exactly once after the tensor and request let go");
  }

  const bool sysmem = npu.describe().find("system memory import yes") != std::string::npos;
  {  // page-aligned host memory
    std::atomic<int> released{0};
    void* p = std::aligned_alloc(4096, kBytes);
    auto release = [&, p] { std::free(p); ++released; };
    if (sysmem) {
      {
        auto in = npu.import_host({p, kBytes, release}, ov::element::f32, f.compiled.input().get_shape());
        auto out = out_strategy.tensor(f.compiled.output());
        check(!in.has_strategy() && in.data() == p, "import_host: no SYCL side, data() is the program's pointer");
        std::memcpy(p, f.x.data(), kBytes);  // the program writes its own memory
        check(infer_written(f, in, out), "import_host: output equals the CPU plugin");
        expect_error("import_host: write() has no SYCL side", nsb::ErrorKind::invalid_argument, nsb::SharingPath::none,
                     [&] { in.write(f.x.data(), kBytes); });
      }
      check(released == 1, "import_host: released exactly once");
    } else {
      expect_error("import_host without system memory import", nsb::ErrorKind::unsupported, nsb::SharingPath::cpu_va,
                   nsb::Reason::no_system_memory_import, [&] { npu.import_host({p, kBytes, release}, ov::element::f32, f.compiled.input().get_shape()); });
      check(released == 1, "import_host: released exactly once when refused");
    }
  }
  {  // a misaligned pointer loses nothing: the callback still runs once
    std::atomic<int> released{0};
    char* p = static_cast<char*>(std::aligned_alloc(4096, 2 * kBytes));
    auto shape = f.compiled.input().get_shape();
    expect_error("import_host of a misaligned pointer", sysmem ? nsb::ErrorKind::alignment : nsb::ErrorKind::unsupported,
                 sysmem ? nsb::SharingPath::none : nsb::SharingPath::cpu_va,
                 sysmem ? nsb::Reason::none : nsb::Reason::no_system_memory_import, [&] {
                   npu.import_host({p + 64, kBytes, [&, p] { std::free(p); ++released; }}, ov::element::f32, shape);
                 });
    check(released == 1, "import_host: a refused import is released once");
  }
  {  // a dma-buf fd of the program's, taken by the bridge and closed once
    void* p = nsb::alloc_exportable_device_mem(kBytes, 4096, dev, ctx);
    f.queue.memcpy(p, f.x.data(), kBytes).wait();
    const int fd = nsb::export_shared_handle(p, dev, ctx);
    {
      auto in = npu.import_dma_buf(fd, ov::element::f32, f.compiled.input().get_shape());
      auto out = out_strategy.tensor(f.compiled.output());
      check(!in.has_strategy() && in.data() == nullptr, "import_dma_buf: no SYCL side");
      check(infer_written(f, in, out), "import_dma_buf: output equals the CPU plugin");
    }
    nsb::free_exportable_device_mem(p, dev, ctx);
    expect_error("import_dma_buf(-1)", nsb::ErrorKind::invalid_argument, nsb::SharingPath::none,
                 [&] { npu.import_dma_buf(-1, ov::element::f32, f.compiled.input().get_shape()); });
    expect_error("import_dma_buf of a closed fd", nsb::ErrorKind::invalid_argument, nsb::SharingPath::none,
                 [&] { npu.import_dma_buf(fd, ov::element::f32, f.compiled.input().get_shape()); });
  }
  check(open_fds() == fds, "no fd leaked: " + std::to_string(open_fds()) + " open, " + std::to_string(fds) + " before");
}

void errors() {
  Fixture f;
  auto cpu = f.core.compile_model(f.model, "CPU");
  expect_error("Npu of a model compiled for the CPU", nsb::ErrorKind::unsupported, nsb::SharingPath::npu,
               nsb::Reason::not_the_npu, [&] { nsb::Npu npu(cpu, f.queue); });
  // The names are the Rust crate's; values C++ makes up are named "unknown", not misread.
  check(std::string(nsb::to_string(nsb::ErrorKind::busy)) == "busy" &&
            std::string(nsb::to_string(nsb::SharingPath::automatic)) == "auto" &&
            std::string(nsb::to_string(nsb::Reason::no_sycl_platform)) == "no_sycl_platform" &&
            std::string(nsb::to_string(nsb::StrategyKind::npu_to_sycl)) == "NPU→SYCL copy",
        "to_string gives the crate's names");
  check(std::string(nsb::to_string(static_cast<nsb::Reason>(200))) == "unknown" &&
            std::string(nsb::to_string(static_cast<nsb::ErrorKind>(200))) == "unknown" &&
            std::string(nsb::to_string(static_cast<nsb::StrategyKind>(200))) == "unknown",
        "to_string of a value that is not one");
  nsb::Npu npu(f.compiled, f.queue);
  auto s = nsb::Strategy(npu, nsb::StrategyKind::dma_buf);
  expect_error("a tensor of a dynamic shape", nsb::ErrorKind::shape, nsb::SharingPath::none, [&] {
    auto p = std::make_shared<ov::op::v0::Parameter>(ov::element::f32, ov::PartialShape{1, ov::Dimension::dynamic()});
    s.tensor(p->output(0));
  });
  expect_error("a tensor with no elements", nsb::ErrorKind::shape, nsb::SharingPath::none,
               [&] { s.tensor(ov::element::f32, ov::Shape{0}); });
  expect_error("a strategy kind that does not exist", nsb::ErrorKind::invalid_argument, nsb::SharingPath::none,
               [&] { nsb::Strategy(npu, static_cast<nsb::StrategyKind>(42)); });
  const auto dev = f.queue.get_device();
  const auto ctx = f.queue.get_context();
  std::atomic<int> released{0};
  void* p = nsb::alloc_exportable_device_mem(4096, 4096, dev, ctx);
  expect_error("SYCL memory smaller than the tensor", nsb::ErrorKind::size, nsb::SharingPath::none, [&] {
    npu.import_sycl({p, 4096, [&, p] { nsb::free_exportable_device_mem(p, dev, ctx); ++released; }}, ov::element::f32,
                    ov::Shape{1, 4096});
  });
  check(released == 1, "a refused SYCL import is released once");
  void* host = sycl::malloc_host(kBytes, ctx);
  expect_error("import_sycl of host USM", nsb::ErrorKind::invalid_argument, nsb::SharingPath::none, [&] {
    npu.import_sycl({host, kBytes, [&, host] { sycl::free(host, ctx); ++released; }}, ov::element::f32,
                    f.compiled.input().get_shape());
  });
  check(released == 2, "a refused import of host USM is released once");
  auto t = s.tensor(f.compiled.input());
  expect_error("reading past the tensor", nsb::ErrorKind::size, nsb::SharingPath::none, [&] {
    std::vector<char> big(2 * kBytes);
    t.read(big.data(), big.size());
  });
  // bind() follows the Rust InferRequest's rules.
  auto request = f.compiled.create_infer_request();
  auto wrong_shape = s.tensor(ov::element::f32, ov::Shape{1, 2 * kElements});
  expect_error("binding a tensor of another shape", nsb::ErrorKind::shape, nsb::SharingPath::none,
               [&] { wrong_shape.bind(request, f.compiled.input()); });
  auto wrong_type = s.tensor(ov::element::i32, f.compiled.input().get_shape());
  expect_error("binding a tensor of another element type", nsb::ErrorKind::element_type, nsb::SharingPath::none,
               [&] { wrong_type.bind(request, f.compiled.input()); });
  if (npu.describe().find("system memory import yes") != std::string::npos) {
    std::atomic<int> freed{0};
    void* host = std::aligned_alloc(4096, kBytes);
    auto read_only = npu.import_host({host, kBytes, [&, host] { std::free(host); ++freed; }}, ov::element::f32,
                                     f.compiled.output().get_shape(), nsb::TensorType::input);
    check(read_only.read_only_for_npu(), "a CPU_VA import made with TensorType::input is read-only for the NPU");
    expect_error("binding a read-only CPU_VA tensor as an output", nsb::ErrorKind::invalid_argument,
                 nsb::SharingPath::none, [&] { read_only.bind(request, f.compiled.output()); });
    read_only.bind(request, f.compiled.input());  // as an input it is fine
  }
}

// A SYCL copy never overlaps an inference the program started on a request the tensor is bound to: it
// waits for it. The model is large enough (16 MiB in, 16 MiB out) that the inference still runs when the
// 4-byte write is asked for.
void busy() {
  ov::Core core;
  constexpr std::size_t elements = std::size_t(1) << 22;
  auto compiled = core.compile_model(example::scale_bias_model(elements), "NPU");
  auto queue = example::level_zero_gpu_queue();
  nsb::Npu npu(compiled, queue);
  auto strategy = nsb::Strategy::automatic(npu);
  auto in = strategy.tensor(compiled.input());
  auto out = strategy.tensor(compiled.output());
  auto request = compiled.create_infer_request();
  in.bind(request, compiled.input());
  out.bind(request, compiled.output());
  const float one = 1.0f;
  for (int i = 0; i < 3; ++i) {
    request.start_async();
    in.write(&one, sizeof one);
    check(request.wait_for(std::chrono::milliseconds(0)), "write returned only after the running inference ended");
    request.start_async();
    float first = 0;
    out.read(&first, sizeof first);
    check(request.wait_for(std::chrono::milliseconds(0)), "read returned only after the running inference ended");
  }
}

void destruction() {
  Fixture f;
  std::array<int, 5> order = {0, 1, 2, 3, 4};
  int orders = 0, correct = 0;
  // Measured after the first order: the runtimes keep what they cache on first use (DPC++'s USM pools).
  std::uint64_t allocations = 0;
  std::size_t fds = 0;
  do {
    std::optional<ov::CompiledModel> compiled(f.core.compile_model(f.model, "NPU"));
    std::optional<ov::InferRequest> request(compiled->create_infer_request());
    std::optional<nsb::Npu> npu(std::in_place, *compiled, f.queue);
    std::optional<nsb::Strategy> strategy(nsb::Strategy::automatic(*npu));
    std::optional<nsb::SharedTensor> in(strategy->tensor(compiled->input(), nsb::TensorType::input));
    std::optional<nsb::SharedTensor> out(strategy->tensor(compiled->output(), nsb::TensorType::output));
    f.compiled = *compiled;
    correct += infer(f, *request, *in, *out);
    for (int which : order) {
      switch (which) {
        case 0: compiled.reset(); break;
        case 1: request.reset(); break;
        case 2: npu.reset(); break;
        case 3: strategy.reset(); break;
        case 4: in.reset(); out.reset(); break;
      }
    }
    f.compiled = ov::CompiledModel();
    if (orders++ == 0) {
      allocations = live_allocations();
      fds = open_fds();
    }
  } while (std::next_permutation(order.begin(), order.end()));
  check(correct == orders, std::to_string(correct) + " of " + std::to_string(orders) + " orders inferred correctly");
  check(live_allocations() == allocations, "every later destruction order freed every allocation (" +
                                               std::to_string(live_allocations()) + " live, " +
                                               std::to_string(allocations) + " after the first)");
  check(open_fds() == fds, "every destruction order closed every fd");
}

void pool() {
  Fixture f;
  nsb::Npu npu(f.compiled, f.queue);
  const auto dev = f.queue.get_device();
  const auto ctx = f.queue.get_context();
  std::atomic<int> released{0};
  auto buffers = [&](std::size_t n) {
    std::vector<nsb::ProgramMemory> v;
    for (std::size_t i = 0; i < n; ++i) {
      void* p = nsb::alloc_exportable_device_mem(kBytes, 4096, dev, ctx);
      v.push_back({p, kBytes, [&, p] { nsb::free_exportable_device_mem(p, dev, ctx); ++released; }});
    }
    return v;
  };
  {
    nsb::Pool pool(npu, buffers(2));
    auto request = f.compiled.create_infer_request();
    for (int i = 0; i < 10; ++i) {
      auto in = pool.tensor(f.compiled.input());
      auto out = pool.tensor(f.compiled.output());
      std::uint64_t copied = 0;
      check(infer(f, request, in, out, &copied) && copied == 0, "pool inference " + std::to_string(i) + ": zero-copy, correct");
    }
    const auto s = pool.stats();
    check(s.buffers == 2 && s.imports == 2 && s.hits == 18 && s.in_use == 0,
          "each buffer imported once, then handed out again (" + std::to_string(s.imports) + " imports, " +
              std::to_string(s.hits) + " hits)");
    {
      auto a = pool.tensor(f.compiled.input());
      auto b = pool.tensor(f.compiled.input());
      expect_error("a third tensor from two buffers", nsb::ErrorKind::exhausted, nsb::SharingPath::none,
                   [&] { pool.tensor(f.compiled.input()); });
      const auto t = pool.trim();
      check(t.imports == 0 && t.buffers == 0 && t.bytes == 0, "trim keeps buffers in use");
    }
    const auto t = pool.trim();
    check(t.imports == 2 && t.buffers == 0 && t.bytes == 0,
          "trim drops both free imports and keeps the program's buffers (" + std::to_string(t.imports) + " imports)");
    auto again = pool.tensor(f.compiled.input());
    check(pool.stats().imports == 3, "the next tensor imports its buffer again");
    check(released == 0, "no buffer released while the pool lives");
  }
  check(released == 2, "both buffers released once the pool is gone");
  expect_error("a pool of no buffers", nsb::ErrorKind::invalid_argument, nsb::SharingPath::none,
               [&] { nsb::Pool(npu, {}); });

  {  // buffers on demand from the program's allocator, within the limits
    std::size_t allocated = 0;
    bool fail = false;
    released = 0;
    auto pool = nsb::Pool::with_allocator(npu, {2, 1 << 20}, [&](std::size_t bytes) {
      if (fail) throw std::runtime_error("the program's allocator is out of memory");
      ++allocated;
      return buffers(1).front();
    });
    check(allocated == 0, "the allocator is called only when a tensor is asked for");
    {
      auto a = pool.tensor(f.compiled.input());
      auto b = pool.tensor(f.compiled.output());
      check(allocated == 2, "one buffer per tensor in use");
      expect_error("a third buffer beyond max_buffers", nsb::ErrorKind::exhausted, nsb::SharingPath::none,
                   [&] { pool.tensor(f.compiled.input()); });
      auto request = f.compiled.create_infer_request();
      std::uint64_t copied = 0;
      check(infer(f, request, a, b, &copied) && copied == 0, "allocated pool tensors: zero-copy, correct");
    }
    auto again = pool.tensor(f.compiled.input());
    check(allocated == 2, "a free buffer is handed out again, not allocated");
    fail = true;
    auto other = pool.tensor(f.compiled.output());  // the second free buffer: no allocation needed
    check(allocated == 2 && released == 0, "no allocation while free buffers fit");
  }
  check(released == 2, "allocated buffers released once the pool is gone");
  {
    std::size_t calls = 0;
    auto pool = nsb::Pool::with_allocator(npu, {2, 1 << 20}, [&](std::size_t) -> nsb::ProgramMemory {
      ++calls;
      throw std::runtime_error("the program's allocator is out of memory");
    });
    expect_error("an allocator that throws", nsb::ErrorKind::invalid_argument, nsb::SharingPath::none,
                 [&] { pool.tensor(f.compiled.input()); });
    check(calls == 1, "the allocator was asked once");
  }

  {  // the program's page-aligned host memory
    std::atomic<int> freed{0};
    std::vector<nsb::ProgramMemory> host;
    for (int i = 0; i < 2; ++i) {
      void* p = std::aligned_alloc(4096, kBytes);
      host.push_back({p, kBytes, [&freed, p] { std::free(p); ++freed; }});
    }
    void* first = host[0].data;
    {
      auto pool = nsb::Pool::of_host_memory(npu, std::move(host));
      if (npu.describe().find("system memory import yes") != std::string::npos) {
        auto in = pool.tensor(f.compiled.input());
        auto out = pool.tensor(f.compiled.output());
        check(!in.has_strategy() && in.data() == first, "host pool tensors are the program's memory");
        std::memcpy(in.data(), f.x.data(), kBytes);
        auto request = f.compiled.create_infer_request();
        in.bind(request, f.compiled.input());
        out.bind(request, f.compiled.output());
        request.infer();
        std::vector<float> y(kElements);
        std::memcpy(y.data(), out.data(), kBytes);
        check(example::mismatches(y, f.want) == 0, "host pool: output equals the CPU plugin");
      } else {
        expect_error("a host pool without system memory import", nsb::ErrorKind::unsupported, nsb::SharingPath::cpu_va,
                     nsb::Reason::no_system_memory_import, [&] { pool.tensor(f.compiled.input()); });
      }
      check(freed == 0, "host buffers are kept while the pool lives");
    }
    check(freed == 2, "host buffers released once the pool is gone");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string group = argc > 1 ? argv[1] : "";
  try {
    if (group == "strategies") strategies();
    else if (group == "imports") imports();
    else if (group == "errors") errors();
    else if (group == "busy") busy();
    else if (group == "destruction") destruction();
    else if (group == "pool") pool();
    else {
      std::fprintf(stderr, "usage: npu_api_test strategies|imports|errors|destruction|pool\n");
      return 2;
    }
  } catch (const nsb::Error& e) {
    std::printf("FAIL %s: unexpected %s error: %s\n%s\n", group.c_str(), nsb::to_string(e.kind()), e.what(),
                e.explanation().c_str());
    return 1;
  } catch (const std::exception& e) {
    std::printf("FAIL %s: unexpected exception: %s\n", group.c_str(), e.what());
    return 1;
  }
  std::printf("%s: %d failure(s)\n", group.c_str(), failures);
  return failures == 0 ? 0 : 1;
}
