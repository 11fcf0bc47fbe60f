// exp for float32 written so that loops over it vectorise: std::exp is a
// libm call per element, which was most of the time of exp, silu,
// silu_and_mul and softmax.
//
// Why not SLEEF (Debian's 3.5, whose kernels torch uses too): measured on a
// model-167 Xeon, one thread, out = exp(x - 1) and its sum over 256 to 32768
// floats, SLEEF's Sleef_expf8_u10avx2 took 0.474 ns an element against 0.507
// for ExpF's steps on eight lanes here, Sleef_expf16_u10avx512f 0.298
// against 0.296-0.305 for them on sixteen; both within 1 ulp of exp (0.97 and
// 0.99 at most). Highway's own Exp took 1.00 (AVX2) and 0.33 (AVX-512). SLEEF
// is at most 7% ahead, and it is a call per vector, which the elementwise
// engine's scalar functors (exp, silu, silu_and_mul) cannot make, whereas ExpF
// inlines and vectorises inside them; and Debian ships it as a 2 MB shared
// library only, which the wheel would have to carry.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "isa.h"

#if TF_CPU_HAVE_AVX2_PATH
#include <immintrin.h>
#endif

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

// A cast between vectors of one size reinterprets the bits. I is the int32
// vector of V's size.
typedef int32_t Int8 __attribute__((vector_size(32)));
// Sixteen lanes: one AVX-512 register, for loops of the AVX-512 tier only.
typedef float F32x16 __attribute__((vector_size(64)));
typedef int32_t I32x16 __attribute__((vector_size(64)));

// ExpF's reduction and polynomial on a vector of lanes at once, in place (a
// reference, not a value, so that a build where V is not one register has
// no vector arguments whose ABI depends on -mavx), for x <= 0 or NaN
// (softmax's x - max), whose results are summed with at least one 1, so
// that a subnormal exp is noise: below -87.33654 (about ln(FLT_MIN)) the
// lane is 0 (exp is at most FLT_MIN, 1.2e-38, there); above, n >= -126 and
// the result is normal, so 2^n is one float and one multiply applies it
// exactly. No upper clamp, and y = (p r + 1) r + 1, as ExpScalef has it: 18
// instructions where ExpF's steps on lanes (the vector exp before this one)
// took 25. softmax on AVX2 (Zen 3), torchferry / torch, float32 [1, 4096]
// 0.57 -> 0.42, [8, 4096] 0.66 -> 0.45, float16 [8, 4096] 0.66 -> 0.50. Within
// 0.89 ulp of exp over [-87.33654, 0] where multiply-adds are fused, as in the
// AVX2 tier, 1.12 where not (tests/cpu/vmath_test.cc); exp(-inf) = 0; NaN
// stays NaN.
template <typename V, typename I>
inline void ExpAtMostZeroLanes(V& v) {
  const V lo = V{} - 87.33654f;
  const auto flush = v < lo;  // false for NaN, which passes through
  const V shifter = V{} + 12582912.0f;
  const V shifted = v * 1.44269504088896341f + shifter;
  const V fn = shifted - shifter;
  V r = v - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  V p = V{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const V y = (p * r + 1.0f) * r + 1.0f;
  // (n + 127) << 23, n being the low bits of shifted less shifter's.
  const I biased = (I)shifted - ((I)shifter - 127);
  v = flush ? V{} : y * (V)(biased << 23);
}

#if TF_CPU_HAVE_AVX2_PATH
// ExpF on sixteen lanes with AVX-512's vscalefps, for the AVX-512 tier:
// the same clamps, reduction and polynomial coefficients (evaluated in
// Horner form to the end, so results may differ from ExpF by an ulp),
// but n is rounded by vrndscaleps and 2^n applied by one scalef, which
// rounds once (as the two factors do) and is exact elsewhere: 14
// instructions in place of 25. Within 0.89 ulp of exp over 67M arguments in
// [-110, 90] (ExpF's steps on lanes 1.01); exp(-inf) = 0, exp(+inf) = inf, NaN
// stays NaN. kAtMostZero: the caller knows x <= 0 or NaN (softmax's x - max),
// so the upper clamp, which only turns +inf into inf rather than NaN, is
// skipped.
template <bool kAtMostZero = false>
TF_CPU_AVX512 inline void ExpScalef(F32x16& v) {
  // The zero-masking forms with every lane selected: GCC 12 warns that the
  // plain forms' undefined pass-through operand may be used uninitialized.
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512 x = (__m512)v;
  // max(lo, x) and min(hi, t) return their second operand when either is
  // NaN, so NaN passes through.
  __m512 t = _mm512_maskz_max_ps(kAll, _mm512_set1_ps(-105.0f), x);
  if constexpr (!kAtMostZero) {
    t = _mm512_maskz_min_ps(kAll, _mm512_set1_ps(89.0f), t);
  }
  const __m512 fn = _mm512_maskz_roundscale_ps(
      kAll, _mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), t);
  r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  // y = (p r + 1) r + 1 rather than ExpF's p r^2 + r + 1: one
  // instruction fewer, and closer to exp (0.89 ulp at most over 67M
  // arguments in [-110, 90], against 1.01).
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 y = _mm512_fmadd_ps(_mm512_fmadd_ps(p, r, one), r, one);
  v = (F32x16)_mm512_maskz_scalef_ps(kAll, y, fn);
}
#endif

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
