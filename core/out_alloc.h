// Allocating out= when the caller leaves it out: a convenience off the fast
// path (it goes through torch.empty), so callers who care pass out=.
#pragma once

#include <Python.h>

#include "core/bridge.h"

namespace torchferry {

bool InitOutAlloc(PyObject* torch_module);
// A new torch tensor of `shape` and `dtype` on `like`'s device, or nullptr
// with a Python exception.
PyObject* AllocateOut(const char* op, const TensorRef& like, DtypeIndex dtype,
                      int ndim, const int64_t* shape);

}  // namespace torchferry
