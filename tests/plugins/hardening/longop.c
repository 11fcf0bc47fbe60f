/* Broken: a kernel whose op name is 200 characters long; the loader reads at
   most 64 bytes of it. */
#include "synthetic.h"

#define TEN "abcdefghij"
#define HUNDRED TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL(HUNDRED HUNDRED, TF_DEVICE_CPU, SYNTHETIC_F32,
                     synthetic_ok_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("longop", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
