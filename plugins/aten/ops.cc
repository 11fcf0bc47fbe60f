#include "ops.h"

#include <ATen/OpMathType.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/add.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/clamp_max.h>
#include <ATen/ops/clamp_min.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/stack.h>

#include <array>
#include <optional>
#include <string>

#include "kernel_error.h"

namespace torchferry::aten {
namespace {

[[noreturn]] void SchemaMismatch(const std::string& what) {
  throw KernelError(
      TF_ERROR_INTERNAL,
      "expected " + what + "; the op table and the host's schema disagree");
}

const tf_arg& Attr(const tf_call& call, int index) {
  if (index >= call.num_attrs) {
    SchemaMismatch("attribute " + std::to_string(index));
  }
  return call.attrs[index];
}

c10::Scalar ScalarOf(const tf_arg& arg) {
  switch (arg.kind) {
    case TF_ARG_FLOAT:
      return c10::Scalar(arg.value.f);
    case TF_ARG_INT:
      return c10::Scalar(static_cast<int64_t>(arg.value.i));
    case TF_ARG_BOOL:
      return c10::Scalar(arg.value.i != 0);
  }
  SchemaMismatch("a scalar argument, found argument kind " +
                 std::to_string(arg.kind));
}

int64_t IntAttr(const tf_call& call, int index) {
  const tf_arg& arg = Attr(call, index);
  if (arg.kind != TF_ARG_INT) SchemaMismatch("an int attribute");
  return arg.value.i;
}

double FloatAttr(const tf_call& call, int index) {
  const tf_arg& arg = Attr(call, index);
  if (arg.kind != TF_ARG_FLOAT) SchemaMismatch("a float attribute");
  return arg.value.f;
}

std::optional<c10::Scalar> OptionalScalarOf(const tf_arg& arg) {
  if (arg.kind == TF_ARG_NONE) return std::nullopt;
  return ScalarOf(arg);
}

std::optional<at::Tensor> OptionalTensorOf(BoundTensors& tensors,
                                           const tf_call& call, int index) {
  if (call.inputs[index].kind == TF_ARG_NONE) return std::nullopt;
  return tensors.Input(index);
}

}  // namespace

void Abs(BoundTensors& tensors, const tf_call&) {
  at::abs_out(tensors.Output(0), tensors.Input(0));
}

void Neg(BoundTensors& tensors, const tf_call&) {
  at::neg_out(tensors.Output(0), tensors.Input(0));
}

void Exp(BoundTensors& tensors, const tf_call&) {
  at::exp_out(tensors.Output(0), tensors.Input(0));
}

void Silu(BoundTensors& tensors, const tf_call&) {
  at::silu_out(tensors.Output(0), tensors.Input(0));
}

void Add(BoundTensors& tensors, const tf_call& call) {
  const c10::Scalar alpha =
      call.num_attrs > 0 ? ScalarOf(call.attrs[0]) : c10::Scalar(1);
  const at::Tensor& x = tensors.Input(0);
  if (x.is_cpu() && at::isReducedFloatingType(x.scalar_type())) {
    // ATen's CPU add rounds alpha to float16/bfloat16; the ABI applies it in
    // float32 (the host carries a Python number operand in it). out may be
    // x or y exactly: the sum is formed apart, then written.
    tensors.Output(0).copy_(
        at::add(x.to(at::kFloat), tensors.Input(1).to(at::kFloat), alpha));
    return;
  }
  at::add_out(tensors.Output(0), x, tensors.Input(1), alpha);
}

void Mul(BoundTensors& tensors, const tf_call&) {
  at::mul_out(tensors.Output(0), tensors.Input(0), tensors.Input(1));
}

void Clamp(BoundTensors& tensors, const tf_call& call) {
  if (call.num_inputs < 3) SchemaMismatch("x, min and max inputs");
  at::Tensor& out = tensors.Output(0);
  const at::Tensor& x = tensors.Input(0);
  const tf_arg& min = call.inputs[1];
  const tf_arg& max = call.inputs[2];
  const bool min_is_tensor = min.kind == TF_ARG_TENSOR;
  const bool max_is_tensor = max.kind == TF_ARG_TENSOR;
  const bool min_is_scalar = !min_is_tensor && min.kind != TF_ARG_NONE;
  const bool max_is_scalar = !max_is_tensor && max.kind != TF_ARG_NONE;
  if (!min_is_tensor && !max_is_tensor) {
    at::clamp_out(out, x, OptionalScalarOf(min), OptionalScalarOf(max));
  } else if (!min_is_scalar && !max_is_scalar) {
    at::clamp_out(out, x, OptionalTensorOf(tensors, call, 1),
                  OptionalTensorOf(tensors, call, 2));
  } else {
    // ATen has no clamp that mixes a tensor bound with a scalar one. The
    // definition, min(max(x, lo), hi), splits into two passes, the second in
    // place on out (an elementwise op may write over its input).
    if (min_is_tensor) {
      at::clamp_min_out(out, x, tensors.Input(1));
    } else {
      at::clamp_min_out(out, x, ScalarOf(min));
    }
    if (max_is_tensor) {
      at::clamp_max_out(out, out, tensors.Input(2));
    } else {
      at::clamp_max_out(out, out, ScalarOf(max));
    }
  }
}

void Stack(BoundTensors& tensors, const tf_call& call) {
  const std::vector<at::Tensor> items = tensors.InputList(0);
  at::stack_out(tensors.Output(0), items, IntAttr(call, 0));
}

void Cast(BoundTensors& tensors, const tf_call&) {
  // copy_ converts as the ABI asks: floats truncate toward zero, and
  // anything becomes bool as x != 0.
  tensors.Output(0).copy_(tensors.Input(0));
}

void SiluAndMul(BoundTensors& tensors, const tf_call&) {
  const at::Tensor& x = tensors.Input(0);
  at::Tensor& out = tensors.Output(0);
  const int64_t half = x.size(-1) / 2;
  at::silu_out(out, x.narrow(-1, 0, half));
  at::mul_out(out, out, x.narrow(-1, half, half));
}

namespace {
// ATen's rms_norm has no out= form. This follows its composite definition
// step for step: normalise in the op-math type (float32 for the half types),
// round to x's dtype, then scale by the weight in x's dtype.
void RmsNormInto(at::Tensor& out, const at::Tensor& x, const at::Tensor& weight,
                 double eps) {
  const at::Tensor wide = x.to(at::toOpMathType(x.scalar_type()));
  const std::array<int64_t, 1> last_dim{-1};
  const at::Tensor inv_rms =
      at::rsqrt(wide.square().mean(last_dim, /*keepdim=*/true).add_(eps));
  at::mul_out(out, wide.mul(inv_rms).to(x.scalar_type()), weight);
}
}  // namespace

void RmsNorm(BoundTensors& tensors, const tf_call& call) {
  RmsNormInto(tensors.Output(0), tensors.Input(0), tensors.Input(1),
              FloatAttr(call, 0));
}

void AddRmsNorm(BoundTensors& tensors, const tf_call& call) {
  // The second output is the residual, read and written in place.
  at::Tensor& residual = tensors.Output(1);
  residual.add_(tensors.Input(0));
  RmsNormInto(tensors.Output(0), residual, tensors.Input(1),
              FloatAttr(call, 0));
}

void Softmax(BoundTensors& tensors, const tf_call& call) {
  // ATen accumulates in float32 for the half types, as the ABI asks.
  at::Tensor& out = tensors.Output(0);
  const at::Tensor& x = tensors.Input(0);
  const int64_t dim = IntAttr(call, 0);
  if (out.is_contiguous()) {
    at::_softmax_out(out, x, dim, /*half_to_float=*/false);
    return;
  }
  // ATen's softmax writes a non-contiguous out= as if it were contiguous
  // (torch 2.13 and 2.14 alike: wrong values, and writes past the view), so
  // such an output is filled from a contiguous result.
  out.copy_(at::_softmax(x, dim, /*half_to_float=*/false));
}

void Matmul(BoundTensors& tensors, const tf_call&) {
  at::bmm_out(tensors.Output(0), tensors.Input(0), tensors.Input(1));
}

void Noop(BoundTensors&, const tf_call&) {}

}  // namespace torchferry::aten
