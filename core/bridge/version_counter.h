// torch's version counter, which every write through a kernel must bump so
// that autograd notices a tensor it saved was modified in place ("one of the
// variables needed for gradient computation has been modified by an inplace
// operation"), and which inference tensors lack (torch refuses to write them
// outside inference mode).
//
// The AOTI C shim has no function for either, so at start-up the counter is
// found the way the negative bit is: a TensorImpl keeps an
// intrusive_ptr<VersionCounter> that a view shares with its base but
// `tensor.data` does not, and the uint32 it points at follows
// torch.autograd.graph.increment_version. Where that is not found, the
// Python function is called per written tensor instead: correct, slower.
// Calibrate runs at import (version_counter.cc). Per call, Bridge::Read
// checks a tensor read for writing with CheckWritable (bridge_read.cc), and
// the dispatcher bumps every tensor a kernel wrote: inline, a word read and
// an atomic add where the counter was found.
#pragma once

#include <Python.h>

#include <string>

#include "core/bridge/aoti.h"
#include "core/bridge/impl_words.h"

namespace torchferry {

class VersionCounter {
 public:
  // Never fails: a failed calibration selects the Python fallback and says
  // why in detail(). Reads no more than the first `impl_bytes` of a
  // TensorImpl (bytes known to lie inside it; 0: none, so it fails).
  void Calibrate(PyObject* torch_module, Py_ssize_t impl_bytes);

  // `object` is the Python tensor, `handle` its at::Tensor*, or NULL where
  // the bridge has none (the exchange path): then the Python function. False
  // with a Python exception set where the fallback failed.
  bool Bump(PyObject* object, AtenTensorHandle handle) const {
    if (!ok_ || handle == nullptr) return BumpInPython(object);
    char* counter = static_cast<char*>(CounterOf(handle));
    if (counter != nullptr) {  // NULL: an inference tensor, which has none
      __atomic_fetch_add(reinterpret_cast<uint32_t*>(counter + value_offset_),
                         1u, __ATOMIC_RELAXED);
    }
    return true;
  }

  // Inference tensors have no version counter; torch writes them only
  // inside torch.inference_mode(). False with a RuntimeError in torch's
  // words, naming the argument `what`, where this write would be refused.
  bool CheckWritable(const char* what, PyObject* object,
                     AtenTensorHandle handle) const;

  bool calibrated() const { return ok_; }
  const std::string& detail() const { return detail_; }

 private:
  void* CounterOf(AtenTensorHandle handle) const {
    return WordAt<void*>(TensorImplOfHandle(handle), counter_offset_);
  }
  // torch.autograd.graph.increment_version, for a tensor without a handle
  // or where the counter was not found.
  bool BumpInPython(PyObject* object) const;
  bool IsInference(PyObject* object, AtenTensorHandle handle) const;

  bool ok_ = false;
  Py_ssize_t counter_offset_ = 0;  // bytes into the TensorImpl
  Py_ssize_t value_offset_ = 0;    // bytes into the VersionCounter
  std::string detail_;
  PyObject* increment_version_ = nullptr;  // fallback, kept for life
  PyObject* inference_mode_enabled_ =
      nullptr;                          // torch.is_inference_mode_enabled
  PyCFunction is_inference_ = nullptr;  // Tensor.is_inference, direct
};

}  // namespace torchferry
