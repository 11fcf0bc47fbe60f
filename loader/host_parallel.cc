#include "loader/host_parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "loader/host_pool.h"

namespace torchferry {
namespace {

constexpr const char* kBackendNames[kNumParallelBackends] = {"torch", "host",
                                                             "serial"};
// A thread count past this is a misreading, not a machine.
constexpr int32_t kMaxThreads = 4096;

struct State {
  TorchParallel torch;
  std::atomic<int> backend{static_cast<int>(ParallelBackend::kSerial)};
  std::mutex reason_mutex;
  std::string reason = "serial: torch has not been found yet";
  std::atomic<uint64_t> parallel[kNumParallelBackends] = {};
  std::atomic<uint64_t> inline_calls{0};
};

State& Get() {
  static State* state = new State();  // used until exit, by plugins too
  return *state;
}

// Set in a forked child: torch's OpenMP pool hangs there.
std::atomic<bool> g_forked{false};
void MarkForked() { g_forked.store(true); }

int32_t Clamp(int64_t n) {
  return static_cast<int32_t>(std::clamp<int64_t>(n, 1, kMaxThreads));
}

// The host pool's size: torch's thread count (torch.set_num_threads), read
// per call: it is a load of a global.
int32_t HostThreads(const State& s) {
  if (s.torch.thread_count != nullptr) return Clamp(s.torch.thread_count());
  return Clamp(std::thread::hardware_concurrency());
}

bool HasTorchPool(const TorchParallel& t) {
  return t.parallel_for != nullptr && t.get_num_threads != nullptr &&
         t.get_thread_idx != nullptr;
}

// Which backend runs a region now: a forked child's torch regions go to the
// host pool.
ParallelBackend Effective(const State& s) {
  auto b = static_cast<ParallelBackend>(s.backend.load());
  if (b == ParallelBackend::kTorch && g_forked.load()) {
    return ParallelBackend::kHost;
  }
  return b;
}

struct TorchCall {
  const State* state;
  tf_parallel_fn fn;
  void* ctx;
};

// torch calls this once per share, on its pool's threads.
void TorchShare(int64_t begin, int64_t end, void* data) {
  const auto* call = static_cast<const TorchCall*>(data);
  uint32_t index = 0;
  if (call->state->torch.get_thread_idx(&index) != 0) index = 0;
  ShareScope scope(static_cast<int32_t>(index));
  call->fn(begin, end, call->ctx);
}

int32_t Threads(const State& s, ParallelBackend backend) {
  switch (backend) {
    case ParallelBackend::kTorch: {
      uint32_t n = 1;
      if (s.torch.get_num_threads(&n) != 0) return 1;
      return Clamp(n);
    }
    case ParallelBackend::kHost:
      return HostThreads(s);
    case ParallelBackend::kSerial:
      break;
  }
  return 1;
}

// The whole range as one share on the caller: a parallel_for that fn makes
// is nested, and runs inline too, whichever way fn itself was run.
tf_status RunInline(State& s, int64_t begin, int64_t end, tf_parallel_fn fn,
                    void* ctx) {
  s.inline_calls.fetch_add(1, std::memory_order_relaxed);
  if (InsideShare()) {
    fn(begin, end, ctx);
  } else {
    ShareScope scope(0);
    fn(begin, end, ctx);
  }
  return TF_OK;
}

}  // namespace

const char* ParallelBackendName(ParallelBackend backend) {
  return kBackendNames[static_cast<int>(backend)];
}

bool InstallParallel(const TorchParallel& torch, const char* choice,
                     std::string* error) {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, &MarkForked);
    return true;
  }();
  (void)registered;
  const bool has_torch = HasTorchPool(torch);
  const bool automatic = choice == nullptr || choice[0] == '\0' ||
                         std::strcmp(choice, "auto") == 0;
  ParallelBackend backend;
  std::string reason;
  if (automatic) {
    backend = has_torch ? ParallelBackend::kTorch : ParallelBackend::kHost;
    reason = has_torch ? "torch_parallel_for, torch_get_num_threads and "
                         "torch_get_thread_idx resolve in libtorch"
                       : "torch_parallel_for is absent from libtorch (torch "
                         "< 2.10): the host's own pool, sized by "
                         "torch.get_num_threads()";
  } else if (std::strcmp(choice, "torch") == 0) {
    if (!has_torch) {
      *error =
          "parallel backend 'torch' is unavailable: libtorch does not export "
          "torch_parallel_for, torch_get_num_threads and torch_get_thread_idx "
          "(added in torch 2.10)";
      return false;
    }
    backend = ParallelBackend::kTorch;
  } else if (std::strcmp(choice, "host") == 0) {
    backend = ParallelBackend::kHost;
  } else if (std::strcmp(choice, "serial") == 0) {
    backend = ParallelBackend::kSerial;
  } else {
    *error = std::string("unknown parallel backend '") + choice +
             "'; expected 'auto', 'torch', 'host' or 'serial'";
    return false;
  }
  if (!automatic) reason = std::string("forced to '") + choice + "'";
  State& s = Get();
  {
    std::lock_guard<std::mutex> lock(s.reason_mutex);
    s.torch = torch;
    s.reason = reason;
  }
  s.backend.store(static_cast<int>(backend));
  return true;
}

