// rotary_embedding and scaled_dot_product_attention as ATen calls.
#include <ATen/OpMathType.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/scaled_dot_product_attention.h>

#include <optional>
#include <string>

#include "kernel_error.h"
#include "ops.h"

namespace torchferry::aten {
namespace {

const tf_arg& AttrOfKind(const tf_call& call, int index, int32_t kind) {
  if (index >= call.num_attrs || call.attrs[index].kind != kind) {
    throw KernelError(TF_ERROR_INTERNAL,
                      "expected attribute " + std::to_string(index) +
                          " of kind " + std::to_string(kind) +
                          "; the op table and the host's schema disagree");
  }
  return call.attrs[index];
}

}  // namespace

void RotaryEmbedding(BoundTensors& tensors, const tf_call& call) {
  const at::Tensor& x = tensors.Input(0);
  at::Tensor& out = tensors.Output(0);
  const bool interleaved = AttrOfKind(call, 0, TF_ARG_BOOL).value.i != 0;
  const at::ScalarType wide = at::toOpMathType(x.scalar_type());
  const at::Tensor c = tensors.Input(1).to(wide);
  const at::Tensor s = tensors.Input(2).to(wide);
  const int64_t half = c.size(-1);
  const at::Tensor rot = x.narrow(-1, 0, 2 * half).to(wide);
  const at::Tensor a =
      interleaved ? rot.slice(-1, 0, 2 * half, 2) : rot.narrow(-1, 0, half);
  const at::Tensor b =
      interleaved ? rot.slice(-1, 1, 2 * half, 2) : rot.narrow(-1, half, half);
  // Both results exist before out is written: out may be x itself.
  const at::Tensor ra = a.mul(c).sub(b.mul(s)).to(x.scalar_type());
  const at::Tensor rb = b.mul(c).add(a.mul(s)).to(x.scalar_type());
  const int64_t head_dim = x.size(-1);
  if (!out.is_same(x) && head_dim > 2 * half) {
    out.narrow(-1, 2 * half, head_dim - 2 * half)
        .copy_(x.narrow(-1, 2 * half, head_dim - 2 * half));
  }
  at::Tensor out_rot = out.narrow(-1, 0, 2 * half);
  if (interleaved) {
    out_rot.slice(-1, 0, 2 * half, 2).copy_(ra);
    out_rot.slice(-1, 1, 2 * half, 2).copy_(rb);
  } else {
    out_rot.narrow(-1, 0, half).copy_(ra);
    out_rot.narrow(-1, half, half).copy_(rb);
  }
}

void Attention(BoundTensors& tensors, const tf_call& call) {
  const at::Tensor& q = tensors.Input(0);
  const at::Tensor& k = tensors.Input(1);
  const at::Tensor& v = tensors.Input(2);
  std::optional<at::Tensor> mask;
  if (call.num_inputs > 3 && call.inputs[3].kind == TF_ARG_TENSOR) {
    mask = tensors.Input(3);
  }
  const int64_t causal = AttrOfKind(call, 0, TF_ARG_INT).value.i;
  const double scale = AttrOfKind(call, 1, TF_ARG_FLOAT).value.f;
  const int64_t L = q.size(-2), S = k.size(-2);
  if (causal == 2) {
    // torch's causal_lower_right: key j is kept for query i when
    // j <= i + S - L.
    mask = at::ones({L, S}, q.options().dtype(at::kBool)).tril_(S - L);
  }
  // The host presents k and v with their own head count under GQA.
  const bool gqa = q.size(-3) != k.size(-3);
#if TORCHFERRY_ATEN_HAS_SDPA_GQA
  tensors.Output(0).copy_(at::scaled_dot_product_attention(
      q, k, v, mask, /*dropout_p=*/0.0, /*is_causal=*/causal == 1, scale, gqa));
#else
  // No enable_gqa before torch 2.5: each k and v head serves a run of
  // q.size(-3) / k.size(-3) query heads, as enable_gqa would pair them.
  const int64_t groups = gqa ? q.size(-3) / k.size(-3) : 1;
  const at::Tensor kk = gqa ? k.repeat_interleave(groups, -3) : k;
  const at::Tensor vv = gqa ? v.repeat_interleave(groups, -3) : v;
  tensors.Output(0).copy_(at::scaled_dot_product_attention(
      q, kk, vv, mask, /*dropout_p=*/0.0, /*is_causal=*/causal == 1, scale));
#endif
}

}  // namespace torchferry::aten
