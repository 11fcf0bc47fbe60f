/*
 * One plugin, built against each frozen ABI header (tests/abi/v1_N) and
 * today's (TF_COMPAT_HEADER picks it), serving with real kernels whatever its
 * minor offers, so that the compatibility matrix runs them and compares with
 * torch:
 *   1.0: neg, float32 on the CPU;
 *   1.1: + a declared op compat_v1_N::twice (out = 2 x), float32;
 *   1.2: + embedding with a float32 table (TF_ERROR_OUT_OF_RANGE for a bad
 *        id), and noop keyed by uint16 (a 1.2 dtype).
 * The plugin's name and its op's namespace are TF_COMPAT_NAME, so that the
 * builds load side by side.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include TF_COMPAT_HEADER

#define COMPAT_STR2(x) #x
#define COMPAT_STR(x) COMPAT_STR2(x)
#define COMPAT_NAME_STR COMPAT_STR(TF_COMPAT_NAME)

/* The element offset, in elements, of the row-major `linear` index. */
static int64_t offset_of(const tf_tensor* t, int64_t linear) {
  int64_t offset = 0;
  int32_t d;
  for (d = t->ndim - 1; d >= 0; --d) {
    const int64_t size = t->shape[d];
    if (size > 0) {
      offset += (linear % size) * t->strides[d];
      linear /= size;
    }
  }
  return offset;
}

static int64_t numel(const tf_tensor* t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

static tf_status scale_kernel(const tf_call* call, float factor) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  const float* src = (const float*)x->data;
  float* dst = (float*)out->data;
  const int64_t n = numel(out);
  int64_t i;
  for (i = 0; i < n; ++i) {
    dst[offset_of(out, i)] = factor * src[offset_of(x, i)];
  }
  return TF_OK;
}

static tf_status neg_f32(const tf_call* call) {
  return scale_kernel(call, -1.0f);
}

#if TF_ABI_VERSION_MINOR >= 1
static tf_status twice_f32(const tf_call* call) {
  return scale_kernel(call, 2.0f);
}

static tf_status twice_infer(const tf_call* call, tf_tensor_spec* specs,
                             int32_t num_specs) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  int32_t d;
  (void)num_specs;
  specs[0].dtype = x->dtype;
  specs[0].ndim = x->ndim;
  for (d = 0; d < x->ndim; ++d) specs[0].shape[d] = x->shape[d];
  return TF_OK;
}

static const tf_op_decl ops[] = {
    {sizeof(tf_op_decl), COMPAT_NAME_STR "::twice",
     COMPAT_NAME_STR "::twice(Tensor x) -> Tensor", twice_infer, "out = 2 * x"},
};
#endif

#if TF_ABI_VERSION_MINOR >= 2
/* embedding: out[i..., :] = table[ids[i...], :], every id checked first. */
static tf_status embedding_f32(const tf_call* call) {
  const tf_tensor* ids = call->inputs[0].value.tensor;
  const tf_tensor* table = call->inputs[1].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  const int64_t count = numel(ids);
  const int64_t rows = table->shape[0];
  const int64_t dim = table->shape[1];
  const float* src = (const float*)table->data;
  float* dst = (float*)out->data;
  int64_t i;
  int64_t j;
  for (i = 0; i < count; ++i) {
    const int64_t at = offset_of(ids, i);
    const int64_t id = ids->dtype.bits == 64 ? ((const int64_t*)ids->data)[at]
                                             : ((const int32_t*)ids->data)[at];
    if (id < 0 || id >= rows) {
      char message[128];
      snprintf(message, sizeof(message),
               "id %lld at index %lld is outside [0, %lld)", (long long)id,
               (long long)i, (long long)rows);
      return call->host->set_error(call->error_sink, TF_ERROR_OUT_OF_RANGE,
                                   message);
    }
  }
  for (i = 0; i < count; ++i) {
    const int64_t at = offset_of(ids, i);
    const int64_t id = ids->dtype.bits == 64 ? ((const int64_t*)ids->data)[at]
                                             : ((const int32_t*)ids->data)[at];
    for (j = 0; j < dim; ++j) {
      dst[offset_of(out, i * dim + j)] =
          src[id * table->strides[0] + j * table->strides[1]];
    }
  }
  return TF_OK;
}

static tf_status noop_kernel(const tf_call* call) {
  (void)call;
  return TF_OK;
}
#endif

static const tf_kernel kernels[] = {
    {sizeof(tf_kernel),
     "neg",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, 32, 1},
     neg_f32,
     NULL},
#if TF_ABI_VERSION_MINOR >= 1
    {sizeof(tf_kernel),
     COMPAT_NAME_STR "::twice",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, 32, 1},
     twice_f32,
     NULL},
#endif
#if TF_ABI_VERSION_MINOR >= 2
    {sizeof(tf_kernel),
     "embedding",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, 32, 1},
     embedding_f32,
     NULL},
    {sizeof(tf_kernel),
     "noop",
     TF_DEVICE_CPU,
     {TF_DTYPE_UINT, 16, 1},
     noop_kernel,
     NULL},
#endif
};

static const tf_plugin plugin = {
    sizeof(tf_plugin),
    TF_ABI_VERSION_MAJOR,
    TF_ABI_VERSION_MINOR,
    COMPAT_NAME_STR,
    "0.0.1",
    TF_PLUGIN_NATIVE,
    0,
    NULL,
    NULL,
    kernels,
    sizeof(kernels) / sizeof(kernels[0]),
#if TF_ABI_VERSION_MINOR >= 1
    ops,
    sizeof(ops) / sizeof(ops[0]),
#endif
};

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_major;
  (void)host_abi_minor;
  (void)host;
  return &plugin;
}
