/* Correct, but its text is not UTF-8: a Latin-1 version string ("caf\xe9",
   cafe with an acute e in ISO 8859-1) and a set_option that fails with a
   Latin-1 message, and a kernel (noop on float64) that fails with one. The
   host must show each (escaped), never crash on them.
   With TF_TEST_LATIN1_INIT=fail its init fails with a Latin-1 message
   instead, and the plugin is skipped with that reason. */
#include <stdlib.h>
#include <string.h>

#include "synthetic.h"

static const tf_host_api* the_host;

static tf_status latin1_init(void* error_sink) {
  const char* how = getenv("TF_TEST_LATIN1_INIT");
  if (how != NULL && strcmp(how, "fail") == 0) {
    return the_host->set_error(error_sink, TF_ERROR_DEVICE,
                               "no caf\xe9 machine found (\xff\xfe)");
  }
  return TF_OK;
}

static tf_status latin1_set_option(const char* key, const char* value,
                                   void* error_sink) {
  (void)key;
  (void)value;
  return the_host->set_error(error_sink, TF_ERROR_INVALID_ARGUMENT,
                             "option refus\xe9 (Latin-1 text)");
}

static tf_status latin1_kernel(const tf_call* call) {
  return call->host->set_error(call->error_sink, TF_ERROR_INVALID_ARGUMENT,
                               "kernel refus\xe9 (\xff)");
}

#define LATIN1_F64 \
  { TF_DTYPE_FLOAT, 64, 1 }

/* noop on float64: a key no other synthetic plugin serves. */
static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("noop", TF_DEVICE_CPU, LATIN1_F64, latin1_kernel),
};
static const tf_plugin plugin = {sizeof(tf_plugin),
                                 TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR,
                                 "latin1",
                                 "caf\xe9 1.0",
                                 TF_PLUGIN_NATIVE,
                                 0,
                                 latin1_init,
                                 latin1_set_option,
                                 kernels,
                                 1};

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_major;
  (void)host_abi_minor;
  the_host = host;
  return &plugin;
}
