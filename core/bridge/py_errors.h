// Raising Python exceptions from C++ with messages in torch's style. All of
// these are cold paths: they may allocate and call into Python freely.
#pragma once

#include <Python.h>

#include <string>
#include <string_view>

#include "abi/torchferry.h"

namespace torchferry {

// Text from C that is not known to be UTF-8 (a plugin's message, a file
// name, an environment variable) as a Python str: invalid bytes come out as
// backslash escapes ("caf\xe9") rather than as a UnicodeDecodeError, so that
// nothing a plugin or the file system says can fail the call that reports it.
// Fails only when memory runs out.
inline PyObject* NewText(std::string_view text) {
  return PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()),
                              "backslashreplace");
}

// A Python str as UTF-8 for a message, with lone surrogates (a keyword
// argument named "\ud800") escaped instead of failing.
inline std::string Utf8Text(PyObject* str) {
  PyObject* bytes = PyUnicode_AsEncodedString(str, "utf-8", "backslashreplace");
  std::string text = bytes ? PyBytes_AS_STRING(bytes) : "<unprintable>";
  Py_XDECREF(bytes);
  if (bytes == nullptr) PyErr_Clear();
  return text;
}

// Sets `type` with `message`; returns false so callers can
// `return RaiseError(...)`.
inline bool RaiseError(PyObject* type, const std::string& message) {
  PyObject* text = NewText(message);
  if (text == nullptr) return false;  // MemoryError is set
  PyErr_SetObject(type, text);
  Py_DECREF(text);
  return false;
}

// Takes the pending exception and returns "Type: message".
inline std::string FetchErrorText() {
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  std::string text = "unknown error";
  if (type != nullptr) {
    PyObject* str = value ? PyObject_Str(value) : nullptr;
    std::string message = str ? Utf8Text(str) : "";
    text = std::string(reinterpret_cast<PyTypeObject*>(type)->tp_name) +
           (message.empty() ? message : ": " + message);
    Py_XDECREF(str);
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  PyErr_Clear();
  return text;
}

// True when the pending exception is about the process, not about an
// argument (KeyboardInterrupt, SystemExit, MemoryError): such an exception
// must reach the caller unchanged, never be reworded into a TypeError.
inline bool PendingErrorIsFatal() {
  return PyErr_Occurred() && (!PyErr_ExceptionMatches(PyExc_Exception) ||
                              PyErr_ExceptionMatches(PyExc_MemoryError));
}

// The Python exception type for a failed plugin call's status.
inline PyObject* ExceptionFor(tf_status status) {
  switch (status) {
    case TF_ERROR_INVALID_ARGUMENT:
      return PyExc_ValueError;
    case TF_ERROR_UNSUPPORTED:
      return PyExc_NotImplementedError;
    case TF_ERROR_OUT_OF_MEMORY:
      return PyExc_MemoryError;
    case TF_ERROR_OUT_OF_RANGE:  // torch's class for an id past the table
      return PyExc_IndexError;
    default:
      return PyExc_RuntimeError;
  }
}

// Re-raises the pending exception as the same type with "op(): " in front;
// leaves the fatal ones untouched.
inline void PrefixPendingError(const char* op) {
  if (op == nullptr || !PyErr_Occurred() || PendingErrorIsFatal()) return;
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  PyObject* str = value ? PyObject_Str(value) : nullptr;
  if (str != nullptr) {
    PyErr_Format(type, "%s(): %s", op, Utf8Text(str).c_str());
    Py_XDECREF(type);
  } else {
    PyErr_Clear();
    PyErr_Restore(type, value, trace);
    value = trace = nullptr;
  }
  Py_XDECREF(str);
  Py_XDECREF(value);
  Py_XDECREF(trace);
}

}  // namespace torchferry
