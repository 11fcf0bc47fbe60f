// The pointwise ops: abs, neg, exp, silu, add, mul, clamp. Each is a small
// arithmetic functor over the compute type (float32 for the 16-bit floats)
// run by the engine in map.h, which handles layouts and in-place aliasing;
// float16 and bfloat16 run on float32 blocks (MapBlocked).
#include <cmath>
#include <limits>
#include <type_traits>

#include "call.h"
#include "dtype.h"
#include "kernel_table.h"
#include "map.h"
#include "vmath.h"

namespace torchferry::cpu {
namespace {

// out = op(x), with op over the compute type.
template <typename T, typename Op>
tf_status RunUnary(const tf_call* call, const char* name, Op op) {
  if (tf_status s = CheckArity(call, name, 1, 0, 1); s != TF_OK) return s;
  const tf_tensor& x = TensorArg(call->inputs, 0);
  const tf_tensor& out = call->outputs[0];
  bool done;
  if constexpr (kBlocked<T>) {
    done =
        MapBlocked(out.ndim, out.shape, ViewOf<T>(out), op, ViewOf<const T>(x));
  } else {
    done = Map1(out.ndim, out.shape, ViewOf<T>(out), ViewOf<const T>(x),
                [op](T v) { return Store<T>(op(Load(v))); });
  }
  return done ? TF_OK : TooManyDims(call, name, out.ndim);
}

// out = op(x, y); x and y arrive broadcast to out's shape.
template <typename T, typename Op>
tf_status RunBinary(const tf_call* call, const char* name, Op op) {
  const tf_tensor& x = TensorArg(call->inputs, 0);
  const tf_tensor& y = TensorArg(call->inputs, 1);
  const tf_tensor& out = call->outputs[0];
  bool done;
  if constexpr (kBlocked<T>) {
    done = MapBlocked(out.ndim, out.shape, ViewOf<T>(out), op,
                      ViewOf<const T>(x), ViewOf<const T>(y));
  } else {
    done = Map2(out.ndim, out.shape, ViewOf<T>(out), ViewOf<const T>(x),
                ViewOf<const T>(y),
                [op](T a, T b) { return Store<T>(op(Load(a), Load(b))); });
  }
  return done ? TF_OK : TooManyDims(call, name, out.ndim);
}

// abs and neg of float16 and bfloat16 clear or flip the sign bit, on the
// stored bits: what widening to float32 and narrowing back computes (every
// 16-bit value is exact in float32, NaN stays NaN), without the two
// conversions.
template <typename T, typename Bits>
tf_status RunSignBit(const tf_call* call, const char* name, Bits bits) {
  if (tf_status s = CheckArity(call, name, 1, 0, 1); s != TF_OK) return s;
  const tf_tensor& x = TensorArg(call->inputs, 0);
  const tf_tensor& out = call->outputs[0];
  const bool done =
      Map1(out.ndim, out.shape, ViewOf<T>(out), ViewOf<const T>(x),
           [bits](T v) { return T{static_cast<uint16_t>(bits(v.bits))}; });
  return done ? TF_OK : TooManyDims(call, name, out.ndim);
}

struct Abs {
  static constexpr const char* kName = "abs";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if constexpr (kBlocked<T>) {
      return RunSignBit<T>(call, kName, [](uint32_t b) { return b & 0x7fffu; });
    }
    return RunUnary<T>(call, kName, [](ComputeOf<T> v) {
      if constexpr (kIsFloating<T>) {
        return std::fabs(v);  // clears the sign of -0.0 too, as torch does
      } else if constexpr (std::is_signed_v<ComputeOf<T>>) {
        return v < 0 ? WrapNeg(v) : v;  // abs(INT_MIN) wraps to INT_MIN
      } else {
        return v;  // an unsigned value is its own magnitude
      }
    });
  }
};

struct Neg {
  static constexpr const char* kName = "neg";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if constexpr (kBlocked<T>) {
      return RunSignBit<T>(call, kName, [](uint32_t b) { return b ^ 0x8000u; });
    }
    return RunUnary<T>(call, kName, [](ComputeOf<T> v) {
      if constexpr (kIsFloating<T>) {
        return -v;
      } else {
        return WrapNeg(v);
      }
    });
  }
};

