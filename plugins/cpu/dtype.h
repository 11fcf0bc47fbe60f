// The element types this plugin handles: the C++ type that stores each ABI
// dtype, the type it computes in, and the conversions between the two.
#pragma once

#include <cstdint>
#include <type_traits>

#include "abi/torchferry.h"
#include "half.h"

namespace torchferry::cpu {

// bool is its own type: a byte that holds 0 or 1. Wrapping it keeps it apart
// from uint8 in every template, and reading it never assumes the byte is a
// valid C++ bool.
struct Bool {
  uint8_t value;
};

template <typename T>
struct DtypeTraits;

// Compute: the type arithmetic happens in (float32 for the 16-bit floats, as
// torch does). Accumulate: the type reductions sum in.
#define TF_CPU_DTYPE(Type, Code, Compute_, Accumulate_)             \
  template <>                                                       \
  struct DtypeTraits<Type> {                                        \
    using Compute = Compute_;                                       \
    using Accumulate = Accumulate_;                                 \
    static constexpr tf_dtype kDtype = {Code, sizeof(Type) * 8, 1}; \
  };
TF_CPU_DTYPE(float, TF_DTYPE_FLOAT, float, float)
TF_CPU_DTYPE(double, TF_DTYPE_FLOAT, double, double)
TF_CPU_DTYPE(Half, TF_DTYPE_FLOAT, float, float)
TF_CPU_DTYPE(BFloat16, TF_DTYPE_BFLOAT, float, float)
TF_CPU_DTYPE(int8_t, TF_DTYPE_INT, int8_t, int64_t)
TF_CPU_DTYPE(int16_t, TF_DTYPE_INT, int16_t, int64_t)
TF_CPU_DTYPE(int32_t, TF_DTYPE_INT, int32_t, int64_t)
TF_CPU_DTYPE(int64_t, TF_DTYPE_INT, int64_t, int64_t)
TF_CPU_DTYPE(uint8_t, TF_DTYPE_UINT, uint8_t, int64_t)
TF_CPU_DTYPE(Bool, TF_DTYPE_BOOL, bool, int64_t)
TF_CPU_DTYPE(uint16_t, TF_DTYPE_UINT, uint16_t, uint64_t)
TF_CPU_DTYPE(uint32_t, TF_DTYPE_UINT, uint32_t, uint64_t)
TF_CPU_DTYPE(uint64_t, TF_DTYPE_UINT, uint64_t, uint64_t)
#undef TF_CPU_DTYPE

template <typename T>
using ComputeOf = typename DtypeTraits<T>::Compute;
template <typename T>
using AccumulateOf = typename DtypeTraits<T>::Accumulate;

template <typename T>
constexpr tf_dtype DtypeOf() {
  return DtypeTraits<T>::kDtype;
}

constexpr bool SameDtype(tf_dtype a, tf_dtype b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

// Load widens a stored element to its compute type; Store rounds back.
template <typename T>
inline ComputeOf<T> Load(T v) {
  return v;
}
template <>
inline float Load<Half>(Half v) {
  return HalfToFloat(v);
}
template <>
inline float Load<BFloat16>(BFloat16 v) {
  return BFloat16ToFloat(v);
}
template <>
inline bool Load<Bool>(Bool v) {
  return v.value != 0;
}

template <typename T>
inline T Store(ComputeOf<T> v) {
  return v;
}
template <>
inline Half Store<Half>(float v) {
  return FloatToHalf(v);
}
template <>
inline BFloat16 Store<BFloat16>(float v) {
  return FloatToBFloat16(v);
}
template <>
inline Bool Store<Bool>(bool v) {
  return Bool{static_cast<uint8_t>(v ? 1 : 0)};
}

template <typename T>
constexpr bool kIsFloating = std::is_floating_point_v<ComputeOf<T>>;

// Integer arithmetic that wraps like torch's (two's complement) without the
// undefined behaviour of signed overflow: do it in the unsigned type.
template <typename I>
inline I WrapFrom(std::make_unsigned_t<I> u) {
  return static_cast<I>(u);  // modulo 2^N: defined by GCC and Clang
}
template <typename I>
inline I WrapAdd(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return WrapFrom<I>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename I>
inline I WrapMul(I a, I b) {
  using U = std::make_unsigned_t<I>;
  // Promote to at least unsigned int so that narrow types cannot be
  // promoted to a signed int and overflow.
  using Wide = std::common_type_t<U, unsigned int>;
  return WrapFrom<I>(static_cast<U>(static_cast<Wide>(static_cast<U>(a)) *
                                    static_cast<Wide>(static_cast<U>(b))));
}
template <typename I>
inline I WrapNeg(I a) {
  using U = std::make_unsigned_t<I>;
  return WrapFrom<I>(static_cast<U>(0u - static_cast<U>(a)));
}

// A compile-time list of element types, from which the kernel tables are
// generated.
template <typename... Ts>
struct TypeList {};

template <typename... Lists>
struct JoinTypes;
template <typename... As, typename... Bs, typename... Rest>
struct JoinTypes<TypeList<As...>, TypeList<Bs...>, Rest...>
    : JoinTypes<TypeList<As..., Bs...>, Rest...> {};
template <typename... As>
struct JoinTypes<TypeList<As...>> {
  using type = TypeList<As...>;
};

using FloatTypes = TypeList<float, double, Half, BFloat16>;
// int8, int16 and uint8 are left to the ATen fallback for arithmetic.
using WideSignedTypes = TypeList<int32_t, int64_t>;
using ArithmeticTypes = JoinTypes<FloatTypes, WideSignedTypes>::type;
// torch computes little for these beyond mul, casts and moving data (no add,
// abs, neg or clamp); this plugin adds add, which the ATen fallback cannot
// serve.
using WideUnsignedTypes = TypeList<uint16_t, uint32_t, uint64_t>;
using AllTypes =
    JoinTypes<FloatTypes,
              TypeList<int8_t, int16_t, int32_t, int64_t, uint8_t, Bool>,
              WideUnsignedTypes>::type;

}  // namespace torchferry::cpu
