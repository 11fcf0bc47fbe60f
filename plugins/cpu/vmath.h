// exp for float32 written so that loops over it vectorise: std::exp is a
// libm call per element, which was most of the time of exp, silu,
// silu_and_mul and softmax.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "half.h"

namespace torchferry::cpu {

// Eight floats as one value (GCC and Clang vector extension): one AVX
// register, or two SSE ones in the baseline build. Used where the
// vectoriser needs help: register tiles, and reductions whose comparisons
// it would otherwise leave scalar.
typedef float Float8 __attribute__((vector_size(32)));

// Cephes' expf: exp(x) = 2^n * exp(r) with n = round(x / ln 2) and
// r = x - n ln 2 in [-ln2/2, ln2/2] (ln 2 split in two so that n * C1 is
// exact), exp(r) by a degree-7 polynomial; within about 1 ulp of exp over
// the whole float32 range. No branches and no float-to-int conversion of a
// possibly NaN value, so the compiler can vectorise a loop around it.
//  - x is clamped to [-105, 89]: below, exp rounds to 0; above, it is inf;
//  - 2^n is applied as two factors 2^(n/2) and 2^(n - n/2), each a normal
//    float, so that results in the subnormal range round once and overflow
//    becomes inf;
//  - NaN stays NaN through the clamps (comparisons with NaN are false) and
//    the polynomial.
inline float ExpF(float x) {
  float t = x < -105.0f ? -105.0f : x;
  t = t > 89.0f ? 89.0f : t;
  // Round t / ln 2 to an integer with the 1.5 * 2^23 trick; the integer is
  // read back from the bits of the sum.
  constexpr float kShifter = 12582912.0f;  // 1.5 * 2^23
  const float shifted = t * 1.44269504088896341f + kShifter;
  const float fn = shifted - kShifter;
  const int32_t n =
      static_cast<int32_t>(FloatBits(shifted) - FloatBits(kShifter));
  float r = t - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * (r * r) + r + 1.0f;
  const int32_t n1 = n >> 1;  // arithmetic shift: floor(n / 2)
  const int32_t n2 = n - n1;
  const float s1 = FloatFromBits(static_cast<uint32_t>(n1 + 127) << 23);
  const float s2 = FloatFromBits(static_cast<uint32_t>(n2 + 127) << 23);
  return y * s1 * s2;
}

// ExpF on eight lanes at once, in place (a reference, not a value, so that
// the baseline build, where Float8 is not one register, has no vector
// arguments whose ABI depends on -mavx). The same steps and constants as
// ExpF, hence the same results; for loops that also reduce what they
// compute, where GCC would not vectorise the scalar form.
typedef int32_t Int8 __attribute__((vector_size(32)));
inline void ExpF8(Float8& v) {
  const Float8 lo = Float8{} - 105.0f;
  const Float8 hi = Float8{} + 89.0f;
  Float8 t = v < lo ? lo : v;
  t = t > hi ? hi : t;
  const Float8 shifter = Float8{} + 12582912.0f;
  const Float8 shifted = t * 1.44269504088896341f + shifter;
  const Float8 fn = shifted - shifter;
  // A cast between vectors of one size reinterprets the bits.
  const Int8 n = (Int8)shifted - (Int8)shifter;
  Float8 r = t - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  Float8 p = Float8{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const Float8 y = p * (r * r) + r + 1.0f;
  const Int8 n1 = n >> 1;
  const Int8 n2 = n - n1;
  const Int8 b1 = (n1 + 127) << 23;
  const Int8 b2 = (n2 + 127) << 23;
  v = y * (Float8)b1 * (Float8)b2;
}

// exp in the accumulate type: ExpF for float32, libm for float64.
template <typename A>
inline A ExpOf(A x) {
  if constexpr (std::is_same_v<A, float>) {
    return ExpF(x);
  } else {
    return std::exp(x);
  }
}

}  // namespace torchferry::cpu
