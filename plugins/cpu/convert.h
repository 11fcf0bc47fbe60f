// Block conversions between the 16-bit float formats and float32, for loops
// that widen a block of inputs into a float32 stack buffer, compute there
// and narrow the results back in one pass. They give bit for bit the results
// of HalfToFloat/FloatToHalf and BFloat16ToFloat/FloatToBFloat16 in half.h
// (round to nearest even, NaN stays NaN and quiet), only vectorised.
#pragma once

#include <cstdint>
#include <type_traits>

#include "dtype.h"
#include "half.h"
#include "isa.h"

#if TF_CPU_HAVE_AVX2_PATH
#include <immintrin.h>
#endif

namespace torchferry::cpu {

// The float32 bits of a float16 without branches, so that the loop
// vectorises: rebias the exponent, give inf/NaN the full float32 exponent,
// and renormalise subnormals with one exact float subtraction.
inline uint32_t HalfBitsToFloatBits(uint32_t h) {
  const uint32_t shifted = (h & 0x7fffu) << 13;
  const uint32_t exponent = shifted & 0x0f800000u;
  uint32_t bits = shifted + 0x38000000u;  // exponent + (127 - 15)
  bits = exponent == 0x0f800000u ? bits + 0x38000000u : bits;
  // Zero or subnormal: mantissa * 2^-24 is (2^-14 + mantissa * 2^-24) - 2^-14,
  // exact in float32.
  const float subnormal = FloatFromBits(bits + 0x00800000u) - 0x1p-14f;
  bits = exponent == 0 ? FloatBits(subnormal) : bits;
  return bits | ((h & 0x8000u) << 16);
}

// FloatToBFloat16 without branches.
inline uint16_t FloatToBFloat16Bits(float f) {
  const uint32_t u = FloatBits(f);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u >> 16) | 0x0040u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan
                                                               : rounded);
}

#if TF_CPU_HAVE_AVX2_PATH
// F16C converts eight at a time; vcvtps2ph with imm 0 rounds to nearest even
// whatever MXCSR says, and both directions keep NaN payloads and set the
// quiet bit exactly as half.h does.
TF_CPU_AVX2 inline void HalfToFloatF16c(const Half* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = FloatFromBits(HalfBitsToFloatBits(in[i].bits));
}

TF_CPU_AVX2 inline void FloatToHalfF16c(const float* in, Half* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), 0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = FloatToHalf(in[i]);
}
#endif

// Eight float16 at a time, for loops that convert, compute and convert
// back in registers (see MapBlocked): F16C only. (The same loop over
// bfloat16 was not vectorised by GCC, and the blocks are as fast there.)
template <typename Isa, typename T>
constexpr bool kHasConvert8 =
    std::is_same_v<T, Half>&& Isa::kAvx2&& TF_CPU_HAVE_AVX2_PATH;

#if TF_CPU_HAVE_AVX2_PATH
TF_CPU_AVX2 inline void HalfToFloat8(const Half* in, float* out) {
  _mm256_storeu_ps(
      out,
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
}
TF_CPU_AVX2 inline void FloatToHalf8(const float* in, Half* out) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_cvtps_ph(_mm256_loadu_ps(in), 0));
}
#endif

template <typename Isa, typename T>
inline void Widen8(const Half* in, float* out) {
  static_assert(kHasConvert8<Isa, T>);
#if TF_CPU_HAVE_AVX2_PATH
  HalfToFloat8(in, out);
#else
  (void)in;
  (void)out;
#endif
}

template <typename Isa, typename T>
inline void Narrow8(const float* in, Half* out) {
  static_assert(kHasConvert8<Isa, T>);
#if TF_CPU_HAVE_AVX2_PATH
  FloatToHalf8(in, out);
#else
  (void)in;
  (void)out;
#endif
}

// out[0, n) = float32 of in[0, n).
template <typename Isa, typename T>
inline void WidenBlock(const T* __restrict in, float* __restrict out,
                       int64_t n) {
  if constexpr (std::is_same_v<T, Half>) {
#if TF_CPU_HAVE_AVX2_PATH
    if constexpr (Isa::kAvx2) {
      HalfToFloatF16c(in, out, n);
      return;
    }
#endif
    for (int64_t i = 0; i < n; ++i) {
      out[i] = FloatFromBits(HalfBitsToFloatBits(in[i].bits));
    }
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = FloatFromBits(static_cast<uint32_t>(in[i].bits) << 16);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(Load(in[i]));
  }
}

// out[0, n) = in[0, n) rounded to T.
template <typename Isa, typename T>
inline void NarrowBlock(const float* __restrict in, T* __restrict out,
                        int64_t n) {
  if constexpr (std::is_same_v<T, Half>) {
#if TF_CPU_HAVE_AVX2_PATH
    if constexpr (Isa::kAvx2) {
      FloatToHalfF16c(in, out, n);
      return;
    }
#endif
    for (int64_t i = 0; i < n; ++i) out[i] = FloatToHalf(in[i]);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    for (int64_t i = 0; i < n; ++i) out[i].bits = FloatToBFloat16Bits(in[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = Store<T>(in[i]);
  }
}

// The 16-bit floats go through float32 blocks; everything else computes in
// place.
template <typename T>
constexpr bool kBlocked =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

}  // namespace torchferry::cpu