ParallelBackend CurrentParallelBackend() { return Effective(Get()); }

std::string ParallelReason() {
  State& s = Get();
  std::lock_guard<std::mutex> lock(s.reason_mutex);
  if (g_forked.load() &&
      s.backend.load() == static_cast<int>(ParallelBackend::kTorch)) {
    return s.reason +
           "; in this forked child the host's pool serves instead "
           "(torch's OpenMP pool hangs after fork)";
  }
  return s.reason;
}

ParallelCounts GetParallelCounts() {
  State& s = Get();
  ParallelCounts c;
  for (int i = 0; i < kNumParallelBackends; ++i) c.parallel[i] = s.parallel[i];
  c.inline_calls = s.inline_calls;
  return c;
}

void ResetParallelCounts() {
  State& s = Get();
  for (auto& c : s.parallel) c.store(0);
  s.inline_calls.store(0);
}

tf_status ParallelFor(int64_t begin, int64_t end, int64_t grain,
                      tf_parallel_fn fn, void* ctx) noexcept {
  if (fn == nullptr || end < begin) return TF_ERROR_INVALID_ARGUMENT;
  if (begin == end) return TF_OK;
  State& s = Get();
  const uint64_t range =
      static_cast<uint64_t>(end) - static_cast<uint64_t>(begin);
  const uint64_t g = grain < 1 ? 1 : static_cast<uint64_t>(grain);
  const ParallelBackend backend = Effective(s);
  const int32_t threads = InsideShare() ? 1 : Threads(s, backend);
  if (range <= g || threads <= 1) return RunInline(s, begin, end, fn, ctx);
  const uint64_t wanted = range / g + (range % g != 0 ? 1 : 0);
  const auto shares = static_cast<int32_t>(std::min<uint64_t>(wanted, threads));
  if (backend == ParallelBackend::kTorch) {
    TorchCall call{&s, fn, ctx};
    // torch returns an error only when a share threw (fn must not) or its
    // pool failed; some shares may have run, so none is run again.
    if (s.torch.parallel_for(begin, end, static_cast<int64_t>(g), &TorchShare,
                             &call) != 0) {
      return TF_ERROR_INTERNAL;
    }
    s.parallel[static_cast<int>(backend)].fetch_add(1,
                                                    std::memory_order_relaxed);
    return TF_OK;
  } else if (HostPoolRun(begin, end, shares, fn, ctx)) {
    s.parallel[static_cast<int>(backend)].fetch_add(1,
                                                    std::memory_order_relaxed);
    return TF_OK;
  }
  return RunInline(s, begin, end, fn, ctx);
}

int32_t ParallelNumThreads() noexcept {
  State& s = Get();
  return Threads(s, Effective(s));
}

int32_t ParallelThreadIndex() noexcept { return ShareIndex(); }

}  // namespace torchferry
