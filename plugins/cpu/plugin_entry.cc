// The plugin's one exported symbol: negotiates the ABI version with the host
// and hands back the descriptor with the kernel table every kernel file
// contributes to.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "abi/torchferry.h"
#include "isa.h"
#include "kernel_table.h"
#include "parallel.h"

namespace torchferry::cpu {
namespace {

#ifndef TORCHFERRY_CPU_VERSION
#define TORCHFERRY_CPU_VERSION "0.1.0"
#endif

// Joined once, on the first entry call, and kept until the library unloads.
const std::vector<tf_kernel>& AllKernels() {
  static const std::vector<tf_kernel> kernels = [] {
    const KernelList parts[] = {
        ElementwiseKernels(),
        SiluAndMulKernels(),
        ReduceKernels(),
        MatmulKernels(),
        CastKernels(),
        StackKernels(),
        NoopKernels(),
        // attention
        RotaryKernels(),
        AttentionKernels(),
        // embedding.cc, cat.cc
        EmbeddingKernels(),
        CatKernels(),
    };
    std::vector<tf_kernel> joined;
    for (const KernelList& part : parts) {
      joined.insert(joined.end(), part.items, part.items + part.count);
    }
    return joined;
  }();
  return kernels;
}

const tf_plugin* Describe() {
  static const tf_plugin plugin = [] {
    const std::vector<tf_kernel>& kernels = AllKernels();
    tf_plugin p{};
    p.struct_size = sizeof(tf_plugin);
    p.abi_version_major = TF_ABI_VERSION_MAJOR;
    p.abi_version_minor = TF_ABI_VERSION_MINOR;
    p.name = "cpu";
    // The version names the instruction-set tier the kernels run at
    // (isa.h), so that `python -m torchferry info` shows it.
    static const std::string version = std::string(TORCHFERRY_CPU_VERSION) +
                                       " (" + TierName(ActiveTier()) +
                                       " kernels)";
    p.version = version.c_str();
    p.kind = TF_PLUGIN_NATIVE;
    p.init = nullptr;
    p.set_option = nullptr;
    p.kernels = kernels.data();
    p.num_kernels = kernels.size();
    return p;
  }();
  return &plugin;
}

void Log(const tf_host_api* host, int32_t level, const char* message) {
  if (host != nullptr && host->log != nullptr) host->log(level, "cpu", message);
}

// A typo in TORCHFERRY_CPU_ISA would otherwise be ignored in silence, as the
// host warns about its own TORCHFERRY_* variables.
void WarnAboutIsaSetting(const tf_host_api* host) {
  const char* value = std::getenv(kIsaEnvVar);
  if (IsaSettingValid(value)) return;
  const std::string message =
      std::string(kIsaEnvVar) + "='" + value +
      "' is not an instruction-set choice: expected 'baseline', 'avx2' or "
      "unset (case-sensitive); using the CPU's best (" +
      TierName(ActiveTier()) + ")";
  Log(host, TF_LOG_WARN, message.c_str());
}

}  // namespace
}  // namespace torchferry::cpu

extern "C" TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  using torchferry::cpu::Log;
  // Every 1.x host has what the kernels need; a 1.2 host also lends its
  // threads (parallel.h), an older one leaves every kernel serial.
  if (host_abi_major != TF_ABI_VERSION_MAJOR) {
    char message[160];
    std::snprintf(message, sizeof message,
                  "expected a host of ABI major version %d, found %u; install "
                  "the cpu plugin built for this host",
                  TF_ABI_VERSION_MAJOR, static_cast<unsigned>(host_abi_major));
    Log(host, TF_LOG_ERROR, message);
    return nullptr;
  }
  try {
    torchferry::cpu::WarnAboutIsaSetting(host);
    torchferry::cpu::SetParallelHost(host_abi_minor, host);
    return torchferry::cpu::Describe();
  } catch (const std::exception& e) {
    // Only allocation can throw here; nothing may cross the C ABI.
    Log(host, TF_LOG_ERROR, e.what());
    return nullptr;
  } catch (...) {
    Log(host, TF_LOG_ERROR, "unexpected non-standard exception");
    return nullptr;
  }
}