struct Exp {
  static constexpr const char* kName = "exp";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    return RunUnary<T>(call, kName, [](ComputeOf<T> v) { return ExpOf(v); });
  }
};

struct Silu {
  static constexpr const char* kName = "silu";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    using C = ComputeOf<T>;
    return RunUnary<T>(call, kName, [](C v) { return v / (C{1} + ExpOf(-v)); });
  }
};

// An integer attribute for an int dtype, a float one for a float dtype; an
// int is also taken for a float dtype since it converts exactly enough.
template <typename T>
bool ScalarAs(const tf_arg& arg, ComputeOf<T>* value) {
  using C = ComputeOf<T>;
  if (arg.kind == TF_ARG_INT) {
    if constexpr (std::is_same_v<T, Bool>) {
      *value = arg.value.i != 0;  // as torch converts a number to bool
    } else if constexpr (kIsFloating<T>) {
      *value = static_cast<C>(arg.value.i);
    } else {
      // Wraps to the dtype's width, as torch converts an int Scalar.
      *value = WrapFrom<C>(static_cast<std::make_unsigned_t<C>>(arg.value.i));
    }
    return true;
  }
  if (arg.kind == TF_ARG_FLOAT && kIsFloating<T>) {
    *value = static_cast<C>(arg.value.f);
    return true;
  }
  return false;
}

const char* ArgKindName(int32_t kind) {
  switch (kind) {
    case TF_ARG_NONE:
      return "none";
    case TF_ARG_TENSOR:
      return "tensor";
    case TF_ARG_TENSOR_LIST:
      return "tensor list";
    case TF_ARG_INT:
      return "int";
    case TF_ARG_FLOAT:
      return "float";
    case TF_ARG_BOOL:
      return "bool";
    default:
      return "unknown";
  }
}

struct Add {
  static constexpr const char* kName = "add";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 2, 1, 1); s != TF_OK) return s;
    using C = ComputeOf<T>;
    C alpha;
    if (!ScalarAs<T>(call->attrs[0], &alpha)) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "add: expected alpha as %s for this dtype, found a %s "
                  "argument; pass alpha as the ABI lists for add",
                  kIsFloating<T> ? "a float" : "an int",
                  ArgKindName(call->attrs[0].kind));
    }
    if constexpr (kIsFloating<T>) {
      // alpha stays in the compute type (not rounded to a 16-bit T), as in
      // torch. a + alpha * b is one fused multiply-add, as torch's vector
      // loop computes it (Vectorized::fmadd), whichever compiler built the
      // plugin: unfused, a product past the float range is inf where the
      // fused sum is finite. alpha 1 is a plain add, exact either way.
      if (alpha == C(1)) {
        return RunBinary<T>(call, kName, [](C a, C b) { return a + b; });
      }
      return RunBinary<T>(call, kName,
                          [alpha](C a, C b) { return std::fma(alpha, b, a); });
    } else {
      return RunBinary<T>(call, kName, [alpha](C a, C b) {
        return WrapAdd(a, WrapMul(alpha, b));
      });
    }
  }
};

struct Mul {
  static constexpr const char* kName = "mul";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 2, 0, 1); s != TF_OK) return s;
    using C = ComputeOf<T>;
    if constexpr (kIsFloating<T>) {
      return RunBinary<T>(call, kName, [](C a, C b) { return a * b; });
    } else {
      return RunBinary<T>(call, kName, [](C a, C b) { return WrapMul(a, b); });
    }
  }
};

// clamp: each bound is absent, a tensor broadcast to out's shape, or a
// scalar. Scalars and absent bounds become one stored value seen at every
// position (an absent bound is the dtype's identity: -inf/+inf or the
// integer limits), so one ternary loop serves all nine combinations.
struct Clamp {
  static constexpr const char* kName = "clamp";

