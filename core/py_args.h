// Argument parsing for the op functions, which use CPython's vectorcall
// convention (METH_FASTCALL | METH_KEYWORDS): no tuple or dict is built per
// call, and keyword names are matched by pointer against interned strings
// before any string comparison.
#pragma once

#include <Python.h>

namespace torchferry {

constexpr int kMaxParams = 6;

struct Signature {
  const char* name;                // the op, for messages: "add"
  const char* params[kMaxParams];  // positional-or-keyword, in order
  int num_params;
  int num_required;
  bool allow_stream_out = true;  // accepts the keyword-only out= and stream=
};

struct ParsedArgs {
  PyObject* values[kMaxParams];  // borrowed; nullptr where absent
  PyObject* out;
  PyObject* stream;
};

// Interns the parameter names once; call at module init.
bool InternSignatureNames();

// Fills `parsed` or returns false with a TypeError in torch's words.
bool ParseArgs(const Signature& sig, PyObject* const* args, Py_ssize_t nargs,
               PyObject* kwnames, ParsedArgs* parsed);

}  // namespace torchferry
