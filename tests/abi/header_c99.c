/*
 * abi/torchferry.h must compile as strict C99 (this file is built with
 * -std=c99 -pedantic and warnings as errors) and mean the same layout there
 * as in C++. C99 has no static_assert, so a failed check is an array of
 * negative size: a compile error.
 */
#include <stddef.h>
#include <string.h>

#include "abi/torchferry.h"
#include "dlpack/dlpack.h"

#define C99_CHECK(name, condition) \
  typedef char c99_check_##name[(condition) ? 1 : -1]

C99_CHECK(tensor_size, sizeof(tf_tensor) >= sizeof(DLTensor));
C99_CHECK(tensor_data, offsetof(tf_tensor, data) == offsetof(DLTensor, data));
C99_CHECK(tensor_device,
          offsetof(tf_tensor, device) == offsetof(DLTensor, device));
C99_CHECK(tensor_ndim, offsetof(tf_tensor, ndim) == offsetof(DLTensor, ndim));
C99_CHECK(tensor_dtype,
          offsetof(tf_tensor, dtype) == offsetof(DLTensor, dtype));
C99_CHECK(tensor_shape,
          offsetof(tf_tensor, shape) == offsetof(DLTensor, shape));
C99_CHECK(tensor_strides,
          offsetof(tf_tensor, strides) == offsetof(DLTensor, strides));
C99_CHECK(tensor_byte_offset,
          offsetof(tf_tensor, byte_offset) == offsetof(DLTensor, byte_offset));
C99_CHECK(device_size, sizeof(tf_device) == sizeof(DLDevice));
C99_CHECK(dtype_size, sizeof(tf_dtype) == sizeof(DLDataType));
C99_CHECK(plugin_starts_with_size, offsetof(tf_plugin, struct_size) == 0);
C99_CHECK(kernel_starts_with_size, offsetof(tf_kernel, struct_size) == 0);
C99_CHECK(call_starts_with_size, offsetof(tf_call, struct_size) == 0);
C99_CHECK(host_starts_with_size, offsetof(tf_host_api, struct_size) == 0);

/* A plugin-shaped use of every type, so the declarations are exercised, not
   just parsed. */
static tf_status c99_kernel(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  return x->ndim >= 0 ? TF_OK
                      : call->host->set_error(call->error_sink,
                                              TF_ERROR_INTERNAL, "negative");
}

static const tf_kernel c99_kernels[] = {
    {sizeof(tf_kernel),
     "noop",
     TF_DEVICE_CPU,
     {TF_DTYPE_FLOAT, 32, 1},
     c99_kernel,
     NULL},
};

int main(void) {
  float data[6] = {0, 1, 2, 3, 4, 5};
  int64_t shape[2] = {2, 3};
  int64_t strides[2] = {3, 1};
  tf_tensor t;
  const DLTensor* dl = (const DLTensor*)(const void*)&t;
  tf_arg arg;
  tf_call call;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = TF_DEVICE_CPU;
  t.ndim = 2;
  t.dtype.code = TF_DTYPE_FLOAT;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = strides;
  memset(&arg, 0, sizeof arg);
  arg.kind = TF_ARG_TENSOR;
  arg.value.tensor = &t;
  memset(&call, 0, sizeof call);
  call.struct_size = sizeof call;
  call.inputs = &arg;
  call.num_inputs = 1;
  if (c99_kernels[0].fn(&call) != TF_OK) return 1;
  if (dl->data != (void*)data || dl->ndim != 2 || dl->shape[1] != 3 ||
      dl->strides[0] != 3 || dl->device.device_type != kDLCPU ||
      dl->dtype.code != kDLFloat || dl->dtype.bits != 32) {
    return 2;
  }
  return 0;
}
