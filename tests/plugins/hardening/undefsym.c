/* Broken: calls a function that no library defines, so dlopen with RTLD_NOW
   fails with "undefined symbol". */
#include "synthetic.h"

extern int tf_hardening_absent_function(void);

static tf_status undefsym_kernel(const tf_call* call) {
  (void)call;
  return tf_hardening_absent_function() == 0 ? TF_OK : TF_ERROR_INTERNAL;
}

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, undefsym_kernel),
};
static const tf_plugin plugin =
    SYNTHETIC_PLUGIN("undefsym", TF_PLUGIN_NATIVE, kernels);
SYNTHETIC_ENTRY(plugin)
