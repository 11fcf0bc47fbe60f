/* Broken: an op ABI 1.0 does not have, from a plugin of the same minor. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
    SYNTHETIC_KERNEL("gelu", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("unknownop", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
