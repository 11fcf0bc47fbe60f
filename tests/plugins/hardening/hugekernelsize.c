/* Broken: kernels[0].struct_size is 1 MiB, which would make the loader
   stride far past the array. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    {(size_t)1 << 20, "abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel,
     NULL},
    SYNTHETIC_KERNEL("neg", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("hugekernelsize", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
