/* Broken: tf_plugin.struct_size smaller than ABI 1.0's (as if the last two
   fields did not exist). */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = {offsetof(tf_plugin, kernels),
                                 TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR,
                                 "smallplugin",
                                 "0.0.1",
                                 TF_PLUGIN_NATIVE,
                                 0,
                                 NULL,
                                 NULL,
                                 kernels,
                                 1};
SYNTHETIC_ENTRY(plugin)
