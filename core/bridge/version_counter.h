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
// Calibrate runs at import (version_counter.cc); Bump and CheckWritable run
// per call, beside the bridge's read (bridge_read.cc).
#pragma once

#include <Python.h>

#include <string>

#include "core/bridge/aoti.h"

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
  bool Bump(PyObject* object, AtenTensorHandle handle) const;

  // Inference tensors have no version counter; torch writes them only
  // inside torch.inference_mode(). False with a RuntimeError in torch's
  // words, naming the argument `what`, where this write would be refused.
  bool CheckWritable(const char* op, const char* what, PyObject* object,
                     AtenTensorHandle handle) const;

  bool calibrated() const { return ok_; }
  const std::string& detail() const { return detail_; }

 private:
  void* CounterOf(AtenTensorHandle handle) const;
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
