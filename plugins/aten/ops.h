// The v1 ops (abi/ABI.md) as ATen calls. Each body reads the call's bound
// tensors and attributes and writes its outputs through at::*_out functions;
// the host has already checked the arguments against the op's schema.
#pragma once

#include "abi/torchferry.h"
#include "tensor_binding.h"

namespace torchferry::aten {

using OpBody = void (*)(BoundTensors& tensors, const tf_call& call);

void Abs(BoundTensors& tensors, const tf_call& call);
void Neg(BoundTensors& tensors, const tf_call& call);
void Exp(BoundTensors& tensors, const tf_call& call);
void Silu(BoundTensors& tensors, const tf_call& call);
void Add(BoundTensors& tensors, const tf_call& call);
void Mul(BoundTensors& tensors, const tf_call& call);
void Clamp(BoundTensors& tensors, const tf_call& call);
void Stack(BoundTensors& tensors, const tf_call& call);
void Cast(BoundTensors& tensors, const tf_call& call);
void SiluAndMul(BoundTensors& tensors, const tf_call& call);
void RmsNorm(BoundTensors& tensors, const tf_call& call);
void AddRmsNorm(BoundTensors& tensors, const tf_call& call);
void Softmax(BoundTensors& tensors, const tf_call& call);
void Matmul(BoundTensors& tensors, const tf_call& call);
// Binding the views is all it does: it measures the dispatch and wrapping.
void Noop(BoundTensors& tensors, const tf_call& call);
// embedding and cat (llm_ops.cc).
void Embedding(BoundTensors& tensors, const tf_call& call);
void Cat(BoundTensors& tensors, const tf_call& call);

// attention (ops_attention.cc)
void RotaryEmbedding(BoundTensors& tensors, const tf_call& call);
void Attention(BoundTensors& tensors, const tf_call& call);
// linear (ops_linear.cc)
void Linear(BoundTensors& tensors, const tf_call& call);

}  // namespace torchferry::aten
