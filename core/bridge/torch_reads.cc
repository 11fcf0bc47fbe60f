// Reading a torch tensor through torch's own Python-level getters and
// methods, called as C functions, without running any Python: not a
// subclass's __torch_function__ or property, not a TorchFunctionMode's. The
// fallbacks of the calibrated probes (negative bit, storage, requires_grad,
// inference) and the words of the refusals read a tensor here, so that what
// a call believes about a tensor is torch's answer, never its class's.
#include <fmt/format.h>

#include "core/bridge/bridge.h"
#include "core/bridge/py_errors.h"

namespace torchferry {

void Bridge::FindTorchFunctionHoldOff() {
  // torch's C getters and methods hand the tensor to a TorchFunctionMode's
  // Python while one is active, and to a subclass's __torch_function__.
  // torch._C._is_torch_function_mode_enabled (called as a C function) says
  // when; torch._C.DisableTorchFunction, entered and left around such a read,
  // keeps that Python from running.
  PyObject* c_module = PyObject_GetAttrString(torch_module_, "_C");
  PyObject* mode_enabled =
      c_module
          ? PyObject_GetAttrString(c_module, "_is_torch_function_mode_enabled")
          : nullptr;
  PyObject* disable_type =
      c_module ? PyObject_GetAttrString(c_module, "DisableTorchFunction")
               : nullptr;
  Py_XDECREF(c_module);
  if (mode_enabled != nullptr && PyCFunction_Check(mode_enabled) &&
      PyCFunction_GET_FLAGS(mode_enabled) == METH_NOARGS) {
    mode_enabled_ = PyCFunction_GET_FUNCTION(mode_enabled);
    mode_enabled_self_ = PyCFunction_GET_SELF(mode_enabled);  // torch._C
  }
  Py_XDECREF(mode_enabled);  // torch._C keeps it for the process
  // One instance, made now: making one per read could start the collector.
  // Its bound methods keep it for the process.
  PyObject* disable =
      disable_type ? PyObject_CallNoArgs(disable_type) : nullptr;
  Py_XDECREF(disable_type);
  disable_enter_ =
      disable ? PyObject_GetAttrString(disable, "__enter__") : nullptr;
  disable_exit_ =
      disable ? PyObject_GetAttrString(disable, "__exit__") : nullptr;
  Py_XDECREF(disable);
  if (disable_enter_ == nullptr || disable_exit_ == nullptr) {
    Py_CLEAR(disable_enter_);
    Py_CLEAR(disable_exit_);
  }
  PyErr_Clear();
}

bool Bridge::TorchFunctionCouldRun(PyObject* obj) const {
  PyTypeObject* type = Py_TYPE(obj);
  if ((type != tensor_type_ && type != parameter_type_) ||
      mode_enabled_ == nullptr) {
    return true;
  }
  PyObject* enabled = mode_enabled_(mode_enabled_self_, nullptr);
  Py_XDECREF(enabled);
  if (enabled == nullptr) PyErr_Clear();
  return enabled != Py_False;
}

thread_local int Bridge::HeldOff::depth_ = 0;

Bridge::HeldOff::HeldOff(const Bridge& bridge, PyObject* obj) {
  if (depth_ > 0) {  // an outer HeldOff of this thread holds it off already
    ++depth_;
    nested_ = quiet_ = true;
    return;
  }
  if (!bridge.TorchFunctionCouldRun(obj)) {
    quiet_ = true;
    return;
  }
  if (bridge.disable_enter_ == nullptr) return;  // Python may run: quiet_ no
  PyObject* r = PyObject_CallNoArgs(bridge.disable_enter_);
  if (r == nullptr) {
    PyErr_Clear();
    return;
  }
  Py_DECREF(r);
  exit_ = bridge.disable_exit_;
  quiet_ = true;
  ++depth_;
}

Bridge::HeldOff::~HeldOff() {
  if (nested_) {
    --depth_;
    return;
  }
  if (exit_ == nullptr) return;
  --depth_;
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyObject* r =
      PyObject_CallFunctionObjArgs(exit_, Py_None, Py_None, Py_None, nullptr);
  if (r == nullptr) PyErr_Clear();
  Py_XDECREF(r);
  PyErr_Restore(type, value, trace);
}

PyObject* Bridge::TorchAttr(PyObject* obj, const char* attr) const {
  if (!IsTorchTensor(obj)) return PyObject_GetAttrString(obj, attr);
  // torch.Tensor's own getter, not whatever the object's class puts in its
  // place (a property of a subclass is Python).
  PyObject* key = PyUnicode_InternFromString(attr);
  PyObject* descr = key ? _PyType_Lookup(tensor_type_, key) : nullptr;
  Py_XDECREF(key);
  if (descr == nullptr || !PyObject_TypeCheck(descr, &PyGetSetDescr_Type)) {
    PyErr_Format(PyExc_AttributeError,
                 "torch.Tensor.%s is not a C getter in this torch", attr);
    return nullptr;
  }
  PyGetSetDef* def = reinterpret_cast<PyGetSetDescrObject*>(descr)->d_getset;
  const HeldOff held(*this, obj);
  if (!held.quiet()) {
    PyErr_Format(PyExc_RuntimeError,
                 "torch.Tensor.%s cannot be read without running a "
                 "__torch_function__ in this torch",
                 attr);
    return nullptr;
  }
  return def->get(obj, def->closure);
}

std::string Bridge::AttrText(PyObject* obj, const char* attr) const {
  std::string text = "<unknown>";
  PyObject* value = TorchAttr(obj, attr);
  PyObject* str = value ? PyObject_Str(value) : nullptr;
  if (str != nullptr) text = Utf8Text(str);
  Py_XDECREF(str);
  Py_XDECREF(value);
  PyErr_Clear();
  return text;
}

}  // namespace torchferry
