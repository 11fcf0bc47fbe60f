// add, mul and silu_and_mul: two operands of one dtype combined elementwise.
// add and mul receive operands already broadcast to the output's shape
// (stride 0 on broadcast dimensions); silu_and_mul reads the two halves of
// its input's last dimension as two operands.
#include "plugins/cuda/elementwise.cuh"
#include "plugins/cuda/math.cuh"
#include "plugins/cuda/ops.h"

namespace torchferry::cuda {
namespace {

template <typename T>
struct AddFn {
  OpMathT<T> alpha;
  __device__ __forceinline__ T operator()(T x, T y) const {
    if constexpr (kIsFloating<T>) {
      return FromOpMath<T>(ToOpMath(x) + alpha * ToOpMath(y));
    } else {
      return WrapAdd(x, WrapMul(alpha, y));
    }
  }
};

template <typename T>
struct MulFn {
  __device__ __forceinline__ T operator()(T x, T y) const {
    if constexpr (kIsFloating<T>) {
      return FromOpMath<T>(ToOpMath(x) * ToOpMath(y));
    } else {
      return WrapMul(x, y);
    }
  }
};

template <typename T>
struct SiluAndMulFn {
  __device__ __forceinline__ T operator()(T gate, T up) const {
    return FromOpMath<T>(Silu(ToOpMath(gate)) * ToOpMath(up));
  }
};

tf_status NoKernel(const tf_call* call, const char* op, const tf_tensor& x) {
  return Fail(call, TF_ERROR_UNSUPPORTED, "%s: no kernel for %s", op,
              DtypeName(DtypeOf(x.dtype)));
}

}  // namespace

tf_status Add(const tf_call* call) {
  const tf_tensor& out = call->outputs[0];
  const tf_tensor* in[2] = {&InputTensor(call, 0), &InputTensor(call, 1)};
  // alpha is FLOAT for float dtypes and INT for integer ones; an absent
  // alpha means 1.
  const double alpha_f = AttrAsDouble(call, 0, 1.0);
  const int64_t alpha_i = AttrAsInt(call, 0, 1);
  DeviceGuard guard(call, out.device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchFloatInt(
      DtypeOf(in[0]->dtype),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        AddFn<T> fn;
        if constexpr (kIsFloating<T>) {
          fn.alpha = static_cast<OpMathT<T>>(alpha_f);
        } else {
          fn.alpha = static_cast<T>(alpha_i);
        }
        return LaunchElementwise<T, 2>(call, "add", out, in, fn);
      },
      [&] { return NoKernel(call, "add", *in[0]); });
}

tf_status Mul(const tf_call* call) {
  const tf_tensor& out = call->outputs[0];
  const tf_tensor* in[2] = {&InputTensor(call, 0), &InputTensor(call, 1)};
  DeviceGuard guard(call, out.device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchFloatIntWideUnsigned(
      DtypeOf(in[0]->dtype),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        return LaunchElementwise<T, 2>(call, "mul", out, in, MulFn<T>{});
      },
      [&] { return NoKernel(call, "mul", *in[0]); });
}

tf_status SiluAndMul(const tf_call* call) {
  const tf_tensor& out = call->outputs[0];
  const tf_tensor& x = InputTensor(call, 0);
  const int last = x.ndim - 1;
  const int64_t half = x.shape[last] / 2;
  DeviceGuard guard(call, out.device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchFloat(
      DtypeOf(x.dtype),
      [&](auto tag) {
        using T = typename decltype(tag)::type;
        // The second half starts `half` elements along the last dimension;
        // both halves keep x's strides and iterate over out's shape.
        T* gate = static_cast<T*>(DataOf(x));
        const Operand in[2] = {{gate, x.strides},
                               {gate + half * x.strides[last], x.strides}};
        return LaunchElementwise<T, 2>(
            call, "silu_and_mul", out.ndim, out.shape,
            Operand{DataOf(out), out.strides}, in, SiluAndMulFn<T>{});
      },
      [&] { return NoKernel(call, "silu_and_mul", x); });
}

}  // namespace torchferry::cuda
