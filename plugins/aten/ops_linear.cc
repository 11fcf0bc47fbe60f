// linear as ATen calls. The host hands over matmul's shapes (input [B, M,
// K], the weight as the [B, K, N] view weight.t(), out [B, M, N]), so the
// product is matmul's bmm and the bias is added to every row.
#include <ATen/ops/bmm.h>

#include "ops.h"

namespace torchferry::aten {

void Linear(BoundTensors& tensors, const tf_call& call) {
  at::Tensor& out = tensors.Output(0);
  at::bmm_out(out, tensors.Input(0), tensors.Input(1));
  if (call.num_inputs > 2 && call.inputs[2].kind == TF_ARG_TENSOR) {
    out.add_(tensors.Input(2));
  }
}

}  // namespace torchferry::aten
