/* Broken: a kernel without a function. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
    SYNTHETIC_KERNEL("neg", TF_DEVICE_CPU, SYNTHETIC_F32, NULL),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("nullfn", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
