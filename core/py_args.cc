#include "core/py_args.h"

#include <cstring>
#include <string>
#include <vector>

#include "core/py_errors.h"

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

bool NameEquals(PyObject* key, const char* name) {
  if (key == InternedName(name)) return true;
  return PyUnicode_CompareWithASCIIString(key, name) == 0;
}

}  // namespace

bool InternSignatureNames(const Signature& sig) {
  if (InternedName("out") == nullptr || InternedName("stream") == nullptr) {
    return false;
  }
  for (int i = 0; i < sig.num_params; ++i) {
    if (InternedName(sig.params[i]) == nullptr) return false;
  }
  return true;
}

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
    PyObject** slot = nullptr;
    if (sig.allow_stream_out && NameEquals(key, "out")) {
      slot = &parsed->out;
    } else if (sig.allow_stream_out && NameEquals(key, "stream")) {
      slot = &parsed->stream;
    } else {
      for (int i = 0; i < sig.num_params; ++i) {
        if (NameEquals(key, sig.params[i])) {
          slot = &parsed->values[i];
          break;
        }
      }
    }
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

}  // namespace torchferry
