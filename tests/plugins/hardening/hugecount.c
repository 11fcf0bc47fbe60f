/* Broken: num_kernels claims far more kernels than the array holds; the
   loader must refuse the count before it reads a single kernel. */
#include "synthetic.h"

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = {sizeof(tf_plugin),
                                 TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR,
                                 "hugecount",
                                 "0.0.1",
                                 TF_PLUGIN_NATIVE,
                                 0,
                                 NULL,
                                 NULL,
                                 kernels,
                                 (size_t)1 << 40};
SYNTHETIC_ENTRY(plugin)
