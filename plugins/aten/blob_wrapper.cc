#include "blob_wrapper.h"

#include <ATen/ops/from_blob.h>

#include <cstdint>
#include <limits>
#include <string>

#include "kernel_error.h"

namespace torchferry::aten {
namespace {

std::string Dims(c10::IntArrayRef values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    text += (i == 0 ? "" : ", ") + std::to_string(values[i]);
  }
  return text + "]";
}

// Throws unless ATen's storage sizing (computeStorageNbytes) of exactly
// these sizes and strides is sure to succeed.
void CheckExtent(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                 size_t item_size) {
  const auto refuse = [&](const char* why) {
    throw KernelError(TF_ERROR_UNSUPPORTED,
                      std::string("cannot wrap a tensor of shape ") +
                          Dims(sizes) + " and strides " + Dims(strides) +
                          " for ATen: " + why);
  };
  if (sizes.size() != strides.size())
    refuse("sizes and strides differ in number");
  bool empty = false;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] < 0) refuse("a size is negative");
    if (strides[d] < 0) refuse("a stride is negative");
    empty = empty || sizes[d] == 0;
  }
  if (empty) return;
  // 1 + sum((size - 1) * stride) elements, times the item size, in int64.
  int64_t last = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t span;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &span) ||
        __builtin_add_overflow(last, span, &last)) {
      refuse("the memory it spans overflows int64");
    }
  }
  int64_t bytes;
  if (__builtin_add_overflow(last, int64_t{1}, &last) ||
      __builtin_mul_overflow(last, static_cast<int64_t>(item_size), &bytes)) {
    refuse("the memory it spans overflows int64");
  }
}

}  // namespace

at::Tensor WrapBlob(void* data, c10::IntArrayRef sizes,
                    c10::IntArrayRef strides, c10::ScalarType dtype,
                    c10::Device device) {
  CheckExtent(sizes, strides, c10::elementSize(dtype));
  return at::for_blob(data, sizes)
      .strides(strides)
      .target_device(device)
      .options(at::TensorOptions().dtype(dtype).device(device))
      .make_tensor();
}

}  // namespace torchferry::aten