  template <typename T>
  static tf_status Bound(const tf_call* call, const tf_arg& arg,
                         ComputeOf<T> identity, T* storage,
                         View<const T>* view) {
    using C = ComputeOf<T>;
    if (arg.kind == TF_ARG_TENSOR) {
      *view = ViewOf<const T>(*arg.value.tensor);
      return TF_OK;
    }
    C value = identity;
    if (arg.kind != TF_ARG_NONE && !ScalarAs<T>(arg, &value)) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "clamp: expected each bound to be none, a tensor or %s, "
                  "found a %s argument",
                  kIsFloating<T> ? "a float" : "an int", ArgKindName(arg.kind));
    }
    // Rounded to the tensor's dtype, as torch converts a scalar bound.
    *storage = Store<T>(value);
    *view = BroadcastValue(storage);
    return TF_OK;
  }

  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 3, 0, 1); s != TF_OK) return s;
    using C = ComputeOf<T>;
    using Limits = std::numeric_limits<C>;
    const C lowest = kIsFloating<T> ? -Limits::infinity() : Limits::lowest();
    const C highest = kIsFloating<T> ? Limits::infinity() : Limits::max();
    T lo_value{}, hi_value{};
    View<const T> lo{}, hi{};
    if (tf_status s = Bound<T>(call, call->inputs[1], lowest, &lo_value, &lo);
        s != TF_OK) {
      return s;
    }
    if (tf_status s = Bound<T>(call, call->inputs[2], highest, &hi_value, &hi);
        s != TF_OK) {
      return s;
    }
    const tf_tensor& x = TensorArg(call->inputs, 0);
    const tf_tensor& out = call->outputs[0];
    // min(max(v, l), h): with l > h the result is h, as in torch. A NaN in
    // v survives both comparisons; a NaN bound makes the result NaN, as
    // torch's clamp does.
    const auto clamp = [](C v, C l, C h) {
      C r = v < l ? l : v;
      r = r > h ? h : r;
      if constexpr (kIsFloating<T>) {
        r = l != l ? l : r;
        r = h != h ? h : r;
      }
      return r;
    };
    bool done;
    if constexpr (kBlocked<T>) {
      done = MapBlocked(out.ndim, out.shape, ViewOf<T>(out), clamp,
                        ViewOf<const T>(x), lo, hi);
    } else {
      done = Map3(out.ndim, out.shape, ViewOf<T>(out), ViewOf<const T>(x), lo,
                  hi, [clamp](T xs, T los, T his) {
                    return Store<T>(clamp(Load(xs), Load(los), Load(his)));
                  });
    }
    return done ? TF_OK : TooManyDims(call, kName, out.ndim);
  }
};

// Beyond ArithmeticTypes: abs and neg of uint8 (identity, and negation
// modulo 2**8, as torch computes them), add of the wide unsigned types (which
// torch lacks, so the ATen fallback cannot serve them) and clamp of bool (a
// max then a min, as torch's clamp with tensor bounds).
constexpr auto kTable = JoinKernels(
    KernelsFor<Abs>(ArithmeticTypes{}), KernelsFor<Abs>(TypeList<uint8_t>{}),
    KernelsFor<Neg>(ArithmeticTypes{}), KernelsFor<Neg>(TypeList<uint8_t>{}),
    KernelsFor<Exp>(FloatTypes{}), KernelsFor<Silu>(FloatTypes{}),
    KernelsFor<Add>(ArithmeticTypes{}), KernelsFor<Add>(WideUnsignedTypes{}),
    KernelsFor<Mul>(ArithmeticTypes{}), KernelsFor<Mul>(WideUnsignedTypes{}),
    KernelsFor<Clamp>(ArithmeticTypes{}), KernelsFor<Clamp>(TypeList<Bool>{}));

}  // namespace

KernelList ElementwiseKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
