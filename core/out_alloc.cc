#include "core/out_alloc.h"

#include <fmt/format.h>

#include "core/py_errors.h"

namespace torchferry {
namespace {

PyObject* g_empty = nullptr;                 // torch.empty
PyObject* g_dtype_objects[kNumDtypes] = {};  // torch.float32, ...

}  // namespace

bool InitOutAlloc(PyObject* torch_module) {
  g_empty = PyObject_GetAttrString(torch_module, "empty");
  if (g_empty == nullptr) return false;
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
  PyObject* device = PyObject_GetAttrString(like.object, "device");
  PyObject* kwargs =
      device ? Py_BuildValue("{s:O,s:O}", "dtype", g_dtype_objects[dtype],
                             "device", device)
             : nullptr;
  PyObject* args = kwargs ? PyTuple_Pack(1, size) : nullptr;
  PyObject* out = args ? PyObject_Call(g_empty, args, kwargs) : nullptr;
  Py_XDECREF(args);
  Py_XDECREF(kwargs);
  Py_XDECREF(device);
  Py_DECREF(size);
  return out;
}

}  // namespace torchferry
