// noop: looks at every tensor view it is given and computes nothing. Timing
// it measures what a call costs on its way to a kernel: the bridge, the
// lookup and the call itself.
#include "call.h"
#include "dtype.h"
#include "kernel_table.h"

namespace torchferry::cpu {
namespace {

struct Noop {
  static constexpr const char* kName = "noop";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    // Reading each view is part of what a real kernel pays for, so noop
    // pays it too; a missing tensor is the host's bug and is reported.
    for (int32_t i = 0; i < call->num_inputs; ++i) {
      const tf_arg& arg = call->inputs[i];
      if (arg.kind != TF_ARG_TENSOR || arg.value.tensor == nullptr ||
          (arg.value.tensor->ndim > 0 && arg.value.tensor->shape == nullptr)) {
        return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                    "noop: expected every input to be a tensor with its "
                    "shape, found a bad argument at input %d (kind %d)",
                    static_cast<int>(i), static_cast<int>(arg.kind));
      }
    }
    return TF_OK;
  }
};

constexpr auto kTable = KernelsFor<Noop>(AllTypes{});

}  // namespace

KernelList NoopKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
