/* Broken: tf_plugin.struct_size is 0, as from a descriptor left unfilled. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = {0,    TF_ABI_VERSION_MAJOR, TF_ABI_VERSION_MINOR,
                                 "zerosize", "0.0.1", TF_PLUGIN_NATIVE,
                                 0,    NULL,  NULL,
                                 kernels, 1};
SYNTHETIC_ENTRY(plugin)
