// The C++ type behind each Dtype, the arithmetic type it computes in, and
// the dispatches from a Dtype to them. Half types compute in float32
// (ABI.md), float64 in double, integers in themselves.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "plugins/cuda/dtype.h"

namespace torchferry::cuda {

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<__half> {
  using type = float;
};
template <>
struct OpMath<__nv_bfloat16> {
  using type = float;
};

template <typename T>
using OpMathT = typename OpMath<T>::type;

template <typename T>
constexpr bool kIsFloating =
    std::is_floating_point_v<T> || std::is_same_v<T, __half> ||
    std::is_same_v<T, __nv_bfloat16>;

template <typename T>
__host__ __device__ __forceinline__ OpMathT<T> ToOpMath(T value) {
  if constexpr (std::is_same_v<T, __half>) {
    return __half2float(value);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __bfloat162float(value);
  } else {
    return value;
  }
}

template <typename T>
__host__ __device__ __forceinline__ T FromOpMath(OpMathT<T> value) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(value);
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(value);
  } else {
    return static_cast<T>(value);
  }
}

// Calls f(TypeTag<T>{}) for the C++ type of `dtype`; returns what f returns.
// The caller has checked that `dtype` is one it registered kernels for; an
// unknown dtype falls to `fallback`.
template <typename F, typename G>
auto DispatchAny(Dtype dtype, F&& f, G&& fallback) {
  switch (dtype) {
    case Dtype::kBool:
      return f(TypeTag<bool>{});
    case Dtype::kUInt8:
      return f(TypeTag<uint8_t>{});
    case Dtype::kUInt16:
      return f(TypeTag<uint16_t>{});
    case Dtype::kUInt32:
      return f(TypeTag<uint32_t>{});
    case Dtype::kUInt64:
      return f(TypeTag<uint64_t>{});
    case Dtype::kInt8:
      return f(TypeTag<int8_t>{});
    case Dtype::kInt16:
      return f(TypeTag<int16_t>{});
    case Dtype::kInt32:
      return f(TypeTag<int32_t>{});
    case Dtype::kInt64:
      return f(TypeTag<int64_t>{});
    case Dtype::kFloat16:
      return f(TypeTag<__half>{});
    case Dtype::kBFloat16:
      return f(TypeTag<__nv_bfloat16>{});
    case Dtype::kFloat32:
      return f(TypeTag<float>{});
    case Dtype::kFloat64:
      return f(TypeTag<double>{});
    case Dtype::kUnknown:
      break;
  }
  return fallback();
}

// The float dtypes: float32, float64, float16, bfloat16.
template <typename F, typename G>
auto DispatchFloat(Dtype dtype, F&& f, G&& fallback) {
  switch (dtype) {
    case Dtype::kFloat16:
      return f(TypeTag<__half>{});
    case Dtype::kBFloat16:
      return f(TypeTag<__nv_bfloat16>{});
    case Dtype::kFloat32:
      return f(TypeTag<float>{});
    case Dtype::kFloat64:
      return f(TypeTag<double>{});
    default:
      break;
  }
  return fallback();
}

// The float dtypes plus int32 and int64.
template <typename F, typename G>
auto DispatchFloatInt(Dtype dtype, F&& f, G&& fallback) {
  switch (dtype) {
    case Dtype::kInt32:
      return f(TypeTag<int32_t>{});
    case Dtype::kInt64:
      return f(TypeTag<int64_t>{});
    default:
      break;
  }
  return DispatchFloat(dtype, f, fallback);
}

// DispatchFloatInt's dtypes plus uint16, uint32 and uint64, which torch
// multiplies but does not add.
template <typename F, typename G>
auto DispatchFloatIntWideUnsigned(Dtype dtype, F&& f, G&& fallback) {
  switch (dtype) {
    case Dtype::kUInt16:
      return f(TypeTag<uint16_t>{});
    case Dtype::kUInt32:
      return f(TypeTag<uint32_t>{});
    case Dtype::kUInt64:
      return f(TypeTag<uint64_t>{});
    default:
      break;
  }
  return DispatchFloatInt(dtype, f, fallback);
}

// Calls f(TypeTag<Word>{}) with Word the unsigned integer of dtype's element
// size; returns what f returns. For kernels that only move elements (cat,
// stack, embedding, zeroing): a move copies an element's bits and never reads
// its value, and zero is all-zero bits in every dtype, so a word of the
// element's width carries each dtype unchanged and one instantiation per
// width serves all of them. An unknown dtype falls to `fallback`.
template <typename F, typename G>
auto DispatchByElementSize(Dtype dtype, F&& f, G&& fallback) {
  switch (ElementSize(dtype)) {
    case 1:
      return f(TypeTag<uint8_t>{});
    case 2:
      return f(TypeTag<uint16_t>{});
    case 4:
      return f(TypeTag<uint32_t>{});
    case 8:
      return f(TypeTag<uint64_t>{});
  }
  return fallback();
}

}  // namespace torchferry::cuda
