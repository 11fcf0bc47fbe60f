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

// The 16-bit floats go through float32 blocks; everything else computes in
// place.
template <typename T>
constexpr bool kBlocked =
    std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

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

// Every lane of a 16-lane AVX-512 operation. The conversions below use the
// zero-masked intrinsics with it because GCC 12 warns (-Wmaybe-uninitialized)
// about the _mm512_undefined_* source of the unmasked ones.
constexpr __mmask16 kAll16 = 0xffff;

// The same sixteen at a time for the AVX-512 tier. Not only for speed: a
// 512-bit load of floats that two 256-bit stores just wrote cannot be
// forwarded from the store buffer and stalls, which made float16 abs
// [8, 4096] 5.6x slower on AVX-512 than on AVX2 with the eight-lane
// converters.
TF_CPU_AVX512 inline void HalfToFloatAvx512(const Half* in, float* out,
                                            int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
    _mm512_storeu_ps(out + i, _mm512_maskz_cvtph_ps(kAll16, h));
  }
  HalfToFloatF16c(in + i, out + i, n - i);
}

TF_CPU_AVX512 inline void FloatToHalfAvx512(const float* in, Half* out,
                                            int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_maskz_cvtps_ph(kAll16, _mm512_loadu_ps(in + i), 0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  FloatToHalfF16c(in + i, out + i, n - i);
}
#endif

// Eight 16-bit floats at a time, for loops that convert, compute and
// convert back in registers (see MapBlocked): F16C for float16, AVX2
// integer shifts for bfloat16. (GCC did not vectorise the same loop over
// the scalar bfloat16 conversions; without AVX2 the blocks are used.)
template <typename Isa, typename T>
constexpr bool kHasConvert8 = kBlocked<T>&& Isa::kAvx2&& TF_CPU_HAVE_AVX2_PATH;

#if TF_CPU_HAVE_AVX2_PATH
TF_CPU_AVX2 inline void Widen8Avx2(const Half* in, float* out) {
  _mm256_storeu_ps(
      out,
      _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in))));
}
TF_CPU_AVX2 inline void Narrow8Avx2(const float* in, Half* out) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_cvtps_ph(_mm256_loadu_ps(in), 0));
}
TF_CPU_AVX2 inline void Widen8Avx2(const BFloat16* in, float* out) {
  const __m256i wide = _mm256_cvtepu16_epi32(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
  // Stored as floats, not integers: GCC then keeps the value in a register
  // for the loop that reads it back.
  _mm256_storeu_ps(out, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
}
// FloatToBFloat16Bits, eight lanes: round to nearest even, NaN kept quiet.
TF_CPU_AVX2 inline void Narrow8Avx2(const float* in, BFloat16* out) {
  const __m256 v = _mm256_loadu_ps(in);
  const __m256i u = _mm256_castps_si256(v);
  const __m256i high = _mm256_srli_epi32(u, 16);
  const __m256i odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), odd),
      16);
  const __m256i quiet = _mm256_or_si256(high, _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i bits = _mm256_blendv_epi8(rounded, quiet, nan);
  // Every lane fits 16 bits, so the saturating pack is exact; it packs
  // within 128-bit halves, and the permute gathers lanes 0-7 in order.
  const __m256i packed =
      _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), 0xd8);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_castsi256_si128(packed));
}

TF_CPU_AVX512 inline void Widen16Avx512(const Half* in, float* out) {
  _mm512_storeu_ps(
      out,
      _mm512_maskz_cvtph_ps(
          kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in))));
}
TF_CPU_AVX512 inline void Narrow16Avx512(const float* in, Half* out) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm512_maskz_cvtps_ph(kAll16, _mm512_loadu_ps(in), 0));
}
TF_CPU_AVX512 inline void Widen16Avx512(const BFloat16* in, float* out) {
  const __m512i wide = _mm512_maskz_cvtepu16_epi32(
      kAll16, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in)));
  _mm512_storeu_ps(
      out, _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll16, wide, 16)));
}
// Narrow8Avx2 on sixteen lanes; every lane fits 16 bits, so vpmovdw's
// truncation is exact.
TF_CPU_AVX512 inline void Narrow16Avx512(const float* in, BFloat16* out) {
  const __m512 v = _mm512_loadu_ps(in);
  const __m512i u = _mm512_castps_si512(v);
  const __m512i high = _mm512_maskz_srli_epi32(kAll16, u, 16);
  const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_maskz_srli_epi32(
      kAll16,
      _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), odd),
      16);
  const __m512i quiet = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  const __m512i bits = _mm512_mask_blend_epi32(nan, rounded, quiet);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm512_maskz_cvtepi32_epi16(kAll16, bits));
}
#endif

// Sixteen at a time: two eight-lane conversions, or one on AVX-512.
template <typename Isa, typename T>
inline void Widen16(const T* in, float* out) {
  static_assert(kHasConvert8<Isa, T>);
#if TF_CPU_HAVE_AVX2_PATH
  if constexpr (Isa::kAvx512) {
    Widen16Avx512(in, out);
  } else {
    Widen8Avx2(in, out);
    Widen8Avx2(in + 8, out + 8);
  }
#else
  (void)in;
  (void)out;
#endif
}

template <typename Isa, typename T>
inline void Narrow16(const float* in, T* out) {
  static_assert(kHasConvert8<Isa, T>);
#if TF_CPU_HAVE_AVX2_PATH
  if constexpr (Isa::kAvx512) {
    Narrow16Avx512(in, out);
  } else {
    Narrow8Avx2(in, out);
    Narrow8Avx2(in + 8, out + 8);
  }
#else
  (void)in;
  (void)out;
#endif
}

template <typename Isa, typename T>
inline void Widen8(const T* in, float* out) {
  static_assert(kHasConvert8<Isa, T>);
#if TF_CPU_HAVE_AVX2_PATH
  Widen8Avx2(in, out);
#else
  (void)in;
  (void)out;
#endif
}

template <typename Isa, typename T>
inline void Narrow8(const float* in, T* out) {
  static_assert(kHasConvert8<Isa, T>);
#if TF_CPU_HAVE_AVX2_PATH
  Narrow8Avx2(in, out);
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
    if constexpr (Isa::kAvx512) {
      HalfToFloatAvx512(in, out, n);
      return;
    } else if constexpr (Isa::kAvx2) {
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

// out[r * cols + c] = float32 of in[r * row + c * step] for r < rows and
// c < cols: a strided block widened into a row-major one (the unit-stride
// rows by WidenBlock).
template <typename Isa, typename T>
inline void WidenRows(const T* in, int64_t row, int64_t step, int64_t rows,
                      int64_t cols, float* __restrict out) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* p = in + r * row;
    float* o = out + r * cols;
    if (step == 1) {
      WidenBlock<Isa>(p, o, cols);
    } else {
      for (int64_t c = 0; c < cols; ++c) {
        o[c] = static_cast<float>(Load(p[c * step]));
      }
    }
  }
}

// out[0, n) = in[0, n) rounded to T.
template <typename Isa, typename T>
inline void NarrowBlock(const float* __restrict in, T* __restrict out,
                        int64_t n) {
  if constexpr (std::is_same_v<T, Half>) {
#if TF_CPU_HAVE_AVX2_PATH
    if constexpr (Isa::kAvx512) {
      FloatToHalfAvx512(in, out, n);
      return;
    } else if constexpr (Isa::kAvx2) {
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

}  // namespace torchferry::cpu
