/* Correct: a fallback plugin, for precedence. abs is also served by the native
   plugins (which must win); mul only here (so it must win that one). */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
    SYNTHETIC_KERNEL("mul", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("fallback", TF_PLUGIN_FALLBACK, kernels);
SYNTHETIC_ENTRY(plugin)
