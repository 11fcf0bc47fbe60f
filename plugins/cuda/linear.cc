// linear: the host hands over matmul's shapes (input [B, M, K], the weight
// as the [B, K, N] view weight.t(), out [B, M, N];
// core/prepare/prepare_linear.cc), so the product is this plugin's matmul
// (cuBLAS) and the bias is its add, out += bias broadcast over the rows by
// stride 0, on the same stream.
#include <cstdint>

#include "call_util.h"
#include "ops.h"

namespace torchferry::cuda {

tf_status Linear(const tf_call* call) {
  if (call->num_inputs != 3) {
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "linear: expected 3 inputs (input, weight, bias), found %d",
                call->num_inputs);
  }
  tf_call product = *call;
  product.num_inputs = 2;
  if (tf_status s = Matmul(&product); s != TF_OK) return s;
  const tf_arg& bias_arg = call->inputs[2];
  if (bias_arg.kind == TF_ARG_NONE) return TF_OK;
  const tf_tensor& out = call->outputs[0];
  if (bias_arg.kind != TF_ARG_TENSOR || bias_arg.value.tensor->ndim != 1 ||
      out.ndim != 3 || bias_arg.value.tensor->shape[0] != out.shape[2]) {
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "linear: expected bias TF_ARG_NONE or a 1-D tensor of out's "
                "last dim");
  }
  const tf_tensor& bias = *bias_arg.value.tensor;
  int64_t strides[3] = {0, 0, bias.strides[0]};
  tf_tensor rows = bias;
  rows.ndim = 3;
  rows.shape = out.shape;
  rows.strides = strides;
  rows.flags = 0;
  tf_arg inputs[2]{};
  inputs[0].kind = TF_ARG_TENSOR;
  inputs[0].value.tensor = &out;
  inputs[1].kind = TF_ARG_TENSOR;
  inputs[1].value.tensor = &rows;
  tf_arg alpha{};
  alpha.kind = TF_ARG_FLOAT;
  alpha.value.f = 1.0;
  tf_call add = *call;
  add.inputs = inputs;
  add.num_inputs = 2;
  add.attrs = &alpha;
  add.num_attrs = 1;
  return Add(&add);
}

}  // namespace torchferry::cuda
