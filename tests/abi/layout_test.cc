// The ABI's layout, pinned: tf_tensor against a real dlpack.h, every value
// code against DLPack's, and the ABI 1.0 fields of the structs that may grow,
// so that an accidental edit of abi/torchferry.h fails here.
#include <dlpack/dlpack.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "abi/torchferry.h"
#include "dlpack_reader.h"

#define SAME_FIELD(ours, theirs, field)                                \
  static_assert(offsetof(ours, field) == offsetof(theirs, field) &&    \
                    sizeof(ours::field) == sizeof(theirs::field),      \
                #ours "." #field " must sit where " #theirs "." #field \
                      " does")

// tf_tensor starts with DLTensor's fields, each where DLPack puts it.
SAME_FIELD(tf_tensor, DLTensor, data);
SAME_FIELD(tf_tensor, DLTensor, device);
SAME_FIELD(tf_tensor, DLTensor, ndim);
SAME_FIELD(tf_tensor, DLTensor, dtype);
SAME_FIELD(tf_tensor, DLTensor, shape);
SAME_FIELD(tf_tensor, DLTensor, strides);
SAME_FIELD(tf_tensor, DLTensor, byte_offset);
static_assert(offsetof(tf_tensor, source) == sizeof(DLTensor),
              "torchferry's own fields follow the DLTensor prefix");
SAME_FIELD(tf_device, DLDevice, device_type);
SAME_FIELD(tf_device, DLDevice, device_id);
static_assert(sizeof(tf_device) == sizeof(DLDevice));
SAME_FIELD(tf_dtype, DLDataType, code);
SAME_FIELD(tf_dtype, DLDataType, bits);
SAME_FIELD(tf_dtype, DLDataType, lanes);
static_assert(sizeof(tf_dtype) == sizeof(DLDataType));
static_assert(alignof(tf_tensor) == alignof(DLTensor));

// Our codes are DLPack's codes.
static_assert(TF_DEVICE_CPU == kDLCPU);
static_assert(TF_DEVICE_CUDA == kDLCUDA);
static_assert(TF_DEVICE_CUDA_HOST == kDLCUDAHost);
static_assert(TF_DEVICE_ROCM == kDLROCM);
static_assert(TF_DTYPE_INT == kDLInt);
static_assert(TF_DTYPE_UINT == kDLUInt);
static_assert(TF_DTYPE_FLOAT == kDLFloat);
static_assert(TF_DTYPE_BFLOAT == kDLBfloat);
static_assert(TF_DTYPE_BOOL == 6, "kDLBool is 6 from dlpack 0.8 on");

// Values ABI.md says never change within major 1.
static_assert(TF_ABI_VERSION_MAJOR == 1);
static_assert(TF_OK == 0 && TF_ERROR_INVALID_ARGUMENT == 1 &&
              TF_ERROR_UNSUPPORTED == 2 && TF_ERROR_OUT_OF_MEMORY == 3 &&
              TF_ERROR_DEVICE == 4 && TF_ERROR_INTERNAL == 5 &&
              TF_ERROR_OUT_OF_RANGE == 6);
static_assert(TF_ARG_NONE == 0 && TF_ARG_TENSOR == 1 &&
              TF_ARG_TENSOR_LIST == 2 && TF_ARG_INT == 3 && TF_ARG_FLOAT == 4 &&
              TF_ARG_BOOL == 5);
static_assert(TF_LOG_DEBUG == 0 && TF_LOG_INFO == 1 && TF_LOG_WARN == 2 &&
              TF_LOG_ERROR == 3);
static_assert(TF_PLUGIN_NATIVE == 0 && TF_PLUGIN_FALLBACK == 1);
static_assert(TF_SOURCE_NONE == 0 && TF_SOURCE_ATEN == 1);
static_assert(TF_TENSOR_CONTIGUOUS == 1u);

