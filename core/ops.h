// The v1 op set as Python sees it: each op's signature and the function that
// turns its Python arguments into a checked tf_call (abi/ABI.md, "The v1
// ops"). Dispatch and the kernel call are shared (core/dispatch.h).
#pragma once

#include <Python.h>

#include "core/call_frame.h"
#include "core/py_args.h"
#include "loader/op_names.h"

namespace torchferry {

// Op ids and names come from the loader's one list (loader/op_names.h), so
// that the registry and the Python functions agree on every index.
constexpr int kNumOps = static_cast<int>(OpId::kCount);

// Fills `frame` from the parsed arguments, or returns false with a Python
// exception set.
using PrepareFn = bool (*)(const ParsedArgs& args, CallFrame& frame);

struct OpSpec {
  const char* name;  // == OpName(id), checked at module init
  const char* doc;
  Signature signature;
  PrepareFn prepare;  // nullptr for noop, which takes *tensors
};

const OpSpec& Op(OpId id);

// Runs spec.prepare, and again from the top where Python ran after a tensor
// was read (CallFrame says why): afterwards, nothing read can be stale.
bool PrepareCall(const OpSpec& spec, const ParsedArgs& args, CallFrame& frame);

// noop(*tensors): bridges every argument and calls the kernel, measuring
// dispatch alone. Prepares twice where PrepareCall would.
bool PrepareNoop(PyObject* const* args, Py_ssize_t nargs, CallFrame& frame);

}  // namespace torchferry
