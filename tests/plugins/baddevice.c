/* Broken: a device type ABI v1 does not have (7 is DLPack's Vulkan). */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", 7, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("baddevice", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
