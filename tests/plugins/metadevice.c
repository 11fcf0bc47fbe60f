/* Broken: a kernel for the meta device, which never reaches a kernel. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_META, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("metadevice", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
