/* Broken: a dtype code ABI v1 does not have (3 is DLPack's opaque handle). */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    {sizeof(tf_kernel),
     "abs",
     TF_DEVICE_CPU,
     {3, 32, 1},
     synthetic_ok_kernel,
     NULL},
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("baddtype", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
