// The one C function behind every kernel of the plugin. It is the boundary
// that no C++ exception crosses: everything the call raises, c10::Error
// included, becomes a status and a message through host->set_error.
#pragma once

#include "abi/torchferry.h"

namespace torchferry::aten {

// tf_kernel.fn of every kernel; tf_call.kernel_data says which op it is.
tf_status RunKernel(const tf_call* call);

}  // namespace torchferry::aten
