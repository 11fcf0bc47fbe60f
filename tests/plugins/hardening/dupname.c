/* Broken: takes the name of another plugin ("good", from tests/plugins), so
   it must be skipped when that one is already loaded. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("neg", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("good", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
