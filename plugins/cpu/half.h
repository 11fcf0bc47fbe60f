// The two 16-bit float formats the ABI carries as raw bit patterns, and their
// conversions to and from float32. Kernels compute in float32 and round once
// on store, as torch does.
#pragma once

#include <cstdint>
#include <cstring>

namespace torchferry::cpu {

// Distinct wrapper types (not bare uint16_t) so that templates keyed by the
// element type can tell float16, bfloat16 and int16 apart.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float FloatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline float HalfToFloat(Half h) {
  const uint32_t sign = static_cast<uint32_t>(h.bits & 0x8000u) << 16;
  const uint32_t exponent = (h.bits >> 10) & 0x1fu;
  const uint32_t mantissa = h.bits & 0x3ffu;
  if (exponent == 0x1f) {
    // Inf, or NaN with its payload moved to the top of float32's mantissa.
    return FloatFromBits(sign | 0x7f800000u | (mantissa << 13));
  }
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24 is exact in float32.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return FloatFromBits(sign | FloatBits(magnitude));
  }
  // Normal: rebias the exponent from 15 to 127.
  return FloatFromBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline Half FloatToHalf(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude >= 0x47800000u) {  // |f| >= 65536, inf or NaN
    if (magnitude > 0x7f800000u) {
      // NaN stays NaN: keep the payload's top bits and force the quiet bit so
      // that a payload living only in the dropped low bits cannot turn it
      // into an infinity.
      return Half{
          static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
    }
    return Half{static_cast<uint16_t>(sign | 0x7c00u)};
  }
  if (magnitude < 0x38800000u) {  // |f| < 2^-14: subnormal or zero in half
    // Adding 0.5 places the half's subnormal step (2^-24) at float32's last
    // mantissa bit, so the FPU's own round-to-nearest-even does the rounding;
    // the mantissa bits of the sum are the half's bits.
    const float shifted = FloatFromBits(magnitude) + 0.5f;
    return Half{
        static_cast<uint16_t>(sign | (FloatBits(shifted) - 0x3f000000u))};
  }
  // Normal: rebias the exponent and round the 13 dropped bits to nearest
  // even. A carry out of the mantissa correctly bumps the exponent, up to inf
  // for 65520 <= |f| < 65536.
  const uint32_t odd = (magnitude >> 13) & 1u;
  const uint32_t rounded = magnitude - 0x38000000u + 0xfffu + odd;
  return Half{static_cast<uint16_t>(sign | (rounded >> 13))};
}

inline float BFloat16ToFloat(BFloat16 b) {
  return FloatFromBits(static_cast<uint32_t>(b.bits) << 16);
}

inline BFloat16 FloatToBFloat16(float f) {
  const uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: truncate and force the quiet bit so it cannot become inf.
    return BFloat16{static_cast<uint16_t>((u >> 16) | 0x0040u)};
  }
  // Round to nearest even; a carry into the exponent rounds up to inf.
  const uint32_t odd = (u >> 16) & 1u;
  return BFloat16{static_cast<uint16_t>((u + 0x7fffu + odd) >> 16)};
}

}  // namespace torchferry::cpu
