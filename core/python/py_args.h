// Argument parsing for the op functions, which use CPython's vectorcall
// convention (METH_FASTCALL | METH_KEYWORDS): no tuple or dict is built per
// call, and keyword names are matched by pointer against interned strings
// before any string comparison.
#pragma once

#include <Python.h>

namespace torchferry {

constexpr int kMaxParams = 16;  // loader/op_schema.h's kMaxSchemaArgs

// Derived from the op's schema (core/python/op_functions.cc); the names point
// into it and live as long as the process.
struct Signature {
  const char* name = nullptr;        // the op, for messages: "add"
  const char* params[kMaxParams]{};  // the schema's arguments but out=
  PyObject* interned[kMaxParams]{};  // params[i] as an interned str
  int num_params = 0;
  int num_positional = 0;  // params[0, num_positional) may come by position
  uint32_t required = 0;   // bit i: params[i] has no default
  bool allow_stream_out = true;  // accepts the keyword-only out= and stream=
};

struct ParsedArgs {
  PyObject* values[kMaxParams];  // borrowed; nullptr where absent
  PyObject* out;
  PyObject* stream;
};

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
