#include "parallel.h"

#include <atomic>

namespace torchferry::cpu {
namespace {
std::atomic<const tf_host_api*> g_host{nullptr};
}  // namespace

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
