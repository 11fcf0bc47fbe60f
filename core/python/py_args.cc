#include "core/python/py_args.h"

#include <cstring>
#include <string>
#include <vector>

#include "core/bridge/py_errors.h"

namespace torchferry {
namespace {

struct Interned {
  const char* name;
  PyObject* str;
};
std::vector<Interned>& InternTable() {
  static auto* table = new std::vector<Interned>();
  return *table;
}

PyObject* InternedName(const char* name) {
  for (const Interned& i : InternTable()) {
    if (std::strcmp(i.name, name) == 0) return i.str;
  }
  PyObject* str = PyUnicode_InternFromString(name);
  InternTable().push_back({name, str});
  return str;
}

PyObject* g_out_name = nullptr;
PyObject* g_stream_name = nullptr;

}  // namespace

bool InternSignatureNames(Signature* sig) {
  g_out_name = InternedName("out");
  g_stream_name = InternedName("stream");
  if (g_out_name == nullptr || g_stream_name == nullptr) return false;
  for (int i = 0; i < sig->num_params; ++i) {
    sig->interned[i] = InternedName(sig->params[i]);
    if (sig->interned[i] == nullptr) return false;
  }
  return true;
}

namespace {

// The slot keyword `key` names, or nullptr. Keywords from Python source are
// interned strs, so the first pass compares pointers only; a str built at
// run time (f(**{name: v})) takes the second, by value.
PyObject** KeywordSlot(const Signature& sig, PyObject* key,
                       ParsedArgs* parsed) {
  if (sig.allow_stream_out && key == g_out_name) return &parsed->out;
  if (sig.allow_stream_out && key == g_stream_name) return &parsed->stream;
  for (int i = 0; i < sig.num_params; ++i) {
    if (key == sig.interned[i]) return &parsed->values[i];
  }
  const auto equals = [key](const char* name) {
    return PyUnicode_CompareWithASCIIString(key, name) == 0;
  };
  if (sig.allow_stream_out && equals("out")) return &parsed->out;
  if (sig.allow_stream_out && equals("stream")) return &parsed->stream;
  for (int i = 0; i < sig.num_params; ++i) {
    if (equals(sig.params[i])) return &parsed->values[i];
  }
  return nullptr;
}

}  // namespace

bool ParseArgs(const Signature& sig, PyObject* const* args, Py_ssize_t nargs,
               PyObject* kwnames, ParsedArgs* parsed) {
  if (nargs > sig.num_positional) {
    return RaiseError(PyExc_TypeError, std::string(sig.name) +
                                           "() takes at most " +
                                           std::to_string(sig.num_positional) +
                                           " positional arguments (" +
                                           std::to_string(nargs) + " given)");
  }
  for (int i = 0; i < sig.num_params; ++i) {
    parsed->values[i] = i < nargs ? args[i] : nullptr;
  }
  parsed->out = nullptr;
  parsed->stream = nullptr;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    PyObject* value = args[nargs + k];
    PyObject** slot = KeywordSlot(sig, key, parsed);
    if (slot == nullptr) {
      return RaiseError(PyExc_TypeError,
                        std::string(sig.name) +
                            "() got an unexpected keyword argument '" +
                            Utf8Text(key) + "'");
    }
    if (*slot != nullptr) {
      return RaiseError(PyExc_TypeError,
                        std::string(sig.name) +
                            "() got multiple values for argument '" +
                            Utf8Text(key) + "'");
    }
    *slot = value;
  }
  for (int i = 0; i < sig.num_params; ++i) {
    if ((sig.required >> i & 1u) != 0 && parsed->values[i] == nullptr) {
      const std::string where =
          i < sig.num_positional ? " (pos " + std::to_string(i + 1) + ")" : "";
      return RaiseError(PyExc_TypeError, std::string(sig.name) +
                                             "() missing required argument '" +
                                             sig.params[i] + "'" + where);
    }
  }
  return true;
}

bool ParseStream(PyObject* stream, StreamArg* result) {
  *result = StreamArg{};
  if (stream == nullptr || stream == Py_None) return true;
  PyObject* handle = PyLong_Check(stream)
                         ? (Py_INCREF(stream), stream)
                         : PyObject_GetAttrString(stream, "cuda_stream");
  result->given = true;
  if (handle == nullptr || !PyLong_Check(handle)) {
    Py_XDECREF(handle);
    if (PendingErrorIsFatal()) return false;
    PyErr_Clear();
    result->bad_type = Py_TYPE(stream)->tp_name;
    return true;
  }
  result->handle = PyLong_AsVoidPtr(handle);
  Py_DECREF(handle);
  return !PyErr_Occurred();
}

}  // namespace torchferry
