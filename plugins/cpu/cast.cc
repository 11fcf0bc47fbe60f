// cast: converts x to out's dtype, between any two of the thirteen ABI
// dtypes. The kernel is keyed by x's dtype and picks the conversion for out's
// dtype at run time.
//
// Every value first widens exactly (floats to double, uint64 to itself, other
// integers and bool to int64) and then narrows with one rule per destination.
// The rules reproduce what torch does on x86-64, including the cases C++
// leaves undefined:
//  - float to int truncates toward zero; a value out of range (or NaN, inf)
//    gives the "integer indefinite" of the conversion torch compiles to,
//    INT_MIN of int32 for int8/int16/int32 (wrapped to the width) and INT_MIN
//    of int64 for int64/uint8 (torch goes through int64 for uint8);
//  - float to uint16/uint32 goes through int64 as uint8 does: exact in range,
//    and a negative in int64's range wraps as torch's does (-1.5 gives the
//    maximum). torch leaves other values to the compiler, and its scalar and
//    vectorised loops disagree (NaN to uint32 is 0 or 2^31); here they give
//    the low bits of INT_MIN of int64, 0;
//  - float to uint64 is exact up to 2^64, values from 2^63 on included, and
//    otherwise follows the sequence compilers emit for it on x86-64, as torch
//    does: below 2^63 through int64 (NaN and -inf give 2^63, negatives wrap),
//    from 2^64 on (and inf) 0;
//  - int to int wraps modulo 2^bits;
//  - to bool is x != 0, from bool is 0 or 1;
//  - to float16/bfloat16 rounds to float32 first, as c10::Half does.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "call.h"
#include "dtype.h"
#include "kernel_table.h"
#include "map.h"

namespace torchferry::cpu {
namespace {

template <typename T>
struct Tag {
  using type = T;
};

// Calls visit(Tag<T>{}) for the element type of `dtype`; false if none.
template <typename Visit>
bool VisitDtype(tf_dtype dtype, const Visit& visit) {
  if (dtype.lanes != 1) return false;
  switch (dtype.code) {
    case TF_DTYPE_FLOAT:
      if (dtype.bits == 32) return visit(Tag<float>{}), true;
      if (dtype.bits == 64) return visit(Tag<double>{}), true;
      if (dtype.bits == 16) return visit(Tag<Half>{}), true;
      return false;
    case TF_DTYPE_BFLOAT:
      if (dtype.bits == 16) return visit(Tag<BFloat16>{}), true;
      return false;
    case TF_DTYPE_INT:
      if (dtype.bits == 8) return visit(Tag<int8_t>{}), true;
      if (dtype.bits == 16) return visit(Tag<int16_t>{}), true;
      if (dtype.bits == 32) return visit(Tag<int32_t>{}), true;
      if (dtype.bits == 64) return visit(Tag<int64_t>{}), true;
      return false;
    case TF_DTYPE_UINT:
      if (dtype.bits == 8) return visit(Tag<uint8_t>{}), true;
      if (dtype.bits == 16) return visit(Tag<uint16_t>{}), true;
      if (dtype.bits == 32) return visit(Tag<uint32_t>{}), true;
      if (dtype.bits == 64) return visit(Tag<uint64_t>{}), true;
      return false;
    case TF_DTYPE_BOOL:
      if (dtype.bits == 8) return visit(Tag<Bool>{}), true;
      return false;
    default:
      return false;
  }
}

// The exact wide form of a value: double for floats, uint64 for itself (its
// upper half has no int64), int64 for the rest.
template <typename From>
inline auto Widen(From v) {
  if constexpr (kIsFloating<From>) {
    return static_cast<double>(Load(v));
  } else if constexpr (std::is_same_v<From, uint64_t>) {
    return v;
  } else {
    return static_cast<int64_t>(Load(v));
  }
}

// Truncation toward zero with x86's out-of-range answer (INT_MIN of I).
template <typename I>
inline I TruncateToInt(double d) {
  constexpr I kMin = std::numeric_limits<I>::min();
  constexpr double kLimit = -static_cast<double>(kMin);  // 2^(bits-1)
  // In range exactly when the truncated value fits; NaN fails both tests.
  if (d > -kLimit - 1 && d < kLimit) return static_cast<I>(d);
  return kMin;
}

template <typename To>
inline To Narrow(double d) {
  if constexpr (std::is_same_v<To, double>) {
    return d;
  } else if constexpr (std::is_same_v<To, float>) {
    return static_cast<float>(d);
  } else if constexpr (std::is_same_v<To, Half> ||
                       std::is_same_v<To, BFloat16>) {
    return Store<To>(static_cast<float>(d));
  } else if constexpr (std::is_same_v<To, Bool>) {
    return Store<Bool>(d != 0);
  } else if constexpr (std::is_same_v<To, uint64_t>) {
    // x86-64 has no unsigned conversion below AVX-512: compilers convert
    // d - 2^63 (exact there) and set the top bit back.
    constexpr double kTopBit = 9223372036854775808.0;  // 2^63
    constexpr uint64_t kTop = uint64_t{1} << 63;
    if (d >= kTopBit) {
      return static_cast<uint64_t>(TruncateToInt<int64_t>(d - kTopBit)) ^ kTop;
    }
    return static_cast<uint64_t>(TruncateToInt<int64_t>(d));
  } else if constexpr (std::is_same_v<To, int64_t> ||
                       std::is_same_v<To, uint8_t> ||
                       std::is_same_v<To, uint16_t> ||
                       std::is_same_v<To, uint32_t>) {
    return static_cast<To>(TruncateToInt<int64_t>(d));
  } else {  // int8, int16, int32
    return static_cast<To>(TruncateToInt<int32_t>(d));
  }
}

template <typename To>
inline To Narrow(int64_t i) {
  if constexpr (std::is_same_v<To, double>) {
    return static_cast<double>(i);
  } else if constexpr (kIsFloating<To>) {
    return Store<To>(static_cast<float>(i));
  } else if constexpr (std::is_same_v<To, Bool>) {
    return Store<Bool>(i != 0);
  } else {
    return static_cast<To>(i);  // modulo 2^bits: defined by GCC and Clang
  }
}

// From uint64: as from int64, but floats round the unsigned value.
template <typename To>
inline To Narrow(uint64_t u) {
  if constexpr (std::is_same_v<To, double>) {
    return static_cast<double>(u);
  } else if constexpr (kIsFloating<To>) {
    return Store<To>(static_cast<float>(u));
  } else if constexpr (std::is_same_v<To, Bool>) {
    return Store<Bool>(u != 0);
  } else {
    return static_cast<To>(u);  // modulo 2^bits: defined by GCC and Clang
  }
}

template <typename To, typename From>
inline To Convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    // A copy, bit for bit: a trip through double would quiet signalling
    // NaNs.
    return v;
  } else {
    return Narrow<To>(Widen(v));
  }
}

