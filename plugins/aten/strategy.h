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

// Measured by tests/aten/strategy_benchmark.cc: reusing the caller's tensor
// costs nothing per tensor, and the pool covers views without one.
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
