/* Broken: a name of 64 valid characters, one more than the ABI allows. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = SYNTHETIC_PLUGIN(
    "longname_longname_longname_longname_longname_longname_longname_x",
    TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
