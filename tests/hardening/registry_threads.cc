// The registry and the host services from many threads at once, as they are
// used once Python releases the GIL around a kernel: lookups, kernels of the
// CPU, example_c and kernelerror plugins on shared inputs and private
// outputs, error sinks, logging and queries, while one thread keeps changing
// a query answer and the log level. Built in the ThreadSanitizer and
// AddressSanitizer builds; results must be exact and the sanitizers silent.
//
// Loading happens once, before the threads start: Registry::Load is
// documented as single-threaded, lookups and calls are not.
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "abi/torchferry.h"
#include "loader/loader.h"
#include "loader/log.h"

using namespace torchferry;

namespace {

constexpr int kThreads = 8;
constexpr int kIterations = 400;
constexpr int64_t kElements = 257;  // not a multiple of any vector width
constexpr tf_dtype kF32 = {TF_DTYPE_FLOAT, 32, 1};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    std::cerr << name << " is not set; run through `meson test`\n";
    std::exit(2);
  }
  return value;
}

tf_tensor View(float* data, int64_t* shape, int64_t* strides) {
  tf_tensor t{};
  t.data = data;
  t.device = {TF_DEVICE_CPU, 0};
  t.ndim = 1;
  t.dtype = kF32;
  t.shape = shape;
  t.strides = strides;
  t.flags = TF_TENSOR_CONTIGUOUS;
  return t;
}

tf_status Call(const KernelEntry& k, const tf_arg* inputs, int num_inputs,
               const tf_arg* attrs, int num_attrs, const tf_tensor* out,
               ErrorSink* sink) {
  tf_call call{};
  call.struct_size = sizeof(tf_call);
  call.inputs = inputs;
  call.num_inputs = num_inputs;
  call.attrs = attrs;
  call.num_attrs = num_attrs;
  call.outputs = out;
  call.num_outputs = out ? 1 : 0;
  call.kernel_data = k.kernel_data;
  call.host = HostApi();
  call.error_sink = sink;
  return k.fn(&call);
}

struct Counters {
  std::atomic<int64_t> calls{0};
  std::atomic<int64_t> wrong{0};
  std::atomic<int64_t> errors_seen{0};
};

}  // namespace

int main() {
  SetLogLevel(LogLevel::kError);  // the workers log at debug: filtered out
  Registry cpu_registry;
  Registry example_registry;
  Registry error_registry;
  if (cpu_registry.LoadFile(Env("TF_TEST_CPU_PLUGIN")) == nullptr ||
      example_registry.LoadFile(Env("TF_TEST_EXAMPLE_C_PLUGIN")) == nullptr ||
      error_registry.LoadFile(Env("TF_TEST_SYNTHETIC_DIR") +
                              "/torchferry_kernelerror.so") == nullptr) {
    std::cerr << "FAIL: a plugin did not load\n";
    return 1;
  }

  // Shared, read by every thread, never written.
  std::vector<float> shared(kElements);
  for (int64_t i = 0; i < kElements; ++i) {
    shared[i] = static_cast<float>(i % 17) - 8.5f;
  }
  int64_t shape[1] = {kElements};
  int64_t strides[1] = {1};
  const tf_tensor shared_view = View(shared.data(), shape, strides);

  Counters counters;
  std::atomic<bool> stop{false};
  std::string expected_error;
  {
    ErrorSink sink;
    const KernelEntry* neg = error_registry.Find("neg", TF_DEVICE_CPU, kF32);
    tf_arg in{};
    in.kind = TF_ARG_TENSOR;
    in.value.tensor = &shared_view;
    Call(*neg, &in, 1, nullptr, 0, &shared_view, &sink);
    expected_error = sink.message;
  }

  // Changes what other threads read, as the host does when torch is found.
  std::thread changer([&] {
    int round = 0;
    while (!stop.load()) {
      SetHostQuery("torch.version", "2.99." + std::to_string(round++ % 7));
      SetLogLevel(round % 2 ? LogLevel::kError : LogLevel::kOff);
      std::this_thread::yield();
    }
  });

  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<float> out(kElements);
      int64_t out_shape[1] = {kElements};
      int64_t out_strides[1] = {1};
      const tf_tensor out_view = View(out.data(), out_shape, out_strides);
      for (int i = 0; i < kIterations; ++i) {
        Registry& registry = (i + t) % 2 ? cpu_registry : example_registry;
        const bool use_add = i % 3 == 0;
        const KernelEntry* k =
            registry.Find(use_add ? "add" : "abs", TF_DEVICE_CPU, kF32);
        if (k == nullptr) {
          counters.wrong.fetch_add(1);
          continue;
        }
        tf_arg inputs[2] = {};
        inputs[0].kind = inputs[1].kind = TF_ARG_TENSOR;
        inputs[0].value.tensor = inputs[1].value.tensor = &shared_view;
        tf_arg alpha{};
        alpha.kind = TF_ARG_FLOAT;
        alpha.value.f = static_cast<double>(t);
        ErrorSink sink;
        tf_status status = use_add
                               ? Call(*k, inputs, 2, &alpha, 1, &out_view, &sink)
                               : Call(*k, inputs, 1, nullptr, 0, &out_view, &sink);
        counters.calls.fetch_add(1);
        bool right = status == TF_OK;
        for (int64_t e = 0; right && e < kElements; ++e) {
          const float x = shared[e];
          const float want = use_add ? x + static_cast<float>(t) * x
                                     : std::fabs(x);
          right = std::fabs(out[e] - want) <= 1e-5f * (1 + std::fabs(want));
        }
        if (!right) counters.wrong.fetch_add(1);

        // A failing kernel: its message lands in this thread's sink only.
        const KernelEntry* neg =
            error_registry.Find("neg", TF_DEVICE_CPU, kF32);
        ErrorSink error_sink;
        if (Call(*neg, inputs, 1, nullptr, 0, &out_view, &error_sink) !=
                TF_ERROR_INVALID_ARGUMENT ||
            error_sink.message != expected_error) {
          counters.wrong.fetch_add(1);
        } else {
          counters.errors_seen.fetch_add(1);
        }

        // Host services as plugins call them from their kernels.
        const char* version = HostApi()->query("torch.version");
        const char* host = HostApi()->query("host.version");
        if (host == nullptr ||
            (version != nullptr && std::strncmp(version, "2.99.", 5) != 0)) {
          counters.wrong.fetch_add(1);
        }
        HostApi()->log(TF_LOG_DEBUG, "threads", "filtered out");
      }
    });
  }
  for (std::thread& w : workers) w.join();
  stop.store(true);
  changer.join();

  const int64_t expected = int64_t{kThreads} * kIterations;
  const bool ok = counters.calls.load() == expected &&
                  counters.errors_seen.load() == expected &&
                  counters.wrong.load() == 0;
  std::cout << "registry threads: " << kThreads << " threads x " << kIterations
            << " iterations, " << counters.calls.load() << " kernel calls, "
            << counters.errors_seen.load() << " error messages intact, "
            << counters.wrong.load() << " wrong\n";
  return ok ? 0 : 1;
}
