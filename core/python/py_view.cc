#include "core/python/py_view.h"

#include <cstring>
#include <memory>

#include "core/prepare/call_frame.h"

namespace torchferry {
namespace {

constexpr int kInlineDims = 8;

// A copy of a tf_tensor, taken while the tensor was bridged: Python objects
// for its fields are built only when asked for, so that making one costs an
// allocation and a memcpy, not a dict of tuples.
struct ViewObject {
  PyObject_HEAD void* data;
  tf_device device;
  int32_t ndim;
  tf_dtype dtype;
  DtypeIndex dtype_index;
  uint64_t byte_offset;
  uint32_t flags;
  int32_t source_kind;
  const char* path;
  int64_t* dims;  // shape then strides: inline_dims or a heap array
  int64_t inline_dims[2 * kInlineDims];
};

PyObject* TupleOf(int n, const int64_t* values) {
  PyObject* t = PyTuple_New(n);
  for (int i = 0; t && i < n; ++i) {
    PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(values[i]));
  }
  return t;
}

ViewObject* AsView(PyObject* self) {
  return reinterpret_cast<ViewObject*>(self);
}

PyObject* GetData(PyObject* self, void*) {
  return PyLong_FromVoidPtr(AsView(self)->data);
}
PyObject* GetDevice(PyObject* self, void*) {
  const tf_device& d = AsView(self)->device;
  return Py_BuildValue("(ii)", d.device_type, d.device_id);
}
PyObject* GetNdim(PyObject* self, void*) {
  return PyLong_FromLong(AsView(self)->ndim);
}
PyObject* GetDtype(PyObject* self, void*) {
  const tf_dtype& d = AsView(self)->dtype;
  return Py_BuildValue("{s:i,s:i,s:i}", "code", d.code, "bits", d.bits, "lanes",
                       d.lanes);
}
PyObject* GetDtypeName(PyObject* self, void*) {
  return PyUnicode_FromString(Dtype(AsView(self)->dtype_index).name);
}
PyObject* GetShape(PyObject* self, void*) {
  ViewObject* v = AsView(self);
  return TupleOf(v->ndim, v->dims);
}
PyObject* GetStrides(PyObject* self, void*) {
  ViewObject* v = AsView(self);
  return TupleOf(v->ndim, v->dims + v->ndim);
}
PyObject* GetByteOffset(PyObject* self, void*) {
  return PyLong_FromUnsignedLongLong(AsView(self)->byte_offset);
}
PyObject* GetSourceKind(PyObject* self, void*) {
  return PyUnicode_FromString(
      AsView(self)->source_kind == TF_SOURCE_ATEN ? "aten" : "none");
}
PyObject* GetContiguous(PyObject* self, void*) {
  return PyBool_FromLong(AsView(self)->flags & TF_TENSOR_CONTIGUOUS);
}
PyObject* GetPath(PyObject* self, void*) {
  return PyUnicode_FromString(AsView(self)->path);
}

// The fields in as_dict() order; also the keys of view["..."].
PyGetSetDef g_fields[] = {
    {"data", GetData, nullptr, "address of element 0", nullptr},
    {"device", GetDevice, nullptr, "(DLPack device type, device id)", nullptr},
    {"ndim", GetNdim, nullptr, nullptr, nullptr},
    {"dtype", GetDtype, nullptr, "DLPack {code, bits, lanes}", nullptr},
    {"dtype_name", GetDtypeName, nullptr, "torch's name, e.g. 'float32'",
     nullptr},
    {"shape", GetShape, nullptr, nullptr, nullptr},
    {"strides", GetStrides, nullptr, "in elements", nullptr},
    {"byte_offset", GetByteOffset, nullptr, nullptr, nullptr},
    {"source_kind", GetSourceKind, nullptr,
     "'aten' when the view carries the caller's at::Tensor", nullptr},
    {"contiguous", GetContiguous, nullptr, "TF_TENSOR_CONTIGUOUS", nullptr},
    {"path", GetPath, nullptr, "the bridge path that produced the view",
     nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyObject* AsDict(PyObject* self, PyObject*) {
  PyObject* dict = PyDict_New();
  for (PyGetSetDef* f = g_fields; dict && f->name; ++f) {
    PyObject* value = f->get(self, nullptr);
    if (value == nullptr || PyDict_SetItemString(dict, f->name, value) < 0) {
      Py_XDECREF(value);
      Py_DECREF(dict);
      return nullptr;
    }
    Py_DECREF(value);
  }
  return dict;
}

PyObject* Subscript(PyObject* self, PyObject* key) {
  const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
  for (PyGetSetDef* f = g_fields; name && f->name; ++f) {
    if (std::strcmp(f->name, name) == 0) return f->get(self, nullptr);
  }
  PyErr_SetObject(PyExc_KeyError, key);
  return nullptr;
}

// A view equals another view or a dict with the same fields, so it can be
// compared with what torch reports without converting first.
PyObject* RichCompare(PyObject* self, PyObject* other, int op) {
  if ((op != Py_EQ && op != Py_NE) ||
      !(PyDict_Check(other) || Py_TYPE(other) == Py_TYPE(self))) {
    Py_RETURN_NOTIMPLEMENTED;
  }
  PyObject* mine = AsDict(self, nullptr);
  PyObject* theirs =
      PyDict_Check(other) ? (Py_INCREF(other), other) : AsDict(other, nullptr);
  PyObject* result =
      mine && theirs ? PyObject_RichCompare(mine, theirs, op) : nullptr;
  Py_XDECREF(mine);
  Py_XDECREF(theirs);
  return result;
}

PyObject* Repr(PyObject* self) {
  PyObject* dict = AsDict(self, nullptr);
  PyObject* text =
      dict ? PyUnicode_FromFormat("TensorView(%R)", dict) : nullptr;
  Py_XDECREF(dict);
  return text;
}

void Dealloc(PyObject* self) {
  ViewObject* v = AsView(self);
  if (v->dims != v->inline_dims) delete[] v->dims;
  PyTypeObject* type = Py_TYPE(self);
  PyObject_Free(self);
  Py_DECREF(type);  // heap types are owned by their instances
}

PyMethodDef g_methods[] = {
    {"as_dict", AsDict, METH_NOARGS, "the view's fields as a dict"},
    {nullptr, nullptr, 0, nullptr},
};

PyType_Slot g_slots[] = {
    {Py_tp_doc,
     const_cast<char*>(
         "What a plugin receives for a tensor (a tf_tensor), copied when it "
         "was bridged. Fields are attributes and keys; as_dict() gives all "
         "of them.")},
    {Py_tp_dealloc, reinterpret_cast<void*>(Dealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(Repr)},
    {Py_tp_richcompare, reinterpret_cast<void*>(RichCompare)},
    {Py_mp_subscript, reinterpret_cast<void*>(Subscript)},
    {Py_tp_methods, g_methods},
    {Py_tp_getset, g_fields},
    {0, nullptr},
};

PyType_Spec g_spec = {"torchferry.TensorView", sizeof(ViewObject), 0,
                      Py_TPFLAGS_DEFAULT, g_slots};

PyTypeObject* g_view_type = nullptr;

}  // namespace

bool InitViewType(PyObject* module) {
  PyObject* type = PyType_FromSpec(&g_spec);
  if (type == nullptr) return false;
  g_view_type = reinterpret_cast<PyTypeObject*>(type);  // kept for life
  Py_INCREF(type);
  return PyModule_AddObject(module, "TensorView", type) == 0;
}

PyObject* NewView(PyObject* obj) {
  CallFrame frame(Bridge::Get(), nullptr);
  TensorRef* ref = frame.Take(obj, "tensor", false);
  if (ref == nullptr) return nullptr;
  const tf_tensor& t = ref->view;
  auto* v = PyObject_New(ViewObject, g_view_type);
  if (v == nullptr) return nullptr;
  v->data = t.data;
  v->device = t.device;
  v->ndim = t.ndim;
  v->dtype = t.dtype;
  v->dtype_index = ref->dtype;
  v->byte_offset = t.byte_offset;
  v->flags = t.flags;
  v->source_kind = t.source_kind;
  v->path = t.source_kind == TF_SOURCE_ATEN
                ? BridgePathName(Bridge::Get().path())
            : ref->exchanged ? BridgePathName(BridgePath::kExchange)
                             : BridgePathName(BridgePath::kDlpack);
  v->dims = t.ndim <= kInlineDims ? v->inline_dims
                                  : new (std::nothrow) int64_t[2 * t.ndim];
  if (v->dims == nullptr) {
    v->dims = v->inline_dims;
    v->ndim = 0;
    Py_DECREF(v);
    return PyErr_NoMemory();
  }
  if (t.ndim > 0) {  // a 0-dim view may have NULL shape and strides
    std::memcpy(v->dims, t.shape, sizeof(int64_t) * t.ndim);
    std::memcpy(v->dims + t.ndim, t.strides, sizeof(int64_t) * t.ndim);
  }
  return reinterpret_cast<PyObject*>(v);
}

}  // namespace torchferry
