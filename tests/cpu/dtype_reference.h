// The tests' own idea of every ABI dtype, written independently of the
// plugin: how a double is stored as each dtype's bits (rounding to nearest
// even, by arithmetic on doubles rather than bit tricks) and read back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "abi/torchferry.h"

namespace torchferry::cpu_test {

inline constexpr tf_dtype kF16 = {TF_DTYPE_FLOAT, 16, 1};
inline constexpr tf_dtype kBF16 = {TF_DTYPE_BFLOAT, 16, 1};
inline constexpr tf_dtype kF32 = {TF_DTYPE_FLOAT, 32, 1};
inline constexpr tf_dtype kF64 = {TF_DTYPE_FLOAT, 64, 1};
inline constexpr tf_dtype kI8 = {TF_DTYPE_INT, 8, 1};
inline constexpr tf_dtype kI16 = {TF_DTYPE_INT, 16, 1};
inline constexpr tf_dtype kI32 = {TF_DTYPE_INT, 32, 1};
inline constexpr tf_dtype kI64 = {TF_DTYPE_INT, 64, 1};
inline constexpr tf_dtype kU8 = {TF_DTYPE_UINT, 8, 1};
inline constexpr tf_dtype kBool = {TF_DTYPE_BOOL, 8, 1};
inline constexpr tf_dtype kU16 = {TF_DTYPE_UINT, 16, 1};
inline constexpr tf_dtype kU32 = {TF_DTYPE_UINT, 32, 1};
inline constexpr tf_dtype kU64 = {TF_DTYPE_UINT, 64, 1};

inline const std::vector<tf_dtype> kFloatDtypes = {kF32, kF64, kF16, kBF16};
inline const std::vector<tf_dtype> kWideIntDtypes = {kI32, kI64};
inline const std::vector<tf_dtype> kArithmeticDtypes = {kF32,  kF64, kF16,
                                                        kBF16, kI32, kI64};
inline const std::vector<tf_dtype> kAllDtypes = {
    kF32, kF64, kF16, kBF16, kI8, kI16, kI32, kI64, kU8, kBool};
// torch computes only mul, casts and data movement for these; the tests of
// their values are Python's, against torch.
inline const std::vector<tf_dtype> kWideUnsignedDtypes = {kU16, kU32, kU64};

bool SameDtype(tf_dtype a, tf_dtype b);
bool IsFloat(tf_dtype d);
size_t ElementSize(tf_dtype d);
std::string DtypeName(tf_dtype d);

// The bits of `value` stored as `dtype`: floats round to nearest even
// (overflow to inf, NaN to a quiet NaN); integers take trunc(value) modulo
// 2^bits (value must be an integer-valued double within int64's range);
// bool is value != 0.
uint64_t Encode(tf_dtype dtype, double value);
// The value the bits stand for, exactly.
double Decode(tf_dtype dtype, uint64_t bits);
// Decode(Encode(value)): value as that dtype can hold it.
double RoundTo(tf_dtype dtype, double value);

// The 16-bit float encodings on their own, for the conversion tests.
uint16_t EncodeHalf(double value);
uint16_t EncodeBFloat16(double value);
double DecodeHalf(uint16_t bits);
double DecodeBFloat16(uint16_t bits);

}  // namespace torchferry::cpu_test
