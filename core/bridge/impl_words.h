// What the probes (offset calibration, negative bit, version counter,
// storage, autograd metadata) use to look inside torch's objects: a tensor's
// TensorImpl* as Python reports it or behind an AOTI handle, and a word at a
// byte offset of an object, read without alignment or aliasing assumptions.
#pragma once

#include <Python.h>

#include <cstring>

#include "core/bridge/aoti.h"

namespace torchferry {

// tensor._cdata, the TensorImpl* of a torch.Tensor; nullptr (exception
// cleared by the caller) where Python cannot say.
inline const char* TensorImplOf(PyObject* tensor) {
  PyObject* cdata = PyObject_GetAttrString(tensor, "_cdata");
  void* impl = cdata ? PyLong_AsVoidPtr(cdata) : nullptr;
  Py_XDECREF(cdata);
  return static_cast<const char*>(impl);
}

// The TensorImpl* behind an AOTI handle: an at::Tensor is one pointer, its
// TensorImpl*.
inline const char* TensorImplOfHandle(AtenTensorHandle handle) {
  return *reinterpret_cast<const char* const*>(handle);
}

template <typename T>
T WordAt(const char* base, Py_ssize_t offset) {
  T word;
  std::memcpy(&word, base + offset, sizeof(word));
  return word;
}

}  // namespace torchferry
