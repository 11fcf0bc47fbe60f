// The names of the v1 ops (abi/ABI.md, "The v1 ops"), in ONE place: the
// loader validates plugin kernels against this list and keys its registry by
// an op's index here; core builds its op table on the same indices.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace torchferry {

// The order is the ABI.md table's order. Appending is the only allowed change:
// an op's index is part of the registry key.
enum class OpId : uint8_t {
  kAbs,
  kNeg,
  kExp,
  kSilu,
  kAdd,
  kMul,
  kClamp,
  kStack,
  kCast,
  kSiluAndMul,
  kRmsNorm,
  kSoftmax,
  kMatmul,
  kNoop,
  kCount,
};

inline constexpr std::array<std::string_view, static_cast<size_t>(OpId::kCount)>
    kOpNames = {
        "abs",      "neg",     "exp",    "silu", "add",
        "mul",      "clamp",   "stack",  "cast", "silu_and_mul",
        "rms_norm", "softmax", "matmul", "noop",
};

// The index of `op` in kOpNames, or -1 when ABI v1 has no such op.
constexpr int OpIndex(std::string_view op) {
  for (size_t i = 0; i < kOpNames.size(); ++i) {
    if (kOpNames[i] == op) return static_cast<int>(i);
  }
  return -1;
}

constexpr std::string_view OpName(OpId op) {
  return kOpNames[static_cast<size_t>(op)];
}

static_assert(OpIndex("abs") == static_cast<int>(OpId::kAbs));
static_assert(OpIndex("silu_and_mul") == static_cast<int>(OpId::kSiluAndMul));
static_assert(OpIndex("noop") == static_cast<int>(OpId::kNoop));

}  // namespace torchferry
