/* Broken: tf_kernel.struct_size smaller than ABI 1.0's. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    {offsetof(tf_kernel, fn), "abs", TF_DEVICE_CPU, SYNTHETIC_F32,
     synthetic_ok_kernel, NULL},
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("smallkernel", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
