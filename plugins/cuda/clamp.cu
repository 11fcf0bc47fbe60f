// clamp: out = min(max(x, min), max), where each bound is absent, a scalar,
// or a tensor broadcast to out's shape. Tensor bounds become extra operands
// of the elementwise engine; scalar bounds ride in the functor.
#include "plugins/cuda/elementwise.cuh"
#include "plugins/cuda/math.cuh"
#include "plugins/cuda/ops.h"

namespace torchferry::cuda {
namespace {

// Integers compare in int64 so that a scalar bound outside the dtype's range
// still orders correctly against every element.
template <typename T>
using ClampMath = std::conditional_t<kIsFloating<T>, OpMathT<T>, int64_t>;

template <typename T>
__device__ __forceinline__ ClampMath<T> ToClampMath(T x) {
  if constexpr (kIsFloating<T>) {
    return ToOpMath(x);
  } else {
    return static_cast<int64_t>(x);
  }
}

template <typename T>
__device__ __forceinline__ T FromClampMath(ClampMath<T> x) {
  if constexpr (kIsFloating<T>) {
    return FromOpMath<T>(x);
  } else {
    return static_cast<T>(x);
  }
}

template <typename T>
struct ScalarBounds {
  bool has_min;
  bool has_max;
  ClampMath<T> min;
  ClampMath<T> max;

  __device__ __forceinline__ ClampMath<T> Apply(ClampMath<T> v) const {
    if (has_min) v = MaxPropagateNan(v, min);
    if (has_max) v = MinPropagateNan(v, max);
    return v;
  }
};

template <typename T>
struct ClampScalarsFn {
  ScalarBounds<T> bounds;
  __device__ __forceinline__ T operator()(T x) const {
    return FromClampMath<T>(bounds.Apply(ToClampMath(x)));
  }
};

// min is a tensor; max is absent or a scalar.
template <typename T>
struct ClampTensorMinFn {
  ScalarBounds<T> bounds;
  __device__ __forceinline__ T operator()(T x, T min) const {
    const ClampMath<T> v = MaxPropagateNan(ToClampMath(x), ToClampMath(min));
    return FromClampMath<T>(bounds.Apply(v));
  }
};

// max is a tensor; min is absent or a scalar.
template <typename T>
struct ClampTensorMaxFn {
  ScalarBounds<T> bounds;
  __device__ __forceinline__ T operator()(T x, T max) const {
    const ClampMath<T> v = bounds.Apply(ToClampMath(x));
    return FromClampMath<T>(MinPropagateNan(v, ToClampMath(max)));
  }
};

template <typename T>
struct ClampTensorsFn {
  __device__ __forceinline__ T operator()(T x, T min, T max) const {
    const ClampMath<T> v = MaxPropagateNan(ToClampMath(x), ToClampMath(min));
    return FromClampMath<T>(MinPropagateNan(v, ToClampMath(max)));
  }
};

template <typename T>
ClampMath<T> ScalarValue(const tf_arg& arg) {
  if constexpr (kIsFloating<T>) {
    return static_cast<ClampMath<T>>(arg.kind == TF_ARG_INT
                                         ? static_cast<double>(arg.value.i)
                                         : arg.value.f);
  } else {
    return arg.kind == TF_ARG_FLOAT ? static_cast<int64_t>(arg.value.f)
                                    : arg.value.i;
  }
}

bool IsScalar(const tf_arg& arg) {
  return arg.kind == TF_ARG_FLOAT || arg.kind == TF_ARG_INT ||
         arg.kind == TF_ARG_BOOL;
}

template <typename T>
tf_status ClampAs(const tf_call* call) {
  const tf_tensor& out = call->outputs[0];
  const tf_tensor* x = &InputTensor(call, 0);
  const tf_arg& min = call->inputs[1];
  const tf_arg& max = call->inputs[2];
  const bool min_tensor = min.kind == TF_ARG_TENSOR;
  const bool max_tensor = max.kind == TF_ARG_TENSOR;

  // Scalar bounds; a tensor bound is applied by the functor itself.
  ScalarBounds<T> bounds{};
  if (IsScalar(min)) {
    bounds.has_min = true;
    bounds.min = ScalarValue<T>(min);
  }
  if (IsScalar(max)) {
    bounds.has_max = true;
    bounds.max = ScalarValue<T>(max);
  }

  if (min_tensor && max_tensor) {
    const tf_tensor* in[3] = {x, min.value.tensor, max.value.tensor};
    return LaunchElementwise<T, 3>(call, "clamp", out, in, ClampTensorsFn<T>{});
  }
  if (min_tensor) {
    const tf_tensor* in[2] = {x, min.value.tensor};
    return LaunchElementwise<T, 2>(call, "clamp", out, in,
                                   ClampTensorMinFn<T>{bounds});
  }
  if (max_tensor) {
    const tf_tensor* in[2] = {x, max.value.tensor};
    return LaunchElementwise<T, 2>(call, "clamp", out, in,
                                   ClampTensorMaxFn<T>{bounds});
  }
  const tf_tensor* in[1] = {x};
  return LaunchElementwise<T, 1>(call, "clamp", out, in,
                                 ClampScalarsFn<T>{bounds});
}

}  // namespace

tf_status Clamp(const tf_call* call) {
  const tf_tensor& out = call->outputs[0];
  const Dtype dtype = DtypeOf(InputTensor(call, 0).dtype);
  DeviceGuard guard(call, out.device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchFloatInt(
      dtype,
      [&](auto tag) { return ClampAs<typename decltype(tag)::type>(call); },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED, "clamp: no kernel for %s",
                    DtypeName(dtype));
      });
}

}  // namespace torchferry::cuda
