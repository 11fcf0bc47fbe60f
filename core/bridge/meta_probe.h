// Where a TensorImpl keeps a dense CPU tensor's dtype, dim, sizes and
// strides, found at start-up so that reading a tensor costs a few loads
// instead of six AOTI getter calls per tensor. Only tensors whose
// DispatchKeySet holds nothing beyond a plain CPU tensor's keys are read
// here: sparse, nested, mkldnn, functional, batched, Python-dispatched, meta,
// CUDA, conjugated or negated tensors (each marked by a key of its own, and
// the ones whose sizes policy may be custom) still go through the getters, as
// does every tensor where calibration fails or TORCHFERRY_TENSOR_META=getters.
#pragma once

#include <Python.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "core/bridge/aoti.h"

namespace torchferry {

class MetaProbe {
 public:
  // Reads no more than the first `impl_bytes` of a TensorImpl; the
  // DispatchKeySet lies at `keyset_at` (the negative-bit probe's find).
  // impl_bytes 0: the getters are used.
  void Calibrate(PyObject* torch_module, const AotiApi* api,
                 Py_ssize_t impl_bytes, Py_ssize_t keyset_at,
                 uint64_t negative_key);

  // The dtype code (torch's ScalarType, as the AOTI getter reports it),
  // dim, sizes and strides of a dense CPU tensor, which is not negated
  // either; false, having read nothing, for any other tensor or when
  // uncalibrated.
  bool Read(AtenTensorHandle handle, int32_t* dtype, int64_t* ndim,
            int64_t** sizes, int64_t** strides) const {
    if (!ok_) return false;
    char* impl = *reinterpret_cast<char* const*>(handle);
    uint64_t keys;
    std::memcpy(&keys, impl + keyset_at_, sizeof(keys));
    if ((keys & ~plain_keys_) != 0) return false;
    uint16_t code;
    std::memcpy(&code, impl + dtype_at_, sizeof(code));
    std::memcpy(ndim, impl + sizes_at_, sizeof(*ndim));
    char* storage = impl + sizes_at_ + sizeof(int64_t);
    if (*ndim <= kInlineDims) {  // c10::impl::SizesAndStrides' inline buffer
      *sizes = reinterpret_cast<int64_t*>(storage);
      *strides = *sizes + kInlineDims;
    } else {  // its heap buffer: sizes, then strides
      std::memcpy(sizes, storage, sizeof(*sizes));
      *strides = *sizes + *ndim;
    }
    *dtype = code;
    return true;
  }

  bool calibrated() const { return ok_; }
  const std::string& detail() const { return detail_; }

 private:
  static constexpr int64_t kInlineDims = 5;
  bool ok_ = false;
  Py_ssize_t keyset_at_ = 0;  // uint64 DispatchKeySet, in the TensorImpl
  Py_ssize_t sizes_at_ = 0;   // c10::impl::SizesAndStrides, in the TensorImpl
  Py_ssize_t dtype_at_ = 0;   // uint16 caffe2::TypeMeta, in the TensorImpl
  uint64_t plain_keys_ = 0;   // every key a plain CPU tensor may carry
  std::string detail_;
};

}  // namespace torchferry
