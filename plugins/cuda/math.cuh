// Scalar math shared by the kernels, overloaded for the two arithmetic types
// (float and double) so that each kernel template is written once. The
// accurate library functions are used, not the fast intrinsics, so results
// stay within a few ulp of torch's.
#pragma once

#include <cstdint>
#include <type_traits>

namespace torchferry::cuda {

__device__ __forceinline__ float Exp(float x) { return expf(x); }
__device__ __forceinline__ double Exp(double x) { return exp(x); }

__device__ __forceinline__ float Abs(float x) { return fabsf(x); }
__device__ __forceinline__ double Abs(double x) { return fabs(x); }

__device__ __forceinline__ float InvSqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ double InvSqrt(double x) { return rsqrt(x); }

template <typename A>
__device__ __forceinline__ A NegativeInfinity();
template <>
__device__ __forceinline__ float NegativeInfinity<float>() {
  return __int_as_float(static_cast<int>(0xff800000u));
}
template <>
__device__ __forceinline__ double NegativeInfinity<double>() {
  return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));
}

template <typename A>
__device__ __forceinline__ bool IsNan(A x) {
  if constexpr (std::is_floating_point_v<A>) {
    return x != x;
  } else {
    return false;
  }
}

// Integer arithmetic that wraps like torch's instead of overflowing into
// undefined behaviour: computed on the unsigned 64-bit pattern, truncated.
template <typename I>
__device__ __forceinline__ I WrapAdd(I a, I b) {
  return static_cast<I>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
template <typename I>
__device__ __forceinline__ I WrapMul(I a, I b) {
  return static_cast<I>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}
template <typename I>
__device__ __forceinline__ I WrapNeg(I a) {
  return static_cast<I>(uint64_t{0} - static_cast<uint64_t>(a));
}

// max(x, bound) and min(x, bound) that propagate NaN from either side, as
// torch.clamp does.
template <typename A>
__device__ __forceinline__ A MaxPropagateNan(A x, A bound) {
  if (IsNan(x)) return x;
  if (IsNan(bound)) return bound;
  return x < bound ? bound : x;
}
template <typename A>
__device__ __forceinline__ A MinPropagateNan(A x, A bound) {
  if (IsNan(x)) return x;
  if (IsNan(bound)) return bound;
  return bound < x ? bound : x;
}

template <typename A>
__device__ __forceinline__ A Silu(A x) {
  return x / (A(1) + Exp(-x));
}

}  // namespace torchferry::cuda
