// The plugin's one exported symbol. It refuses a host of another ABI major,
// and under a torch release other than the one it was built against it
// answers with a descriptor whose init fails with both versions named, so
// that the loader lists the plugin as skipped with the reason.
#include <atomic>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>

#include "abi/torchferry.h"
#include "kernel_table.h"
#include "strategy.h"
#include "torch_version.h"

namespace torchferry::aten {
namespace {

constexpr char kPluginName[] = "aten";
constexpr char kPluginVersion[] =
    "0.1.0 (built against torch " TORCHFERRY_ATEN_TORCH_VERSION ")";

// Set by every call of the entry, before any init, option or kernel.
std::atomic<const tf_host_api*> host_api{nullptr};
// Why the refusing descriptor's init fails; written by the entry only.
std::string refusal_reason;

void Log(int32_t level, const std::string& message) {
  const tf_host_api* host = host_api.load(std::memory_order_acquire);
  if (host != nullptr && host->log != nullptr) {
    host->log(level, kPluginName, message.c_str());
  }
}

tf_status SetError(void* error_sink, tf_status status, const char* message) {
  return host_api.load(std::memory_order_acquire)
      ->set_error(error_sink, status, message);
}

tf_status InitServing(void* error_sink) {
  try {
    Strategy strategy = kDefaultStrategy;
    const char* chosen = std::getenv(kStrategyEnvVar);
    if (chosen != nullptr && *chosen != '\0') {
      if (const std::optional<Strategy> parsed = ParseStrategy(chosen)) {
        strategy = *parsed;
      } else {
        // A typo in a tuning knob should not cost the user every fallback
        // kernel; say so loudly and go on with the default.
        Log(TF_LOG_WARN, std::string(kStrategyEnvVar) + "='" + chosen +
                             "' is not a strategy: expected " +
                             kStrategyChoices + "; using " +
                             StrategyName(kDefaultStrategy));
      }
    }
    SetStrategy(strategy);
    Log(TF_LOG_DEBUG, std::string("wrapper strategy: ") +
                          StrategyName(strategy) + "; built against torch " +
                          kBuiltTorchVersion);
    return TF_OK;
  } catch (...) {
    return SetError(error_sink, TF_ERROR_OUT_OF_MEMORY,
                    "out of memory while reading the strategy");
  }
}

tf_status InitRefusing(void* error_sink) {
  return SetError(error_sink, TF_ERROR_UNSUPPORTED, refusal_reason.c_str());
}

tf_status SetOption(const char* key, const char* value, void* error_sink) {
  try {
    const std::string_view key_text = key != nullptr ? key : "";
    const std::string_view value_text = value != nullptr ? value : "";
    if (key_text != "strategy") {
      const std::string message = "unknown option '" + std::string(key_text) +
                                  "': the aten plugin takes only 'strategy' (" +
                                  kStrategyChoices + ")";
      return SetError(error_sink, TF_ERROR_INVALID_ARGUMENT, message.c_str());
    }
    const std::optional<Strategy> strategy = ParseStrategy(value_text);
    if (!strategy) {
      const std::string message = "option 'strategy' expects " +
                                  std::string(kStrategyChoices) + ", got '" +
                                  std::string(value_text) + "'";
      return SetError(error_sink, TF_ERROR_INVALID_ARGUMENT, message.c_str());
    }
    SetStrategy(*strategy);
    return TF_OK;
  } catch (...) {
    return SetError(error_sink, TF_ERROR_OUT_OF_MEMORY,
                    "out of memory while setting an option");
  }
}

tf_plugin Descriptor(tf_status (*init)(void*), const KernelTable* table) {
  tf_plugin plugin{};
  plugin.struct_size = sizeof(tf_plugin);
  plugin.abi_version_major = TF_ABI_VERSION_MAJOR;
  plugin.abi_version_minor = TF_ABI_VERSION_MINOR;
  plugin.name = kPluginName;
  plugin.version = kPluginVersion;
  plugin.kind = TF_PLUGIN_FALLBACK;
  plugin.init = init;
  plugin.set_option = SetOption;
  plugin.kernels = table != nullptr ? table->kernels.data() : nullptr;
  plugin.num_kernels = table != nullptr ? table->kernels.size() : 0;
  return plugin;
}

const tf_plugin* Entry(uint32_t host_abi_major, const tf_host_api* host) {
  // The 1.0 table ends with query; a smaller one is not a host of major 1.
  // (Not sizeof(tf_host_api): that grows with every minor, and would refuse
  // the older hosts this plugin can serve.)
  if (host == nullptr || host->struct_size < TF_HOST_API_V1_0_SIZE ||
      host->set_error == nullptr) {
    return nullptr;
  }
  host_api.store(host, std::memory_order_release);
  if (host_abi_major != TF_ABI_VERSION_MAJOR) {
    Log(TF_LOG_WARN, "expected a host of ABI major " +
                         std::to_string(TF_ABI_VERSION_MAJOR) + ", found " +
                         std::to_string(host_abi_major) +
                         "; use an aten plugin built for that host");
    return nullptr;
  }
  const char* running =
      host->query != nullptr ? host->query("torch.version") : nullptr;
  std::string mismatch = TorchVersionMismatch(kBuiltTorchVersion, running);
  if (!mismatch.empty()) {
    refusal_reason = std::move(mismatch);
    static const tf_plugin refusing = Descriptor(InitRefusing, nullptr);
    return &refusing;
  }
  static const tf_plugin serving = Descriptor(InitServing, &Kernels());
  return &serving;
}

}  // namespace
}  // namespace torchferry::aten

extern "C" TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_minor;  // any minor of major 1 reads our v1 descriptor
  try {
    return torchferry::aten::Entry(host_abi_major, host);
  } catch (...) {
    // Only allocation can fail here; without a descriptor there is no init
    // to carry a message, and the loader reports a NULL entry result.
    return nullptr;
  }
}

static_assert(
    std::is_same_v<decltype(&torchferry_plugin_entry), tf_plugin_entry_fn>,
    "the entry must have the ABI's entry type");
