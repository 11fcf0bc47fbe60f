// Raising Python exceptions from C++ with messages in torch's style. All of
// these are cold paths: they may allocate and call into Python freely.
#pragma once

#include <Python.h>

#include <string>

namespace torchferry {

// Sets `type` with `message`; returns false so callers can
// `return RaiseError(...)`.
inline bool RaiseError(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  return false;
}

// str(getattr(obj, attr)), or "<unknown>"; never leaves an exception set.
inline std::string PyAttrText(PyObject* obj, const char* attr) {
  std::string text = "<unknown>";
  PyObject* value = PyObject_GetAttrString(obj, attr);
  PyObject* str = value ? PyObject_Str(value) : nullptr;
  const char* utf8 = str ? PyUnicode_AsUTF8(str) : nullptr;
  if (utf8 != nullptr) text = utf8;
  Py_XDECREF(str);
  Py_XDECREF(value);
  PyErr_Clear();
  return text;
}

// Takes the pending exception and returns "Type: message".
inline std::string FetchErrorText() {
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  std::string text = "unknown error";
  if (type != nullptr) {
    PyObject* str = value ? PyObject_Str(value) : nullptr;
    const char* utf8 = str ? PyUnicode_AsUTF8(str) : nullptr;
    text = std::string(reinterpret_cast<PyTypeObject*>(type)->tp_name) +
           (utf8 && utf8[0] ? std::string(": ") + utf8 : std::string());
    Py_XDECREF(str);
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  PyErr_Clear();
  return text;
}

// Re-raises the pending exception as the same type with "op(): " in front.
inline void PrefixPendingError(const char* op) {
  if (op == nullptr || !PyErr_Occurred()) return;
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  PyObject* str = value ? PyObject_Str(value) : nullptr;
  const char* utf8 = str ? PyUnicode_AsUTF8(str) : nullptr;
  if (utf8 != nullptr) {
    PyErr_Format(type, "%s(): %s", op, utf8);
    Py_XDECREF(type);
  } else {
    PyErr_Restore(type, value, trace);
    value = trace = nullptr;
  }
  Py_XDECREF(str);
  Py_XDECREF(value);
  Py_XDECREF(trace);
}

}  // namespace torchferry
