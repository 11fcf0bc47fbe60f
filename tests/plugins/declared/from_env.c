/* A plugin whose declared ops come from the environment, so that a test can
   declare schemas of any shape: TF_TEST_DECLARED holds "name|schema" pairs
   separated by ';' (at most 64). One kernel serves them all: each output o
   (the returns, then the arguments written in place) becomes (o + 1) times
   the sum of every tensor input given (a None is skipped), element by element.
   Every tensor is float32, contiguous and of the first argument's shape; the
   non-tensor arguments are ignored. infer gives every return the first
   argument's shape. */
#include <stdlib.h>
#include <string.h>

#include "abi/torchferry.h"

#define MAX_OPS 64

static tf_status like_first(const tf_call* call, tf_tensor_spec* specs,
                            int32_t num_specs) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  int32_t s, d;
  for (s = 0; s < num_specs; ++s) {
    specs[s].dtype = x->dtype;
    specs[s].ndim = x->ndim;
    for (d = 0; d < x->ndim; ++d) specs[s].shape[d] = x->shape[d];
  }
  return TF_OK;
}

static int dense(const tf_tensor* t) {
  return (t->flags & TF_TENSOR_CONTIGUOUS) != 0;
}

static tf_status sum_into_outputs(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  int64_t n = 1, e;
  int32_t i, d;
  for (d = 0; d < x->ndim; ++d) n *= x->shape[d];
  for (i = 0; i < call->num_inputs; ++i) {
    const tf_arg* a = &call->inputs[i];
    if (a->kind == TF_ARG_TENSOR && !dense(a->value.tensor)) {
      return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                   "contiguous tensors only");
    }
  }
  for (i = 0; i < call->num_outputs; ++i) {
    if (!dense(&call->outputs[i])) {
      return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                   "contiguous tensors only");
    }
  }
  for (e = 0; e < n; ++e) {
    float sum = 0;
    for (i = 0; i < call->num_inputs; ++i) {
      if (call->inputs[i].kind == TF_ARG_TENSOR) {
        sum += ((const float*)call->inputs[i].value.tensor->data)[e];
      }
    }
    for (i = 0; i < call->num_outputs; ++i) {
      ((float*)call->outputs[i].data)[e] = (float)(i + 1) * sum;
    }
  }
  return TF_OK;
}

static char text[1 << 16];
static tf_op_decl ops[MAX_OPS];
static tf_kernel kernels[MAX_OPS];
static tf_plugin plugin;

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  const char* declared = getenv("TF_TEST_DECLARED");
  size_t num_ops = 0;
  char* next;
  (void)host_abi_major;
  (void)host_abi_minor;
  (void)host;
  if (declared == NULL || strlen(declared) >= sizeof text) return NULL;
  strcpy(text, declared);
  for (next = text; next != NULL && *next != '\0' && num_ops < MAX_OPS;) {
    char* end = strchr(next, ';');
    char* bar = strchr(next, '|');
    if (end != NULL) *end = '\0';
    if (bar == NULL) return NULL;
    *bar = '\0';
    ops[num_ops].struct_size = sizeof(tf_op_decl);
    ops[num_ops].name = next;
    ops[num_ops].schema = bar + 1;
    ops[num_ops].infer = like_first;
    ops[num_ops].doc = "an op the test declared";
    kernels[num_ops].struct_size = sizeof(tf_kernel);
    kernels[num_ops].op = next;
    kernels[num_ops].device_type = TF_DEVICE_CPU;
    kernels[num_ops].dtype.code = TF_DTYPE_FLOAT;
    kernels[num_ops].dtype.bits = 32;
    kernels[num_ops].dtype.lanes = 1;
    kernels[num_ops].fn = sum_into_outputs;
    kernels[num_ops].kernel_data = NULL;
    ++num_ops;
    next = end == NULL ? NULL : end + 1;
  }
  plugin.struct_size = sizeof(tf_plugin);
  plugin.abi_version_major = TF_ABI_VERSION_MAJOR;
  plugin.abi_version_minor = TF_ABI_VERSION_MINOR;
  plugin.name = "from_env";
  plugin.version = "0.0.1";
  plugin.kind = TF_PLUGIN_NATIVE;
  plugin.kernels = kernels;
  plugin.num_kernels = num_ops;
  plugin.ops = ops;
  plugin.num_ops = num_ops;
  return &plugin;
}
