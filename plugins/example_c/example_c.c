/*
 * example_c - a complete torchferry plugin in plain C11, and the template a
 * vendor copies. It serves abs and add for float32 on the CPU, for tensors of
 * any strides, declares an op of its own (example::axpby, ABI 1.1) and serves
 * it too, and shows everything a plugin needs: one exported entry, a static
 * descriptor, kernels that report errors through the host.
 *
 * It registers the same keys as the CPU plugin. Both are native, so the one
 * found first wins: torchferry_cpu.so sorts before torchferry_example_c.so,
 * which leaves these kernels shadowed unless the CPU plugin is deselected
 * (TORCHFERRY_PLUGINS=-cpu).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "torchferry.h"

/* The host passes no tensor of more than TF_MAX_NDIM dimensions (ABI.md), so
   an index of that many keeps the walk free of allocation. */
#define EXAMPLE_MAX_TENSORS 3

/* Walks every element of `shape` in row-major order, keeping the element
   offset of each tensor (its strides, in elements) up to date, so that
   non-contiguous, broadcast (stride 0) and aliased tensors all work. */
typedef struct strided_walk {
  int32_t ndim;
  const int64_t* shape;
  int32_t num_tensors;
  const int64_t* strides[EXAMPLE_MAX_TENSORS];
  int64_t offset[EXAMPLE_MAX_TENSORS];
  int64_t index[TF_MAX_NDIM];
} strided_walk;

static void walk_start(strided_walk* w, const tf_tensor* out,
                       const tf_tensor* const* tensors, int32_t num_tensors) {
  int32_t d;
  int32_t t;
  w->ndim = out->ndim;
  w->shape = out->shape;
  w->num_tensors = num_tensors;
  for (t = 0; t < num_tensors; ++t) {
    w->strides[t] = tensors[t]->strides;
    w->offset[t] = 0;
  }
  for (d = 0; d < w->ndim; ++d) w->index[d] = 0;
}

static void walk_next(strided_walk* w) {
  int32_t d;
  int32_t t;
  for (d = w->ndim - 1; d >= 0; --d) {
    for (t = 0; t < w->num_tensors; ++t) w->offset[t] += w->strides[t][d];
    if (++w->index[d] < w->shape[d]) return;
    /* This dimension wrapped: rewind it and carry into the next one out. */
    for (t = 0; t < w->num_tensors; ++t) {
      w->offset[t] -= w->strides[t][d] * w->shape[d];
    }
    w->index[d] = 0;
  }
}

static int64_t numel(const tf_tensor* t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

static tf_status check_rank(const tf_call* call, const tf_tensor* out) {
  if (out->ndim > TF_MAX_NDIM) {
    return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                 "example_c walks at most TF_MAX_NDIM "
                                 "dimensions");
  }
  return TF_OK;
}

/* abs: out = |x|. The host has checked the schema (one float32 CPU input, an
   output of the same shape), so the kernel only computes. */
static tf_status example_abs(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  const tf_tensor* tensors[2];
  const float* xs = (const float*)x->data;
  float* os = (float*)out->data;
  strided_walk w;
  int64_t i;
  int64_t n = numel(out);
  tf_status status = check_rank(call, out);
  if (status != TF_OK) return status;
  tensors[0] = x;
  tensors[1] = out;
  walk_start(&w, out, tensors, 2);
  for (i = 0; i < n; ++i) {
    os[w.offset[1]] = fabsf(xs[w.offset[0]]);
    walk_next(&w);
  }
  return TF_OK;
}

/* add: out = x + alpha * y, x and y already broadcast to out's shape. */
static tf_status example_add(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* y = call->inputs[1].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  const float alpha = (float)call->attrs[0].value.f;
  const tf_tensor* tensors[3];
  const float* xs = (const float*)x->data;
  const float* ys = (const float*)y->data;
  float* os = (float*)out->data;
  strided_walk w;
  int64_t i;
  int64_t n = numel(out);
  tf_status status = check_rank(call, out);
  if (status != TF_OK) return status;
  tensors[0] = x;
  tensors[1] = y;
  tensors[2] = out;
  walk_start(&w, out, tensors, 3);
  for (i = 0; i < n; ++i) {
    os[w.offset[2]] = xs[w.offset[0]] + alpha * ys[w.offset[1]];
    walk_next(&w);
  }
  return TF_OK;
}

