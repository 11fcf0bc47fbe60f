#include "parallel.h"

#include <atomic>

namespace torchferry::cpu {
namespace {
std::atomic<const tf_host_api*> g_host{nullptr};
// Per calling thread: a kernel and the ParallelFor calls it makes run on
// the thread the host called it on.
thread_local tf_status t_parallel_failure = TF_OK;
}  // namespace

std::atomic<bool> detail::g_any_failure{false};

tf_status detail::TakeThreadFailure() {
  const tf_status status = t_parallel_failure;
  t_parallel_failure = TF_OK;
  return status;
}

void detail::NoteParallelFailure(tf_status status) {
  if (t_parallel_failure == TF_OK) t_parallel_failure = status;
  g_any_failure.store(true, std::memory_order_relaxed);
}

void SetParallelHost(uint32_t host_abi_minor, const tf_host_api* host) {
  // A 1.0 or 1.1 host's table ends before these fields: never read them.
  const bool has_service = host != nullptr && host_abi_minor >= 2 &&
                           host->struct_size >= TF_HOST_API_V1_2_SIZE &&
                           host->parallel_for != nullptr &&
                           host->num_threads != nullptr;
  g_host.store(has_service ? host : nullptr, std::memory_order_release);
}

const tf_host_api* ParallelHost() {
  return g_host.load(std::memory_order_acquire);
}

}  // namespace torchferry::cpu
