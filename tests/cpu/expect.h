// Comparing a kernel's output with a reference computed in double: per-dtype
// tolerances, NaN and infinity handled exactly, and a report that names the
// first mismatching elements instead of one bare failed CHECK per element.
#pragma once

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dtype_reference.h"
#include "test_tensor.h"

namespace torchferry::cpu_test {

// |got - want| <= abs + rel * scale, where scale is |want| unless the test
// knows a larger magnitude the result was computed from (a sum's terms).
struct Tolerance {
  double rel;
  double abs;
};

inline constexpr Tolerance kExact = {0, 0};

// One rounding of the result to the dtype plus a few float32 (or float64)
// ulps for the arithmetic before it.
inline Tolerance PointwiseTolerance(tf_dtype d) {
  if (!IsFloat(d)) return kExact;
  if (d.code == TF_DTYPE_BFLOAT) return {8e-3, 1e-30};
  if (d.bits == 16) return {1e-3, 1e-7};
  if (d.bits == 32) return {1e-6, 1e-37};
  return {1e-13, 1e-300};
}

// The unit roundoff of the dtype a result is stored in.
inline double StorageEpsilon(tf_dtype d) {
  if (d.code == TF_DTYPE_BFLOAT) return std::ldexp(1.0, -8);
  if (d.bits == 16) return std::ldexp(1.0, -11);
  if (d.bits == 32) return std::ldexp(1.0, -24);
  return std::ldexp(1.0, -53);
}

// The unit roundoff of the type the cpu kernels accumulate in.
inline double AccumulateEpsilon(tf_dtype d) {
  return d.bits == 64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
}

inline bool Close(double got, double want, Tolerance tol, double scale) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= tol.abs + tol.rel * scale;
}

// Checks every element of `out` against `want` (logical order). `scales`,
// when given, replaces |want| as each element's magnitude.
inline void ExpectValues(const TestTensor& out, const std::vector<double>& want,
                         Tolerance tol,
                         const std::vector<double>& scales = {}) {
  REQUIRE(static_cast<int64_t>(want.size()) == out.numel());
  int mismatches = 0;
  std::ostringstream report;
  report.precision(17);
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double got = out.Get(i);
    const double scale = scales.empty() ? std::fabs(want[i]) : scales[i];
    if (Close(got, want[i], tol, scale)) continue;
    if (++mismatches <= 8) {
      report << "  [" << i << "] got " << got << ", want " << want[i]
             << " (tolerance " << tol.abs + tol.rel * scale << ")\n";
    }
  }
  INFO(DtypeName(out.dtype())
       << ": " << mismatches << " of " << out.numel() << " elements differ\n"
       << report.str());
  CHECK(mismatches == 0);
  // A kernel must never write outside its output view.
  CHECK(out.GuardIntact());
}

// Deterministic values in [lo, hi] that the dtype holds exactly: integers
// for integer dtypes, 0/1 for bool, rounded floats otherwise.
inline void FillRandom(TestTensor& t, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  const tf_dtype d = t.dtype();
  t.Fill([&](int64_t) {
    const double v = uniform(rng);
    if (d.code == TF_DTYPE_BOOL) return v > (lo + hi) / 2 ? 1.0 : 0.0;
    if (!IsFloat(d)) return std::round(v);
    return RoundTo(d, v);
  });
}

// A Catch section-like label for loops over cases.
inline std::string Describe(const std::string& op, tf_dtype d,
                            const std::string& what) {
  return op + " " + DtypeName(d) + " " + what;
}

}  // namespace torchferry::cpu_test
