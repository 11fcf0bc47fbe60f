/* Broken: a kernel whose op name is NULL. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
    SYNTHETIC_KERNEL(NULL, TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("nullop", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
