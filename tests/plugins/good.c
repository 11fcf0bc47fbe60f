/* The control: a correct plugin. Its abs really computes (scaled by the
   "scale" option, to show set_option reaches the plugin), and its entry logs
   the host's version, to show log and query work. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synthetic.h"

static float scale = 1.0f;

/* Contiguous float32 only: the tests hand it nothing else. */
static tf_status good_abs(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  int64_t n = 1;
  int64_t i;
  int32_t d;
  for (d = 0; d < x->ndim; ++d) n *= x->shape[d];
  for (i = 0; i < n; ++i) {
    ((float*)out->data)[i] = scale * fabsf(((const float*)x->data)[i]);
  }
  return TF_OK;
}

static tf_status good_set_option(const char* key, const char* value,
                                 void* error_sink);

static const tf_kernel kernels[] = {
    SYNTHETIC_KERNEL("abs", TF_DEVICE_CPU, SYNTHETIC_F32, good_abs),
    SYNTHETIC_KERNEL("add", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
    SYNTHETIC_KERNEL("noop", TF_DEVICE_CPU, SYNTHETIC_F32, synthetic_ok_kernel),
};

static const tf_plugin plugin = {sizeof(tf_plugin),
                                 TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR,
                                 "good",
                                 "1.2.3",
                                 TF_PLUGIN_NATIVE,
                                 0,
                                 NULL,
                                 good_set_option,
                                 kernels,
                                 sizeof(kernels) / sizeof(kernels[0])};

static const tf_host_api* the_host;

static tf_status good_set_option(const char* key, const char* value,
                                 void* error_sink) {
  char* end = NULL;
  double parsed;
  char message[160];
  if (strcmp(key, "scale") != 0) {
    snprintf(message, sizeof message, "unknown option '%s'; expected 'scale'",
             key);
    return the_host->set_error(error_sink, TF_ERROR_INVALID_ARGUMENT, message);
  }
  parsed = strtod(value, &end);
  if (end == value || *end != '\0') {
    snprintf(message, sizeof message,
             "option 'scale' expects a number, got '%s'", value);
    return the_host->set_error(error_sink, TF_ERROR_INVALID_ARGUMENT, message);
  }
  scale = (float)parsed;
  return TF_OK;
}

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  char line[128];
  const char* version = host->query("host.version");
  (void)host_abi_major;
  (void)host_abi_minor;
  the_host = host;
  snprintf(line, sizeof line, "entered by host %s",
           version != NULL ? version : "(unknown)");
  host->log(TF_LOG_DEBUG, "good", line);
  return &plugin;
}
