#include "core/out_alloc.h"

#include <fmt/format.h>

#include "core/py_errors.h"

namespace torchferry {
namespace {

PyObject* g_empty = nullptr;                 // torch.empty
PyObject* g_dtype_objects[kNumDtypes] = {};  // torch.float32, ...
PyObject* g_cpu = nullptr;                   // torch.device("cpu")
PyObject* g_kwnames = nullptr;               // ("dtype", "device")

}  // namespace

bool InitOutAlloc(PyObject* torch_module) {
  g_empty = PyObject_GetAttrString(torch_module, "empty");
  if (g_empty == nullptr) return false;
  PyObject* device_type = PyObject_GetAttrString(torch_module, "device");
  g_cpu =
      device_type ? PyObject_CallFunction(device_type, "s", "cpu") : nullptr;
  Py_XDECREF(device_type);
  g_kwnames = g_cpu ? Py_BuildValue("(ss)", "dtype", "device") : nullptr;
  if (g_kwnames == nullptr) return false;
  for (int i = 0; i < kNumDtypes; ++i) {
    g_dtype_objects[i] = PyObject_GetAttrString(
        torch_module, Dtype(static_cast<DtypeIndex>(i)).name);
    if (g_dtype_objects[i] == nullptr) return false;
  }
  return true;
}

PyObject* AllocateOut(const char* op, const TensorRef& like, DtypeIndex dtype,
                      int ndim, const int64_t* shape) {
  if (like.view.source_kind != TF_SOURCE_ATEN) {
    RaiseError(PyExc_TypeError,
               fmt::format("{}() missing argument 'out': it can be allocated "
                           "only when input is a torch.Tensor",
                           op));
    return nullptr;
  }
  PyObject* size = PyTuple_New(ndim);
  if (size == nullptr) return nullptr;
  for (int d = 0; d < ndim; ++d) {
    PyTuple_SET_ITEM(size, d, PyLong_FromLongLong(shape[d]));
  }
  // torch.empty(size, dtype=..., device=...) by vectorcall: no kwargs dict,
  // and a CPU tensor's device is the cached torch.device("cpu") rather than
  // a new one from its attribute (the default device may be another, so it
  // is always passed).
  PyObject* device = like.view.device.device_type == TF_DEVICE_CPU
                         ? (Py_INCREF(g_cpu), g_cpu)
                         : PyObject_GetAttrString(like.object, "device");
  PyObject* out = nullptr;
  if (device != nullptr) {
    PyObject* args[] = {nullptr, size, g_dtype_objects[dtype], device};
    out = PyObject_Vectorcall(g_empty, args + 1,
                              1 | PY_VECTORCALL_ARGUMENTS_OFFSET, g_kwnames);
  }
  Py_XDECREF(device);
  Py_DECREF(size);
  return out;
}

}  // namespace torchferry
