// From a prepared CallFrame to a kernel: look the kernel up by (op, device,
// dtype) in a per-process cache over the loader's registry, resolve the
// stream, call, and turn a failure into a Python exception that carries the
// plugin's name.
#pragma once

#include <Python.h>

#include <vector>

#include "core/call_frame.h"
#include "core/prepare.h"
#include "loader/loader.h"

namespace torchferry {

// The stream= argument, read before any tensor is (reading it may run
// Python: a Stream subclass's cuda_stream property).
struct StreamArg {
  bool given = false;      // not None
  void* handle = nullptr;  // the cudaStream_t it names, when given
  // Set where the object names no stream; refused once the device is known
  // (on the cpu any stream is the first thing wrong).
  const char* bad_type = nullptr;
};
bool ParseStream(PyObject* stream, StreamArg* result);

// False with a RuntimeError until `import torchferry` has started the bridge.
bool EnsureInitialized();
// Set while `import torchferry` resolves entry points and loads plugins, so
// that a query made then says so instead of blaming how torchferry was
// imported.
void SetLoading(bool loading);
// EnsureInitialized, and every plugin loaded: a call from inside a plugin's
// init (which runs while plugins load) would see only part of the registry.
bool EnsureReady(const char* op);

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
