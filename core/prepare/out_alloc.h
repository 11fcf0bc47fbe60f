// Allocating out= when the caller leaves it out. Two routes, one chosen at
// start-up by what torch exports:
// - direct: aoti_torch_empty_strided, the handle wrapped as a torch.Tensor
//   (torch_tensor_to_pyobject on torch >= 2.14, THPVariable_Wrap before).
//   Faster than torch.empty, whose time goes in its Python argument
//   parsing. For the CPU the shim calls ATen's CPU allocator directly, so
//   neither torch function nor dispatch modes see the allocation (they see
//   none of the op's work either), and under
//   torch.use_deterministic_algorithms the output is not first filled with
//   NaN (every op writes all of its output).
// - torch.empty: where those are absent, for devices other than the CPU,
//   and where the direct route fails (torch then raises its own error).
#pragma once

#include <Python.h>

#include "core/bridge/bridge.h"

namespace torchferry {

bool InitOutAlloc(PyObject* torch_module, const TorchLibrary& lib);
// A new torch tensor of `shape` and `dtype` on `like`'s device, or nullptr
// with a Python exception.
PyObject* AllocateOut(const char* op, const TensorRef& like, DtypeIndex dtype,
                      int ndim, const int64_t* shape);

// For `info` and A/B runs: the route now taken ("direct" or "torch.empty"),
// why, and forcing one ("auto", "direct", "torch.empty"; false with a Python
// error for an unknown or unavailable one).
const char* OutAllocRoute();
const char* OutAllocReason();
bool SetOutAllocRoute(const char* name);

}  // namespace torchferry
