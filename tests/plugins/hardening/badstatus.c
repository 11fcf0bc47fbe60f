/* Broken at run time: init returns a status no ABI version defines, and
   reports it through a NULL sink as well. */
#include "synthetic.h"

static const tf_host_api* the_host;

static tf_status badstatus_init(void* error_sink) {
  (void)error_sink;
  the_host->set_error(NULL, 1234, "to a NULL sink");
  return 1234;
}

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};
static const tf_plugin plugin = {sizeof(tf_plugin),
                                 TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR,
                                 "badstatus",
                                 "0.0.1",
                                 TF_PLUGIN_NATIVE,
                                 0,
                                 badstatus_init,
                                 NULL,
                                 kernels,
                                 1};

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_major;
  (void)host_abi_minor;
  the_host = host;
  /* Odd log arguments must be survived too. */
  host->log(99, NULL, NULL);
  host->log(-5, "badstatus", NULL);
  return &plugin;
}