/* example::axpby(x, y, *, a, b) = a * x + b * y, for x and y of one shape.
   infer tells the host the output's dtype and shape, or why the arguments do
   not fit; it reads only shapes and dtypes, never data. */
static tf_status example_axpby_infer(const tf_call* call, tf_tensor_spec* specs,
                                     int32_t num_specs) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* y = call->inputs[1].value.tensor;
  int32_t d;
  if (num_specs != 1) {
    return call->host->set_error(call->error_sink, TF_ERROR_INTERNAL,
                                 "axpby has one output");
  }
  if (x->ndim != y->ndim || x->dtype.code != y->dtype.code ||
      x->dtype.bits != y->dtype.bits || x->ndim > TF_MAX_NDIM) {
    return call->host->set_error(call->error_sink, TF_ERROR_INVALID_ARGUMENT,
                                 "x and y must have one shape and dtype");
  }
  for (d = 0; d < x->ndim; ++d) {
    if (x->shape[d] != y->shape[d]) {
      return call->host->set_error(call->error_sink, TF_ERROR_INVALID_ARGUMENT,
                                   "x and y must have one shape and dtype");
    }
    specs[0].shape[d] = x->shape[d];
  }
  specs[0].ndim = x->ndim;
  specs[0].dtype = x->dtype;
  return TF_OK;
}

static tf_status example_axpby(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* y = call->inputs[1].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  const float a = (float)call->attrs[0].value.f;
  const float b = (float)call->attrs[1].value.f;
  const tf_tensor* tensors[3];
  const float* xs = (const float*)x->data;
  const float* ys = (const float*)y->data;
  float* os = (float*)out->data;
  strided_walk w;
  int64_t i;
  int64_t n = numel(out);
  tf_status status = check_rank(call, out);
  if (status != TF_OK) return status;
  tensors[0] = x;
  tensors[1] = y;
  tensors[2] = out;
  walk_start(&w, out, tensors, 3);
  for (i = 0; i < n; ++i) {
    os[w.offset[2]] = a * xs[w.offset[0]] + b * ys[w.offset[1]];
    walk_next(&w);
  }
  return TF_OK;
}

/* The ops this plugin brings (ABI 1.1). The host parses each schema and
   exposes the op as torchferry.ops.example.axpby. */
static const tf_op_decl example_ops[] = {
    {sizeof(tf_op_decl), "example::axpby",
     "example::axpby(Tensor x, Tensor y, *, float a, float b) -> Tensor",
     example_axpby_infer, "a * x + b * y for x and y of one shape"},
};

/* The descriptor and its kernel table are static: they must stay valid for as
   long as the library is loaded, which is until the process exits. */
static const tf_kernel example_kernels[] = {
    {sizeof(tf_kernel),
     "abs",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, 32, 1},
     example_abs,
     NULL},
    {sizeof(tf_kernel),
     "add",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, 32, 1},
     example_add,
     NULL},
    {sizeof(tf_kernel),
     "example::axpby",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, 32, 1},
     example_axpby,
     NULL},
};

static const tf_plugin example_plugin = {
    sizeof(tf_plugin),
    TF_ABI_VERSION_MAJOR,
    TF_ABI_VERSION_MINOR,
    "example_c",
    "0.1.0",
    TF_PLUGIN_NATIVE,
    0,    /* reserved */
    NULL, /* init: nothing to set up */
    NULL, /* set_option: no options */
    example_kernels,
    sizeof(example_kernels) / sizeof(example_kernels[0]),
    example_ops,
    sizeof(example_ops) / sizeof(example_ops[0]),
};

/* The one exported symbol. A plugin built for ABI 1 cannot serve another
   major; it says so in the host's log and declines. */
TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_minor;
  if (host_abi_major != TF_ABI_VERSION_MAJOR) {
    host->log(TF_LOG_WARN, "example_c",
              "built for torchferry ABI 1; this host speaks another major");
    return NULL;
  }
  return &example_plugin;
}
