// From a prepared CallFrame to a kernel: look the kernel up by (op, device,
// dtype) in a per-process cache over the loader's registry, resolve the
// stream, call, and turn a failure into a Python exception that carries the
// plugin's name.
#pragma once

#include <Python.h>

#include "core/call_frame.h"
#include "core/ops.h"
#include "loader/loader.h"

namespace torchferry {

class Dispatcher {
 public:
  static Dispatcher& Get();
  void Attach(const Registry* registry) { registry_ = registry; }
  const Registry* registry() const { return registry_; }

  // nullptr when no plugin carries the key.
  const KernelEntry* Find(OpId op, const tf_device& device, DtypeIndex dtype);

  // Runs the prepared call; returns the result (out, or None) as a new
  // reference, or nullptr with a Python exception.
  PyObject* Run(OpId op, CallFrame& frame, PyObject* stream);

 private:
  struct Slot {
    const KernelEntry* entry = nullptr;
    bool resolved = false;
  };
  static constexpr int kDeviceSlots = 2;  // cpu, cuda
  Slot cache_[kNumOps][kDeviceSlots][kNumDtypes];
  const Registry* registry_ = nullptr;
};

}  // namespace torchferry
