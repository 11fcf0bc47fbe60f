/*
 * Plugins that load and validate but compute wrong answers, each in one way,
 * for `python -m torchferry check` to catch (tests/python/test_check.py
 * builds this file once per FLAW, with NAME the plugin's name):
 *
 *   1 strided    treats every tensor as contiguous: right on row-major
 *                input, wrong on transposed or sliced input
 *   2 offset     assumes element 0 starts its allocation (rounds data down
 *                to the 64 bytes torch aligns allocations to): wrong on a
 *                slice with a storage offset
 *   3 broadcast  takes a stride of 0 for 1: wrong on an expanded operand
 *                (and reads past it)
 *   4 nan        drops NaN (fast-math style): NaN in, 0 out
 *   5 dtype      claims abs for float64 and computes it in float32
 *   6 empty      crashes (SIGSEGV) on a tensor of zero elements
 *   7 stdout     drops NaN as 4 does, and writes a progress dot without a
 *                newline to stdout on every call: the check must still
 *                hear of every case
 *   8 overrun    right answers, and one float past the end of out
 *   9 underrun   right answers, and one float before out's first element
 *  10 gap        right answers, and one float into the gap after the
 *                first row of a sliced input x (bytes x does not cover)
 *  11 input      right answers, and one float past the end of input x
 *
 * Flaws 8 to 11 write where a kernel has no right to: only the check's
 * guard bytes see them.
 *
 * Every kernel is add or abs for float32 on the CPU otherwise right.
 */
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "abi/torchferry.h"

#ifndef FLAW
#error "build with -DFLAW=<1..11> -DNAME=<plugin name>"
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

static int64_t numel(const tf_tensor* t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

/* The element offset of flat index i in `t`, row-major over out's shape. */
static int64_t offset_of(const tf_tensor* t, const tf_tensor* out, int64_t i) {
  int64_t off = 0;
  int32_t d;
  if (FLAW == 1) return i;
  for (d = out->ndim - 1; d >= 0; --d) {
    int64_t stride = t->strides[d];
    if (FLAW == 3 && stride == 0) stride = 1;
    off += (i % out->shape[d]) * stride;
    i /= out->shape[d];
  }
  return off;
}

static const float* base(const tf_tensor* t) {
  uintptr_t p = (uintptr_t)t->data;
  if (FLAW == 2) p &= ~(uintptr_t)63;
  return (const float*)p;
}

static tf_status check(const tf_call* call, const tf_tensor* out) {
  if (out->ndim > TF_MAX_NDIM) {
    return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                 "at most " STR(TF_MAX_NDIM) " dims");
  }
  if (FLAW == 6 && numel(out) == 0) raise(SIGSEGV);
  if (FLAW == 7) {
    fputs(".", stdout);
    fflush(stdout);
  }
  return TF_OK;
}

/* Flaws 8 to 11: one stray write, after the right answer is in out. */
static void stray_write(const tf_tensor* x, const tf_tensor* out) {
  int64_t n = numel(out);
  if (n == 0) return;
  if (FLAW == 8) ((float*)out->data)[offset_of(out, out, n - 1) + 1] = 1.0f;
  if (FLAW == 9) ((float*)out->data)[-1] = 1.0f;
  if (FLAW == 10 && x->ndim == 2 && x->strides[1] == 1 &&
      x->strides[0] > x->shape[1] && x->data != out->data) {
    ((float*)x->data)[x->shape[1]] = 1.0f;
  }
  if (FLAW == 11 && x->data != out->data && numel(x) == n) {
    ((float*)x->data)[offset_of(x, out, n - 1) + 1] = 1.0f;
  }
}

static tf_status wrong_add(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* y = call->inputs[1].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  const float alpha = (float)call->attrs[0].value.f;
  float* os = (float*)out->data;
  int64_t i;
  int64_t n = numel(out);
  tf_status status = check(call, out);
  if (status != TF_OK) return status;
  for (i = 0; i < n; ++i) {
    float a = base(x)[offset_of(x, out, i)];
    float b = base(y)[offset_of(y, out, i)];
    float r = a + alpha * b;
    if ((FLAW == 4 || FLAW == 7) && isnan(r)) r = 0.0f;
    os[offset_of(out, out, i)] = r;
  }
  stray_write(x, out);
  return TF_OK;
}

static tf_status wrong_abs(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  float* os = (float*)out->data;
  int64_t i;
  int64_t n = numel(out);
  tf_status status = check(call, out);
  if (status != TF_OK) return status;
  for (i = 0; i < n; ++i) {
    float r = fabsf(base(x)[offset_of(x, out, i)]);
    if ((FLAW == 4 || FLAW == 7) && isnan(r)) r = 0.0f;
    os[offset_of(out, out, i)] = r;
  }
  return TF_OK;
}

static const tf_kernel kernels[] = {
    {sizeof(tf_kernel),
     "add",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, 32, 1},
     wrong_add,
     NULL},
    /* FLAW 5: the float32 loop registered for float64. */
    {sizeof(tf_kernel),
     "abs",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, FLAW == 5 ? 64 : 32, 1},
     wrong_abs,
     NULL},
};

static const tf_plugin plugin = {
    sizeof(tf_plugin),
    TF_ABI_VERSION_MAJOR,
    TF_ABI_VERSION_MINOR,
    STR(NAME),
    "0.1.0",
    TF_PLUGIN_NATIVE,
    0,
    NULL,
    NULL,
    kernels,
    sizeof(kernels) / sizeof(kernels[0]),
    NULL,
    0,
};

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_minor;
  (void)host;
  return host_abi_major == TF_ABI_VERSION_MAJOR ? &plugin : NULL;
}
