/* Broken: built for ABI major 2. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = {
    sizeof(tf_plugin), 2, 0, "major2", "0.0.1", TF_PLUGIN_NATIVE, 0, NULL, NULL,
    kernels,           1};
SYNTHETIC_ENTRY(plugin)
