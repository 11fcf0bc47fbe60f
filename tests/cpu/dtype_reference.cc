#include "dtype_reference.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace torchferry::cpu_test {
namespace {

// A binary float format with `mantissa_bits` stored bits, smallest normal
// exponent `min_exponent`, and values below 2^max_exponent_plus_one.
struct FloatFormat {
  int mantissa_bits;
  int min_exponent;
  int max_exponent_plus_one;
  int exponent_bias;
};

constexpr FloatFormat kHalfFormat = {10, -14, 16, 15};
constexpr FloatFormat kBFloat16Format = {7, -126, 128, 127};

// Rounds |value| to the format's grid by plain arithmetic: find the spacing
// of representable numbers near it, divide, round half to even, multiply.
uint16_t EncodeSmallFloat(double value, FloatFormat f) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const uint16_t exponent_all_ones = static_cast<uint16_t>(
      ((1 << (15 - f.mantissa_bits)) - 1) << f.mantissa_bits);
  if (std::isnan(value)) {
    return sign | exponent_all_ones | (1 << (f.mantissa_bits - 1));
  }
  const double magnitude = std::fabs(value);
  if (std::isinf(magnitude)) return sign | exponent_all_ones;
  int exponent = f.min_exponent;
  if (magnitude >= std::ldexp(1.0, f.min_exponent)) {
    exponent = std::ilogb(magnitude);  // floor(log2(magnitude))
  }
  const double spacing = std::ldexp(1.0, exponent - f.mantissa_bits);
  const double rounded = std::nearbyint(magnitude / spacing) * spacing;
  if (rounded >= std::ldexp(1.0, f.max_exponent_plus_one)) {
    return sign | exponent_all_ones;
  }
  if (rounded < std::ldexp(1.0, f.min_exponent)) {
    // Subnormal: the mantissa counts steps of the smallest spacing.
    return sign | static_cast<uint16_t>(rounded / spacing);
  }
  // Rounding may have carried into the next binade; look again.
  const int e = std::ilogb(rounded);
  const double mantissa =
      rounded / std::ldexp(1.0, e - f.mantissa_bits) - (1 << f.mantissa_bits);
  return sign |
         static_cast<uint16_t>((e + f.exponent_bias) << f.mantissa_bits) |
         static_cast<uint16_t>(mantissa);
}

double DecodeSmallFloat(uint16_t bits, FloatFormat f) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent_field = (bits & 0x7fff) >> f.mantissa_bits;
  const int mantissa = bits & ((1 << f.mantissa_bits) - 1);
  const int all_ones = (1 << (15 - f.mantissa_bits)) - 1;
  if (exponent_field == all_ones) {
    return mantissa == 0 ? sign * INFINITY : NAN;
  }
  if (exponent_field == 0) {
    return sign * std::ldexp(mantissa, f.min_exponent - f.mantissa_bits);
  }
  return sign * std::ldexp((1 << f.mantissa_bits) + mantissa,
                           exponent_field - f.exponent_bias - f.mantissa_bits);
}

}  // namespace

bool SameDtype(tf_dtype a, tf_dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

bool IsFloat(tf_dtype d) {
  return d.code == TF_DTYPE_FLOAT || d.code == TF_DTYPE_BFLOAT;
}

size_t ElementSize(tf_dtype d) { return d.bits / 8; }

std::string DtypeName(tf_dtype d) {
  switch (d.code) {
    case TF_DTYPE_FLOAT:
      return "float" + std::to_string(d.bits);
    case TF_DTYPE_BFLOAT:
      return "bfloat16";
    case TF_DTYPE_INT:
      return "int" + std::to_string(d.bits);
    case TF_DTYPE_UINT:
      return "uint" + std::to_string(d.bits);
    case TF_DTYPE_BOOL:
      return "bool";
    default:
      return "code" + std::to_string(d.code);
  }
}

uint16_t EncodeHalf(double value) {
  return EncodeSmallFloat(value, kHalfFormat);
}
uint16_t EncodeBFloat16(double value) {
  return EncodeSmallFloat(value, kBFloat16Format);
}
double DecodeHalf(uint16_t bits) { return DecodeSmallFloat(bits, kHalfFormat); }
double DecodeBFloat16(uint16_t bits) {
  return DecodeSmallFloat(bits, kBFloat16Format);
}

uint64_t Encode(tf_dtype dtype, double value) {
  if (dtype.code == TF_DTYPE_BOOL) return value != 0 ? 1 : 0;
  if (dtype.code == TF_DTYPE_BFLOAT) return EncodeBFloat16(value);
  if (dtype.code == TF_DTYPE_FLOAT) {
    if (dtype.bits == 16) return EncodeHalf(value);
    if (dtype.bits == 32) {
      const float f = static_cast<float>(value);
      uint32_t u;
      std::memcpy(&u, &f, sizeof u);
      return u;
    }
    uint64_t u;
    std::memcpy(&u, &value, sizeof u);
    return u;
  }
  // Integers: two's complement of trunc(value), cut to the width.
  const double t = std::trunc(value);
  if (!(t >= -9223372036854775808.0 && t < 9223372036854775808.0)) {
    throw std::invalid_argument("Encode: integer value out of int64 range");
  }
  const uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(t));
  return dtype.bits == 64 ? u : u & ((uint64_t{1} << dtype.bits) - 1);
}

double Decode(tf_dtype dtype, uint64_t bits) {
  switch (dtype.code) {
    case TF_DTYPE_BOOL:
      return bits != 0 ? 1.0 : 0.0;
    case TF_DTYPE_BFLOAT:
      return DecodeBFloat16(static_cast<uint16_t>(bits));
    case TF_DTYPE_FLOAT:
      if (dtype.bits == 16) return DecodeHalf(static_cast<uint16_t>(bits));
      if (dtype.bits == 32) {
        const uint32_t u = static_cast<uint32_t>(bits);
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
      } else {
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return d;
      }
    case TF_DTYPE_UINT:
      return static_cast<double>(bits);
    case TF_DTYPE_INT: {
      // Sign-extend from the width.
      if (dtype.bits == 64)
        return static_cast<double>(static_cast<int64_t>(bits));
      const uint64_t sign_bit = uint64_t{1} << (dtype.bits - 1);
      const int64_t v = static_cast<int64_t>(bits & (2 * sign_bit - 1));
      return static_cast<double>(
          (bits & sign_bit) ? v - 2 * static_cast<int64_t>(sign_bit) : v);
    }
    default:
      throw std::invalid_argument("Decode: unknown dtype " + DtypeName(dtype));
  }
}

double RoundTo(tf_dtype dtype, double value) {
  return Decode(dtype, Encode(dtype, value));
}

}  // namespace torchferry::cpu_test
