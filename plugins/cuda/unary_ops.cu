// abs, neg, exp and silu: one input, one output of the same dtype.
#include "plugins/cuda/elementwise.cuh"
#include "plugins/cuda/math.cuh"
#include "plugins/cuda/ops.h"

namespace torchferry::cuda {
namespace {

template <typename T>
struct AbsFn {
  __device__ __forceinline__ T operator()(T x) const {
    if constexpr (kIsFloating<T>) {
      return FromOpMath<T>(Abs(ToOpMath(x)));
    } else {
      return x < 0 ? WrapNeg(x) : x;
    }
  }
};

template <typename T>
struct NegFn {
  __device__ __forceinline__ T operator()(T x) const {
    if constexpr (kIsFloating<T>) {
      return FromOpMath<T>(-ToOpMath(x));
    } else {
      return WrapNeg(x);
    }
  }
};

template <typename T>
struct ExpFn {
  __device__ __forceinline__ T operator()(T x) const {
    return FromOpMath<T>(Exp(ToOpMath(x)));
  }
};

template <typename T>
struct SiluFn {
  __device__ __forceinline__ T operator()(T x) const {
    return FromOpMath<T>(Silu(ToOpMath(x)));
  }
};

template <template <typename> class Fn, typename Dispatch>
tf_status RunUnary(const tf_call* call, const char* op, Dispatch dispatch) {
  const tf_tensor& out = call->outputs[0];
  const tf_tensor* in[1] = {&InputTensor(call, 0)};
  DeviceGuard guard(call, out.device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return dispatch(
      DtypeOf(in[0]->dtype),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        return LaunchElementwise<T, 1>(call, op, out, in, Fn<T>{});
      },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED, "%s: no kernel for %s", op,
                    DtypeName(DtypeOf(in[0]->dtype)));
      });
}

struct FloatIntDispatch {
  template <typename F, typename G>
  tf_status operator()(Dtype dtype, F&& f, G&& g) const {
    return DispatchFloatInt(dtype, f, g);
  }
};
struct FloatDispatch {
  template <typename F, typename G>
  tf_status operator()(Dtype dtype, F&& f, G&& g) const {
    return DispatchFloat(dtype, f, g);
  }
};

}  // namespace

tf_status Abs(const tf_call* call) {
  return RunUnary<AbsFn>(call, "abs", FloatIntDispatch{});
}

tf_status Neg(const tf_call* call) {
  return RunUnary<NegFn>(call, "neg", FloatIntDispatch{});
}

tf_status ExpOp(const tf_call* call) {
  return RunUnary<ExpFn>(call, "exp", FloatDispatch{});
}

tf_status SiluOp(const tf_call* call) {
  return RunUnary<SiluFn>(call, "silu", FloatDispatch{});
}

}  // namespace torchferry::cuda
