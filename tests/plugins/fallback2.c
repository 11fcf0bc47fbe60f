/* Correct: a second fallback plugin, for first-found among fallbacks. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
    SYNTHETIC_KERNEL("mul", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("fallback2", TF_PLUGIN_FALLBACK, kernels);
SYNTHETIC_ENTRY(plugin)
