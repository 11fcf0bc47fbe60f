/* Broken at run time: init rewrites the descriptor the host has already
   validated (ABI.md: it must stay unchanged while the library is loaded).
   TF_TEST_INITMUTATE says what init changes: "fn" (the default) clears
   kernels[0].fn, "fn_swap" points it at another function, "kernel_data"
   changes kernels[0].kernel_data, "count" lists one more kernel, "op" renames
   kernels[0]'s op, "name" renames the plugin, "version" changes its version.
   The entry puts the descriptor back, so every load starts from the valid
   one. */
#include <stdlib.h>
#include <string.h>

#include "synthetic.h"

static const tf_host_api* the_host;
static int data_a, data_b;

static tf_status initmutate_swapped(const tf_call* call) {
  return call->host->set_error(call->error_sink, TF_ERROR_INTERNAL,
                               "initmutate: the kernel swapped in by init ran");
}

static tf_kernel kernels[2];
static tf_plugin plugin;

static void reset(void) {
  const tf_kernel abs_kernel = SYNTHETIC_KERNEL(
      "abs", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel);
  const tf_kernel neg_kernel = SYNTHETIC_KERNEL(
      "neg", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel);
  kernels[0] = abs_kernel;
  kernels[0].kernel_data = &data_a;
  kernels[1] = neg_kernel;
  memset(&plugin, 0, sizeof plugin);
  plugin.struct_size = sizeof(tf_plugin);
  plugin.abi_version_major = TF_ABI_VERSION_MAJOR;
  plugin.abi_version_minor = TF_ABI_VERSION_MINOR;
  plugin.name = "initmutate";
  plugin.version = "0.0.1";
  plugin.kind = TF_PLUGIN_NATIVE;
  plugin.kernels = kernels;
  plugin.num_kernels = 1;
}

static tf_status initmutate_init(void* error_sink) {
  const char* how = getenv("TF_TEST_INITMUTATE");
  (void)error_sink;
  if (how == NULL || *how == '\0' || strcmp(how, "fn") == 0) {
    kernels[0].fn = NULL;
  } else if (strcmp(how, "fn_swap") == 0) {
    kernels[0].fn = initmutate_swapped;
  } else if (strcmp(how, "kernel_data") == 0) {
    kernels[0].kernel_data = &data_b;
  } else if (strcmp(how, "count") == 0) {
    plugin.num_kernels = 2;
  } else if (strcmp(how, "op") == 0) {
    kernels[0].op = "exp";
  } else if (strcmp(how, "name") == 0) {
    plugin.name = "renamed";
  } else if (strcmp(how, "version") == 0) {
    plugin.version = "6.6.6";
  } else {
    return the_host->set_error(error_sink, TF_ERROR_INVALID_ARGUMENT,
                               "initmutate: unknown TF_TEST_INITMUTATE");
  }
  return TF_OK;
}

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_major;
  (void)host_abi_minor;
  the_host = host;
  reset();
  plugin.init = initmutate_init;
  return &plugin;
}
