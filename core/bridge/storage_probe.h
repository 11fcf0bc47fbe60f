// A tensor's storage offset and its storage's size in bytes, read on every
// bridged tensor so that a view whose storage was shrunk or freed under it is
// refused before a kernel walks it.
//
// The AOTI getters (aoti_torch_get_storage_offset / _size) are two calls a
// tensor; the two fields cost three loads. At start-up the probe
// finds them as the negative-bit and version-counter probes do: the word of a
// TensorImpl that holds 0, 5 and 11 for three views of one tensor at those
// offsets, the StorageImpl* that the views and `.data` share and another
// tensor does not, and the word of that StorageImpl that holds the byte size
// the AOTI getter reports for two storages of different sizes. Where any of
// it is not found, the getters are used.
#pragma once

#include <Python.h>

#include <string>

#include "core/bridge/aoti.h"
#include "core/bridge/impl_words.h"

namespace torchferry {

class StorageProbe {
 public:
  // Reads no more than the first `impl_bytes` of a TensorImpl (bytes known
  // to lie inside it; 0: none, and the getters are used).
  void Calibrate(PyObject* torch_module, const AotiApi* api,
                 Py_ssize_t impl_bytes);

  // False where torch could not say (the getters failed).
  bool Read(AtenTensorHandle handle, int64_t* offset, int64_t* nbytes) const {
    return ReadImpl(TensorImplOfHandle(handle), offset, nbytes) ||
           (api_->get_storage_offset(handle, offset) == 0 &&
            api_->get_storage_size(handle, nbytes) == 0);
  }
  // From the TensorImpl's calibrated words alone; false (having read
  // nothing) when uncalibrated or where the tensor has no StorageImpl.
  bool ReadImpl(const char* impl, int64_t* offset, int64_t* nbytes) const {
    if (!ok_) return false;
    const char* storage =
        *reinterpret_cast<const char* const*>(impl + storage_at_);
    if (storage == nullptr) return false;
    *offset = *reinterpret_cast<const int64_t*>(impl + offset_at_);
    *nbytes = *reinterpret_cast<const int64_t*>(storage + nbytes_at_);
    return true;
  }

  bool calibrated() const { return ok_; }
  // The byte offset of a TensorImpl's StorageImpl*, once calibrated.
  Py_ssize_t storage_at() const { return storage_at_; }
  const std::string& detail() const { return detail_; }

 private:
  const AotiApi* api_ = nullptr;
  bool ok_ = false;
  Py_ssize_t offset_at_ = 0;   // int64 storage_offset_, in the TensorImpl
  Py_ssize_t storage_at_ = 0;  // StorageImpl*, in the TensorImpl
  Py_ssize_t nbytes_at_ = 0;   // int64 size in bytes, in the StorageImpl
  std::string detail_;
};

}  // namespace torchferry
