/* Correct, with a kernel that always fails: the message (UTF-8, longer than
   any fixed buffer a host might be tempted to use) must reach the caller
   intact. */
#include "synthetic.h"

#define KERNELERROR_MESSAGE                                                \
  "simulated failure: x has a NaN at index 3 \xc3\xa9\xe2\x9c\x93 | "      \
  "0123456789012345678901234567890123456789012345678901234567890123456789" \
  "0123456789012345678901234567890123456789012345678901234567890123456789" \
  "0123456789012345678901234567890123456789012345678901234567890123456789" \
  "0123456789012345678901234567890123456789012345678901234567890123456789" \
  " | end"

static tf_status kernelerror_neg(const tf_call* call) {
  return call->host->set_error(call->error_sink, TF_ERROR_INVALID_ARGUMENT,
                               KERNELERROR_MESSAGE);
}

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("neg", TF_DEVICE_CPU, SYNTHETIC_F32, kernelerror_neg),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("kernelerror", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
