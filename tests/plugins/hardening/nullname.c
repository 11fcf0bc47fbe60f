/* Broken: the name pointer is NULL. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = SYNTHETIC_PLUGIN(NULL, TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
