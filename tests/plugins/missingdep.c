/* Broken: needs a shared library the dynamic linker cannot find. */
#include "missing_dep/missing_dep.h"
#include "synthetic.h"

static tf_status missingdep_kernel(const tf_call* call) {
  (void)call;
  return missing_dep_answer() == 42 ? TF_OK : TF_ERROR_INTERNAL;
}

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, missingdep_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("missingdep", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
