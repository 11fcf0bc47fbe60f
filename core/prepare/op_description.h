// What preparation knows of an op: its entry in loader/op_table.h, the parsed
// schema, the parameters the door's parser fills, and the preparation rule
// (PrepareFor). The door (core/python/op_functions.cc) derives one per op at
// start-up and hands it down with every call; nothing below asks for it.
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>

#include "loader/loader.h"
#include "loader/op_schema.h"
#include "loader/op_table.h"

namespace torchferry {

constexpr int kMaxParams = 16;  // loader/op_schema.h's kMaxSchemaArgs

// Derived from the op's schema; the names point into it and live as long as
// the process.
struct Signature {
  const char* name = nullptr;        // the op, for messages: "add"
  const char* params[kMaxParams]{};  // the schema's arguments but out=
  PyObject* interned[kMaxParams]{};  // params[i] as an interned str
  int num_params = 0;
  int num_positional = 0;  // params[0, num_positional) may come by position
  uint32_t required = 0;   // bit i: params[i] has no default
  bool allow_stream_out = true;  // accepts the keyword-only out= and stream=
};

// One call's arguments, in the order of Signature::params.
struct ParsedArgs {
  PyObject* values[kMaxParams];  // borrowed; nullptr where absent
  PyObject* out;
  PyObject* stream;
};

class CallFrame;
struct OpFunction;

// Fills `frame` from the parsed arguments, or returns false with a Python
// exception set.
using PrepareFn = bool (*)(const OpFunction& fn, const ParsedArgs& args,
                           CallFrame& frame);

struct OpFunction {
  OpId id;
  const OpEntry* entry;  // a built-in op's, or `declared` below
  OpSchema schema;
  std::string name;  // schema.qualified_name(), NUL-terminated for messages
  Signature signature;
  const SchemaArg* params[kMaxParams];  // the schema argument of each param
  std::string doc;  // "name($module, ...)\n--\n\n" + entry->doc
  PrepareFn prepare;
  // The schema names an `out` argument: a one-return call must pass out=.
  bool has_out_arg = false;
  // Tensor parameters plus returns: the room a declared op's frame needs.
  int num_tensors = 0;
  // A plugin-declared op (ABI 1.1): its entry, and the text it points into.
  OpEntry declared{};
  std::string declared_by;       // the plugin that declared it; empty: built-in
  std::string declared_text[3];  // spelling, doc, contract
};

}  // namespace torchferry
