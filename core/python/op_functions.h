// The Python face of each op, derived at start-up from its entry in
// loader/op_table.h: the parsed schema, the argument-parsing signature, the
// doc with a __text_signature__ (so inspect.signature works), the preparation
// rule, and the vectorcall function that torchferry.ops exposes.
#pragma once

#include <Python.h>

#include <string>

#include "core/prepare/prepare.h"
#include "core/python/py_args.h"
#include "loader/loader.h"
#include "loader/op_schema.h"
#include "loader/op_table.h"

namespace torchferry {

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

// Parses every entry's schema and derives its function; false with a Python
// exception when an entry is malformed (a bug caught at import).
bool InitOpFunctions();

const OpFunction& Function(OpId op);

// Derives a function for every op the plugins declared (ABI 1.1), numbered
// after the built-in ones as the registry numbers them; call once the
// registry has loaded, before AddOpFunctions.
bool InitDeclaredOps(const Registry& registry);

// Adds one function per op to `module`, each a METH_FASTCALL C function whose
// self carries its OpFunction: no tuple, dict or Python frame per call.
// Adds the functions of ops derived since the last call and sets every op's
// function on `module` again (a re-imported module has lost the declared
// ones).
bool AddOpFunctions(PyObject* module);

// torchferry._C._functions(): {name: function} of every op, from state the
// process keeps, whatever module object asks.
PyObject* FunctionsDict();

// torchferry.ops.schemas(): one dict per op, in the table's order.
PyObject* SchemasList();

}  // namespace torchferry
