/* Broken: a plugin kind that is neither native nor fallback. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = SYNTHETIC_PLUGIN("badkind", 7, kernels);
SYNTHETIC_ENTRY(plugin)
