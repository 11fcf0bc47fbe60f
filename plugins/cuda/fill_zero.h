// Writes zeros over a strided tensor on the call's stream. matmul needs it
// for an empty inner dimension (k == 0), where cuBLAS has nothing to sum.
#pragma once

#include "abi/torchferry.h"

namespace torchferry::cuda {

tf_status FillZero(const tf_call* call, const tf_tensor& tensor,
                   const char* op);

}  // namespace torchferry::cuda
