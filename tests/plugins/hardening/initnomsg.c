/* Broken at run time: init fails without setting a message. */
#include "synthetic.h"

static tf_status initnomsg_init(void* error_sink) {
  (void)error_sink;
  return TF_ERROR_INTERNAL;
}

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = {sizeof(tf_plugin),
                                 TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR,
                                 "initnomsg",
                                 "0.0.1",
                                 TF_PLUGIN_NATIVE,
                                 0,
                                 initnomsg_init,
                                 NULL,
                                 kernels,
                                 1};
SYNTHETIC_ENTRY(plugin)
