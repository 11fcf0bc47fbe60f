// How the CPU kernels sum long runs without losing what they add: a float32
// accumulator that keeps adding stops growing once its total is 2**24 times
// the terms (and loses accuracy long before), so no accumulator adds more
// than kSerialTerms terms in sequence; the partial sums are combined in
// float64, whose own rounding is then negligible against float32's. The
// error bound is that of a blocked sum, which is torch's order or better.
#pragma once

#include <cstdint>

namespace torchferry::cpu {

// Terms one accumulator adds in sequence before it is folded into the
// float64 total. A row of 256 values of randn + 3 summed in order in
// float32 is off by 2e-7 of its sum at most over 20 draws (4096: 2.3e-6,
// torch's own error on such rows is 1e-7 to 4e-6).
constexpr int64_t kSerialTerms = 256;

// A loop with `lanes` independent accumulators folds after this many
// elements, kSerialTerms for each accumulator.
constexpr int64_t ChunkFor(int64_t lanes) { return lanes * kSerialTerms; }

// The sum over [0, n) of partial(start, len), taken on consecutive chunks
// of at most `chunk` elements, combined in float64.
template <typename F>
inline double SumInChunks(int64_t n, int64_t chunk, const F& partial) {
  double total = 0;
  for (int64_t i0 = 0; i0 < n; i0 += chunk) {
    total += static_cast<double>(partial(i0, n - i0 < chunk ? n - i0 : chunk));
  }
  return total;
}

}  // namespace torchferry::cpu
