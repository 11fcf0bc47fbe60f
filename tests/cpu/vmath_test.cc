// The vector exp of the CPU plugin's softmax (plugins/cpu/vmath.h), against
// libm in double, over every float32 it keeps and the edges it flushes. It
// is compiled twice, for baseline x86-64 and (where the CPU has them) for
// AVX2 with FMA, as the plugin's tiers compile it: the compiler may fuse a
// multiply and an add into one FMA in the second, which rounds differently.
#include "plugins/cpu/vmath.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

using torchferry::cpu::ExpAtMostZeroLanes;
using torchferry::cpu::Float8;
using torchferry::cpu::Int8;

namespace {

void ExpBaseline(const float* x, float* out, size_t n) {
  for (size_t i = 0; i + 8 <= n; i += 8) {
    Float8 v;
    std::memcpy(&v, x + i, sizeof v);
    ExpAtMostZeroLanes<Float8, Int8>(v);
    std::memcpy(out + i, &v, sizeof v);
  }
}

#if TF_CPU_HAVE_AVX2_PATH
TF_CPU_AVX2 TF_CPU_FLATTEN void ExpAvx2(const float* x, float* out, size_t n) {
  for (size_t i = 0; i + 8 <= n; i += 8) {
    Float8 v;
    std::memcpy(&v, x + i, sizeof v);
    ExpAtMostZeroLanes<Float8, Int8>(v);
    std::memcpy(out + i, &v, sizeof v);
  }
}
#endif

// The distance in units in the last place of `got` from the exact `want`.
double Ulps(float got, double want) {
  const float near = static_cast<float>(want);
  const double ulp = std::nextafter(near, std::numeric_limits<float>::max()) -
                     static_cast<double>(near);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

using ExpFn = void (*)(const float*, float*, size_t);

// Measured at most 1.12 ulp without FMA (at x = -50.2226), 0.89 with (at
// x = -5.89141).
constexpr double kUlps = 1.25;

void CheckTier(ExpFn exp) {
  // Every 127th float32 from -87.33654 up to 0 (about 9M of them), so that
  // every exponent and mantissa region is visited.
  std::vector<float> x;
  uint32_t bits;
  const float lo = -87.33654f;
  std::memcpy(&bits, &lo, sizeof bits);
  for (uint32_t b = bits; b > 0x80000000u && b <= bits; b -= 127) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    x.push_back(f);
  }
  x.push_back(0.0f);
  x.push_back(-0.0f);
  while (x.size() % 8 != 0) x.push_back(-1.0f);
  std::vector<float> out(x.size());
  exp(x.data(), out.data(), x.size());
  double worst = 0;
  float worst_at = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double u = Ulps(out[i], std::exp(static_cast<double>(x[i])));
    if (u > worst) worst = u, worst_at = x[i];
  }
  INFO("worst at x = " << worst_at << ": " << worst << " ulp");
  CHECK(worst <= kUlps);

  // Below the smallest normal result: 0. -inf (a masked score) is 0, NaN
  // stays NaN.
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float edge[8] = {-87.3366f, -100.0f, -1e30f,  -inf,
                   nan,       0.0f,    -1e-30f, -87.3f};
  float got[8];
  exp(edge, got, 8);
  for (int i = 0; i < 4; ++i) {
    INFO("x = " << edge[i]);
    CHECK(got[i] == 0.0f);
  }
  CHECK(std::isnan(got[4]));
  CHECK(got[5] == 1.0f);
  CHECK(got[6] == 1.0f);
  CHECK(Ulps(got[7], std::exp(static_cast<double>(edge[7]))) <= kUlps);
}

}  // namespace

TEST_CASE("exp for x <= 0 is within 1 ulp and flushes below FLT_MIN",
          "[vmath]") {
  SECTION("baseline") { CheckTier(ExpBaseline); }
#if TF_CPU_HAVE_AVX2_PATH
  SECTION("avx2") {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
      WARN("this CPU has no AVX2 with FMA: its tier is not checked");
      return;
    }
    CheckTier(ExpAvx2);
  }
#endif
}
