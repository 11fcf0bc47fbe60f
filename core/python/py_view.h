// torchferry.TensorView: the Python face of a tf_tensor, returned by
// torchferry.bridge.view(). Cheap to make (no tuples or dict until a field is
// read), so that "tensor to native view" from Python costs little more than
// the bridge itself.
#pragma once

#include <Python.h>

namespace torchferry {

bool InitViewType(PyObject* module);
// Bridges `obj` and returns a new TensorView of it, or nullptr with an error.
PyObject* NewView(PyObject* obj);

}  // namespace torchferry
