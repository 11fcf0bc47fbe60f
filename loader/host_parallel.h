// The host's parallel_for service (tf_host_api, ABI 1.2): torch's intra-op
// pool where torch exports one, else the host's own pool, else serial. The
// loader cannot see torch, so the layer that finds libtorch resolves torch's
// functions and installs them here (InstallParallel).
#pragma once

#include <cstdint>
#include <string>

#include "abi/torchferry.h"

namespace torchferry {

enum class ParallelBackend : int { kTorch = 0, kHost = 1, kSerial = 2 };
constexpr int kNumParallelBackends = 3;

const char* ParallelBackendName(ParallelBackend backend);

// torch's functions, each NULL where this torch does not export it. The first
// three are the stable C shim of torch >= 2.10 (an AOTITorchError, 0 for
// success, is an int32_t); thread_count is at::get_num_threads(), which
// every torch exports and which follows torch.set_num_threads.
struct TorchParallel {
  int32_t (*parallel_for)(int64_t begin, int64_t end, int64_t grain,
                          tf_parallel_fn fn, void* ctx) = nullptr;
  int32_t (*get_num_threads)(uint32_t* out) = nullptr;
  int32_t (*get_thread_idx)(uint32_t* out) = nullptr;
  int (*thread_count)() = nullptr;
};

// Installs torch's functions and picks the backend: `choice` is "auto" (or
// NULL or empty: torch where all three shim functions resolve, else host),
// "torch", "host" or "serial". Returns false with the reason in `error` for
// an unknown choice or "torch" where torch lacks the functions; the backend
// is then unchanged. Until a first successful call the service is serial.
bool InstallParallel(const TorchParallel& torch, const char* choice,
                     std::string* error);

ParallelBackend CurrentParallelBackend();
// Why the backend serves, in words (for `python -m torchferry info`).
std::string ParallelReason();

struct ParallelCounts {
  // Regions split over several threads, per backend (kSerial stays 0).
  uint64_t parallel[kNumParallelBackends] = {};
  // Calls that ran fn once over the whole range on the caller's thread:
  // range within one grain, one thread, nested, serial backend, or a second
  // caller while the host pool is busy.
  uint64_t inline_calls = 0;
};
ParallelCounts GetParallelCounts();
void ResetParallelCounts();

// The tf_host_api entries. After fork() the child runs torch's regions on
// the host pool: torch's OpenMP pool does not survive fork (a forked child
// of a parent that used it hangs in its next region).
tf_status ParallelFor(int64_t begin, int64_t end, int64_t grain,
                      tf_parallel_fn fn, void* ctx) noexcept;
int32_t ParallelNumThreads() noexcept;
int32_t ParallelThreadIndex() noexcept;

}  // namespace torchferry
