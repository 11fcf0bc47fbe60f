// From a prepared CallFrame to a kernel: look the kernel up by (op, device,
// dtype) in a per-process cache over the loader's registry, resolve the
// stream, call, and turn a failure into a Python exception that carries the
// plugin's name.
#pragma once

#include <Python.h>

#include <vector>

#include "core/prepare/call_frame.h"
#include "core/prepare/prepare.h"
#include "core/python/py_args.h"
#include "core/python/readiness.h"
#include "loader/loader.h"

namespace torchferry {

// The Python exception type for a failed kernel's status.
PyObject* ExceptionFor(tf_status status);

class Dispatcher {
 public:
  static Dispatcher& Get();
  // Once every plugin has loaded: until then no lookup is made or cached.
  void Attach(const Registry* registry) {
    cache_.assign(registry->num_ops() * kDeviceSlots * kNumDtypes, Slot{});
    registry_ = registry;
  }
  bool attached() const { return registry_ != nullptr; }
  const Registry* registry() const { return registry_; }

  // nullptr when no plugin carries the key.
  const KernelEntry* Find(OpId op, const tf_device& device, DtypeIndex dtype);

  // Runs the prepared call; returns the result (out, or None) as a new
  // reference, or nullptr with a Python exception.
  // Every torch tensor the kernel wrote has its version counter bumped.
  PyObject* Run(OpId op, CallFrame& frame, const StreamArg& stream);

 private:
  struct Slot {
    const KernelEntry* entry = nullptr;
    bool resolved = false;
  };
  static constexpr int kDeviceSlots = 2;  // cpu, cuda
  std::vector<Slot> cache_;  // [op][device slot][dtype], sized at Attach
  const Registry* registry_ = nullptr;
};

// The NotImplementedError of a call no loaded plugin serves; returns false.
bool RaiseNoKernel(const char* op, const tf_device& device, DtypeIndex dtype);

}  // namespace torchferry