#define AT(type, field, offset)                    \
  static_assert(offsetof(type, field) == (offset), \
                #type "." #field " moved: ABI 1.0 has it at " #offset)

// The 64-bit layouts of ABI 1.0 (LP64: x86_64, aarch64). A minor version may
// only append after the last field listed here.
#if UINTPTR_MAX == UINT64_MAX
AT(tf_tensor, data, 0);
AT(tf_tensor, device, 8);
AT(tf_tensor, ndim, 16);
AT(tf_tensor, dtype, 20);
AT(tf_tensor, shape, 24);
AT(tf_tensor, strides, 32);
AT(tf_tensor, byte_offset, 40);
AT(tf_tensor, source, 48);
AT(tf_tensor, source_kind, 56);
AT(tf_tensor, flags, 60);
static_assert(sizeof(tf_tensor) == 64, "tf_tensor is frozen");
AT(tf_tensor_list, items, 0);
AT(tf_tensor_list, count, 8);
static_assert(sizeof(tf_tensor_list) == 16, "tf_tensor_list is frozen");
AT(tf_arg, kind, 0);
AT(tf_arg, reserved, 4);
AT(tf_arg, value, 8);
static_assert(sizeof(tf_arg) == 24, "tf_arg is frozen");

AT(tf_call, struct_size, 0);
AT(tf_call, inputs, 8);
AT(tf_call, num_inputs, 16);
AT(tf_call, num_attrs, 20);
AT(tf_call, attrs, 24);
AT(tf_call, outputs, 32);
AT(tf_call, num_outputs, 40);
AT(tf_call, reserved, 44);
AT(tf_call, stream, 48);
AT(tf_call, kernel_data, 56);
AT(tf_call, host, 64);
AT(tf_call, error_sink, 72);

AT(tf_host_api, struct_size, 0);
AT(tf_host_api, abi_version_major, 8);
AT(tf_host_api, abi_version_minor, 12);
AT(tf_host_api, log, 16);
AT(tf_host_api, set_error, 24);
AT(tf_host_api, query, 32);

AT(tf_kernel, struct_size, 0);
AT(tf_kernel, op, 8);
AT(tf_kernel, device_type, 16);
AT(tf_kernel, dtype, 20);
AT(tf_kernel, fn, 24);
AT(tf_kernel, kernel_data, 32);

AT(tf_plugin, struct_size, 0);
AT(tf_plugin, abi_version_major, 8);
AT(tf_plugin, abi_version_minor, 12);
AT(tf_plugin, name, 16);
AT(tf_plugin, version, 24);
AT(tf_plugin, kind, 32);
AT(tf_plugin, reserved, 36);
AT(tf_plugin, init, 40);
AT(tf_plugin, set_option, 48);
AT(tf_plugin, kernels, 56);
AT(tf_plugin, num_kernels, 64);
#endif

TEST_CASE("a tf_tensor read as a DLTensor gives the same values", "[abi]") {
  float storage[24] = {};
  int64_t shape[3] = {2, 3, 4};
  int64_t strides[3] = {1, 2, 6};  // column-major, to catch swapped fields
  tf_tensor t{};
  t.data = storage;
  t.device = {TF_DEVICE_CUDA, 3};
  t.ndim = 3;
  t.dtype = {TF_DTYPE_BFLOAT, 16, 1};
  t.shape = shape;
  t.strides = strides;
  t.byte_offset = 128;
  t.source = &t;
  t.source_kind = TF_SOURCE_ATEN;
  t.flags = TF_TENSOR_CONTIGUOUS;

  DLPackReading r = ReadAsDLTensor(&t);
  CHECK(r.data == static_cast<void*>(storage));
  CHECK(r.device_type == kDLCUDA);
  CHECK(r.device_id == 3);
  CHECK(r.ndim == 3);
  CHECK(r.code == kDLBfloat);
  CHECK(r.bits == 16);
  CHECK(r.lanes == 1);
  CHECK(r.shape == std::vector<int64_t>{2, 3, 4});
  CHECK(r.strides == std::vector<int64_t>{1, 2, 6});
  CHECK(r.byte_offset == 128);
}

TEST_CASE("the header's entry symbol name", "[abi]") {
  CHECK(std::string(TF_PLUGIN_ENTRY_SYMBOL) == "torchferry_plugin_entry");
  tf_plugin_entry_fn entry = nullptr;  // the type exists and is callable
  CHECK(entry == nullptr);
}
