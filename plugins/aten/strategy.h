// How the plugin turns a tensor view into the at::Tensor that ATen's
// functions take. One strategy holds for the whole process; the user picks it
// with TORCHFERRY_ATEN_STRATEGY (read at init) or set_option("strategy").
#pragma once

#include <optional>
#include <string_view>

namespace torchferry::aten {

enum class Strategy {
  // A fresh non-owning at::from_blob wrapper per tensor per call.
  kFromBlob,
  // The caller's own at::Tensor (tf_tensor.source) when it describes the view
  // exactly; a pooled wrapper otherwise.
  kSource,
  // Cached wrappers per kernel and argument slot, rebound to each call's data.
  kPool,
};

// Measured by tests/aten/strategy_benchmark.cc (torch 2.13 CPU, a loaded
// 2-core machine): binding one tensor costs about 130 ns with from_blob,
// 40 ns with the pool and 33 ns with the source; abs on an [8, 64] float32
// tensor takes about 1.3 us with from_blob and 0.5 us with either of the
// others. The source wins where the host gives one; the pool covers the rest.
inline constexpr Strategy kDefaultStrategy = Strategy::kSource;
inline constexpr char kStrategyEnvVar[] = "TORCHFERRY_ATEN_STRATEGY";
inline constexpr char kStrategyChoices[] = "from_blob, source or pool";

std::optional<Strategy> ParseStrategy(std::string_view name);
const char* StrategyName(Strategy strategy);

// Read on every call, written only by init and set_option, which the ABI
// never runs concurrently with a kernel of this plugin.
Strategy CurrentStrategy();
void SetStrategy(Strategy strategy);

}  // namespace torchferry::aten
