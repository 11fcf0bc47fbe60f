#include "blob_wrapper.h"

#include <ATen/ops/from_blob.h>

namespace torchferry::aten {

at::Tensor WrapBlob(void* data, c10::IntArrayRef sizes,
                    c10::IntArrayRef strides, c10::ScalarType dtype,
                    c10::Device device) {
  return at::for_blob(data, sizes)
      .strides(strides)
      .target_device(device)
      .options(at::TensorOptions().dtype(dtype).device(device))
      .make_tensor();
}

}  // namespace torchferry::aten
