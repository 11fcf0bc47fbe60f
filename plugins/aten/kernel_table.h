// Which (op, device type, dtype) kernels this plugin registers, and the state
// each kernel carries through tf_kernel.kernel_data.
#pragma once

#include <deque>
#include <vector>

#include "abi/torchferry.h"
#include "ops.h"
#include "wrapper_pool.h"

namespace torchferry::aten {

// What tf_call.kernel_data points at.
struct KernelState {
  const char* op;
  OpBody body;
  int32_t device_type;
  tf_dtype dtype;
  KernelPools pools;
};

struct KernelTable {
  std::vector<tf_kernel> kernels;
  std::deque<KernelState> states;  // a deque: kernels point into it
};

// Built on first use and never destroyed: kernels and their pools must stay
// valid until the process exits.
const KernelTable& Kernels();

}  // namespace torchferry::aten
