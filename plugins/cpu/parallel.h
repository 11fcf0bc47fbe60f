// Splitting a kernel's independent outputs (elements, lines, output columns)
// over the host's intra-op threads (tf_host_api.parallel_for, ABI 1.2).
//
// Every kernel splits only where the shares write disjoint outputs and each
// output is computed by the same code whatever share it falls in, so results
// do not depend on the thread count. A call whose work is below kParallelWork
// never reaches the host's service: small calls cost what they did before.
// An older host (ABI < 1.2) has no service; then everything runs serially.
#pragma once

#include <atomic>
#include <cstdint>

#include "abi/torchferry.h"

namespace torchferry::cpu {

// The least work, in float32-element steps (one add, one multiply-accumulate
// of a gemm), worth a share of its own. Measured on a 2-core Xeon: a pool
// wake-up costs about 5-10 us, and [4096] float32 adds take about 1 us, so a
// share below ~32k steps cannot pay for its thread. A call is split only when
// it has at least two such shares, i.e. 1 << 16 steps: the door releases the
// GIL from that much work on (core/python/dispatch.cc, kReleaseGilWork, whose
// work measure is never below the steps counted here), so no parallel kernel
// runs with the GIL held.
constexpr int64_t kShareWork = int64_t{1} << 15;
constexpr int64_t kParallelWork = 2 * kShareWork;

// Remembers the host's service from the entry function (NULL when the host
// predates it). Called before any kernel runs.
void SetParallelHost(uint32_t host_abi_minor, const tf_host_api* host);

// A failure the host's parallel_for reported on this thread since the last
// take (TF_OK if none), cleared by taking it. torch's pool may fail after
// some shares ran, so a kernel cannot run again (an in-place op would apply
// twice): the call fails instead (kernel_table.h, SkipEmptyOutputThenRun).
namespace detail {
void NoteParallelFailure(tf_status status);
tf_status TakeThreadFailure();
// Set once any thread noted a failure. Every kernel call takes the failure,
// and a thread-local in a dlopen'd library costs a __tls_get_addr call: until
// a failure ever happens, this inline relaxed load is all a call pays. A
// thread's own note precedes its own take, so it always sees its own.
extern std::atomic<bool> g_any_failure;
}  // namespace detail
inline tf_status TakeParallelFailure() {
  if (!detail::g_any_failure.load(std::memory_order_relaxed)) return TF_OK;
  return detail::TakeThreadFailure();
}

// The service, or NULL when the host has none.
const tf_host_api* ParallelHost();

namespace detail {
template <typename Body>
void RunShare(int64_t begin, int64_t end, void* ctx) {
  (*static_cast<const Body*>(ctx))(begin, end);
}
}  // namespace detail

// Calls body(begin, end) over contiguous shares covering [0, n) exactly once,
// where each index costs about `cost` steps (>= 1). Runs body(0, n) on the
// calling thread when the whole call is under kParallelWork, when the host
// has no service, or when it has one thread. body must not throw and must
// write only outputs of its own indices.
template <typename Body>
void ParallelFor(int64_t n, int64_t cost, const Body& body) {
  if (n <= 0) return;
  if (cost < 1) cost = 1;
  const tf_host_api* host = ParallelHost();
  // n * cost without overflow: compare against the bound instead.
  const bool small = n < kParallelWork / cost + (kParallelWork % cost != 0);
  if (small || n < 2 || host == nullptr || host->num_threads() <= 1) {
    body(int64_t{0}, n);
    return;
  }
  const int64_t grain = (kShareWork + cost - 1) / cost;
  const tf_status status = host->parallel_for(
      0, n, grain, &detail::RunShare<Body>, const_cast<Body*>(&body));
  if (status != TF_OK) detail::NoteParallelFailure(status);
}

// ParallelFor over [0, n) in blocks of `block` indices, so that every share
// starts on a multiple of `block` (the vector loops then see the same groups
// of elements whatever the split); body(begin, end) as above.
template <typename Body>
void ParallelForBlocks(int64_t n, int64_t block, int64_t cost,
                       const Body& body) {
  const int64_t blocks = (n + block - 1) / block;
  ParallelFor(blocks, cost * block, [&](int64_t b0, int64_t b1) {
    const int64_t end = b1 * block < n ? b1 * block : n;
    body(b0 * block, end);
  });
}

}  // namespace torchferry::cpu
