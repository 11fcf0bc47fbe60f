// From a prepared CallFrame to a kernel: look the kernel up by (op, device,
// dtype) in the KernelCache, resolve the stream, call, and turn a failure into
// a Python exception that carries the plugin's name.
#pragma once

#include <Python.h>

#include "core/prepare/call_frame.h"
#include "core/prepare/op_description.h"
#include "core/python/py_args.h"
#include "loader/loader.h"

namespace torchferry {

// Runs the prepared call of `fn`; returns the result (out, or None) as a new
// reference, or nullptr with a Python exception. Every torch tensor the
// kernel wrote has its version counter bumped.
PyObject* Dispatch(const OpFunction& fn, CallFrame& frame,
                   const StreamArg& stream);

// The NotImplementedError of a call no loaded plugin serves; returns false.
bool RaiseNoKernel(const char* op, const tf_device& device, DtypeIndex dtype);

}  // namespace torchferry
