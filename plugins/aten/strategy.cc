#include "strategy.h"

#include <atomic>

namespace torchferry::aten {
namespace {

// Atomic although set_option never races a kernel: a kernel on another
// thread may still read it while init runs for a second host registry.
std::atomic<Strategy> current_strategy{kDefaultStrategy};

}  // namespace

std::optional<Strategy> ParseStrategy(std::string_view name) {
  if (name == "from_blob") return Strategy::kFromBlob;
  if (name == "source") return Strategy::kSource;
  if (name == "pool") return Strategy::kPool;
  return std::nullopt;
}

const char* StrategyName(Strategy strategy) {
  switch (strategy) {
    case Strategy::kFromBlob:
      return "from_blob";
    case Strategy::kSource:
      return "source";
    case Strategy::kPool:
      return "pool";
  }
  return "unknown";
}

Strategy CurrentStrategy() {
  return current_strategy.load(std::memory_order_relaxed);
}

void SetStrategy(Strategy strategy) {
  current_strategy.store(strategy, std::memory_order_relaxed);
}

}  // namespace torchferry::aten