// A readable name for an error message, e.g. "int16" or "code 7, 32 bits".
void DescribeDtype(tf_dtype d, char* text, size_t size) {
  const char* family = d.code == TF_DTYPE_FLOAT    ? "float"
                       : d.code == TF_DTYPE_BFLOAT ? "bfloat"
                       : d.code == TF_DTYPE_INT    ? "int"
                       : d.code == TF_DTYPE_UINT   ? "uint"
                       : d.code == TF_DTYPE_BOOL   ? "bool"
                                                   : nullptr;
  if (family == nullptr) {
    std::snprintf(text, size, "code %d, %d bits", d.code, d.bits);
  } else {
    std::snprintf(text, size, "%s%d", family, d.bits);
  }
  if (d.lanes != 1) {
    const size_t used = std::strlen(text);
    std::snprintf(text + used, size - used, " x%d lanes", d.lanes);
  }
}

struct Cast {
  static constexpr const char* kName = "cast";
  template <typename From>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 1, 0, 1); s != TF_OK) return s;
    const tf_tensor& x = TensorArg(call->inputs, 0);
    const tf_tensor& out = call->outputs[0];
    bool done = true;
    const bool known = VisitDtype(out.dtype, [&](auto tag) {
      using To = typename decltype(tag)::type;
      done = Map1(out.ndim, out.shape, ViewOf<To>(out), ViewOf<const From>(x),
                  [](From v) { return Convert<To>(v); });
    });
    if (!known) {
      char found[48];
      DescribeDtype(out.dtype, found, sizeof found);
      return Fail(call, TF_ERROR_UNSUPPORTED,
                  "cast: expected out's dtype to be one the cpu plugin "
                  "converts to (float16, bfloat16, float32, float64, int8, "
                  "int16, int32, int64, uint8, uint16, uint32, uint64, bool), "
                  "found %s; cast in two "
                  "steps or leave this cast to another backend",
                  found);
    }
    return done ? TF_OK : TooManyDims(call, kName, out.ndim);
  }
};

constexpr auto kTable = KernelsFor<Cast>(AllTypes{});

}  // namespace

KernelList CastKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
