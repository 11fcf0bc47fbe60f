/* Broken at run time: init fails with a message. */
#include "synthetic.h"

static const tf_host_api* the_host;

static tf_status initfail_init(void* error_sink) {
  return the_host->set_error(error_sink, TF_ERROR_DEVICE,
                             "simulated init failure: no accelerator found");
}

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = {sizeof(tf_plugin),
                                 TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR,
                                 "initfail",
                                 "0.0.1",
                                 TF_PLUGIN_NATIVE,
                                 0,
                                 initfail_init,
                                 NULL,
                                 kernels,
                                 1};

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_major;
  (void)host_abi_minor;
  the_host = host;
  return &plugin;
}
