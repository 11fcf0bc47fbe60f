// The kernel entry points, one per v1 op. Each switches on the dtype of the
// op's first tensor input at run time; the kernel table (plugin_entry.cc)
// registers each for the dtypes it carries.
#pragma once

#include "abi/torchferry.h"

namespace torchferry::cuda {

tf_status Abs(const tf_call* call);
tf_status Neg(const tf_call* call);
tf_status ExpOp(const tf_call* call);
tf_status SiluOp(const tf_call* call);
tf_status Add(const tf_call* call);
tf_status Mul(const tf_call* call);
tf_status Clamp(const tf_call* call);
tf_status Stack(const tf_call* call);
tf_status Cast(const tf_call* call);
tf_status SiluAndMul(const tf_call* call);
tf_status RmsNorm(const tf_call* call);
tf_status AddRmsNorm(const tf_call* call);
tf_status Softmax(const tf_call* call);
tf_status Matmul(const tf_call* call);
tf_status Noop(const tf_call* call);
// attention (attention.cu)
tf_status RotaryEmbedding(const tf_call* call);
tf_status Attention(const tf_call* call);
// linear (linear.cc)
tf_status Linear(const tf_call* call);
// embedding and cat
tf_status Embedding(const tf_call* call);
tf_status Cat(const tf_call* call);

}  // namespace torchferry::cuda
