/* Broken: a vector dtype (lanes 4); ABI v1 has lanes 1 only. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    {sizeof(tf_kernel),
     "abs",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, 32, 4},
     synthetic_ok_kernel,
     NULL},
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("badlanes", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
