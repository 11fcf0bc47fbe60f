// Argument parsing for the op functions, which use CPython's vectorcall
// convention (METH_FASTCALL | METH_KEYWORDS): no tuple or dict is built per
// call, and keyword names are matched by pointer against interned strings
// before any string comparison.
#pragma once

#include <Python.h>

#include "core/prepare/op_description.h"

namespace torchferry {

// References a call made in place of its arguments (plain numbers), released
// when the call ends.
class CallRefs {
 public:
  CallRefs() = default;
  CallRefs(const CallRefs&) = delete;
  CallRefs& operator=(const CallRefs&) = delete;
  ~CallRefs() {
    for (int i = 0; i < count_; ++i) Py_DECREF(refs_[i]);
  }
  // Keeps `value`, a new reference, for the call.
  PyObject* Keep(PyObject* value) { return refs_[count_++] = value; }

 private:
  PyObject* refs_[kMaxParams];
  int count_ = 0;
};

// Interns a signature's parameter names (and out, stream) once, into
// sig->interned; call at module init for every op.
bool InternSignatureNames(Signature* sig);

// Fills `parsed` or returns false with a TypeError in torch's words.
bool ParseArgs(const Signature& sig, PyObject* const* args, Py_ssize_t nargs,
               PyObject* kwnames, ParsedArgs* parsed);

// The stream= argument, read before any tensor is (reading it may run
// Python: a Stream subclass's cuda_stream property).
struct StreamArg {
  bool given = false;      // not None
  void* handle = nullptr;  // the cudaStream_t it names, when given
  // Set where the object names no stream; refused once the device is known
  // (on the cpu any stream is the first thing wrong).
  const char* bad_type = nullptr;
};
bool ParseStream(PyObject* stream, StreamArg* result);

}  // namespace torchferry
