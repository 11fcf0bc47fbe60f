// The Python face of each op, derived at start-up from its entry in
// loader/op_table.h: the parsed schema, the argument-parsing signature, the
// doc with a __text_signature__ (so inspect.signature works), the preparation
// rule, and the vectorcall function that torchferry.ops exposes.
#pragma once

#include <Python.h>

#include "core/prepare/op_description.h"
#include "loader/loader.h"

namespace torchferry {

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

// What the _C functions that name an op, device and dtype by text
// (_kernel_for, _infer, _number) make of them: nullptr, kNoDtype or false with
// a ValueError that names what is unknown.
const OpFunction* FunctionNamed(const Registry& registry, const char* name);
bool DeviceNamed(const char* name, tf_device* device);  // 'cpu' or 'cuda'
DtypeIndex DtypeNamed(const char* name);                // torch's spelling

// torchferry._C._functions(): {name: function} of every op, from state the
// process keeps, whatever module object asks.
PyObject* FunctionsDict();

// torchferry.ops.schemas(): one dict per op, in the table's order.
PyObject* SchemasList();

}  // namespace torchferry
