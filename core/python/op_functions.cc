#include "core/python/op_functions.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <deque>
#include <string>
#include <vector>

#include "core/bridge/py_errors.h"
#include "core/prepare/kernel_cache.h"
#include "core/prepare/prepare.h"
#include "core/python/dispatch.h"
#include "core/python/readiness.h"

namespace torchferry {
namespace {

// Built once at import, never resized: Signature and PyMethodDef point into
// these for the life of the process.
std::deque<OpFunction>& Functions() {
  static auto* functions = new std::deque<OpFunction>();
  return *functions;
}

// What an op function's `self` is: a handle on its OpFunction, so that one
// C function serves every op at the cost of one pointer read.
struct OpHandle {
  PyObject_HEAD const OpFunction* fn;
};

// An int or float subclass as the plain int or float it holds, read without
// calling any of its methods; nullptr for anything else.
PyObject* PlainNumber(PyObject* value) {
  if (PyFloat_Check(value)) return PyFloat_FromDouble(PyFloat_AS_DOUBLE(value));
  // int's own nb_int copies the digits of a subclass instance; PyNumber_Long
  // would call the subclass's __int__.
  if (PyLong_Check(value)) return PyLong_Type.tp_as_number->nb_int(value);
  return nullptr;
}

// Every number argument as a plain int, float or bool before any tensor is
// read: converting one may run Python (a subclass's __float__ or __index__, a
// numpy scalar's, a tensor's .item()), and Python that runs once a tensor has
// been read can resize or free it (core/prepare/call_frame.h). Here it runs
// first; the preparation rules then read only plain numbers, which run no
// Python. An argument that does not convert is left as it is, for the rule to
// refuse with its own message (a KeyboardInterrupt while converting
// propagates).
bool PlainNumbers(const OpFunction& fn, ParsedArgs* parsed, CallRefs* refs) {
  for (int i = 0; i < fn.signature.num_params; ++i) {
    PyObject* value = parsed->values[i];
    if (value == nullptr || value == Py_None || PyBool_Check(value) ||
        PyFloat_CheckExact(value) || PyLong_CheckExact(value)) {
      continue;
    }
    const SchemaArg& a = *fn.params[i];
    const size_t index = static_cast<size_t>(fn.params[i] - &fn.schema.args[0]);
    if (a.type == ArgType::kTensorList || a.type == ArgType::kBool ||
        (a.type == ArgType::kTensor && !NumberMayStandFor(fn, index)) ||
        !PyNumber_Check(value)) {
      continue;  // a str is no number, though float("2") would take it
    }
    // As torch reads them: the value an int or float subclass holds.
    PyObject* plain = PlainNumber(value);
    if (plain == nullptr && a.type == ArgType::kTensor) {
      // A numpy scalar where a number may stand for a tensor: a number, as
      // torch takes it; an array or any other object with __dlpack__ stays
      // a tensor.
      if (Bridge::Get().IsTorchTensor(value)) continue;
      if (PyObject_HasAttrString(value, "__dlpack__")) continue;
      plain =
          PyIndex_Check(value) ? PyNumber_Index(value) : PyNumber_Float(value);
    } else if (plain == nullptr && a.type == ArgType::kFloat) {
      plain = PyNumber_Float(value);  // a numpy scalar, a 0-dim tensor
    } else if (plain == nullptr && PyIndex_Check(value) &&
               (a.type == ArgType::kInt || a.type == ArgType::kScalar)) {
      plain = PyNumber_Index(value);  // a numpy integer
    } else if (plain == nullptr && a.type == ArgType::kScalar &&
               !Bridge::Get().IsTorchTensor(value)) {
      plain = PyNumber_Float(value);  // a numpy float
    }
    if (plain == nullptr) {
      if (PyErr_Occurred() == nullptr) continue;
      if (!PyErr_ExceptionMatches(PyExc_Exception)) return false;
      PyErr_Clear();  // the rule refuses the argument in its own words
      continue;
    }
    parsed->values[i] = refs->Keep(plain);
  }
  return true;
}

// EnsureInitialized, and every plugin loaded: a call from inside a plugin's
// init (which runs while plugins load) would see only part of the registry.
bool EnsureReady(const char* op) {
  if (!EnsureInitialized()) return false;
  if (KernelCache::Get().attached()) return true;
  return RaiseError(PyExc_RuntimeError,
                    fmt::format("{}(): torchferry is still loading its "
                                "plugins; ops cannot be called until import "
                                "torchferry has finished (e.g. from a "
                                "plugin's init)",
                                op));
}

PyObject* CallOp(PyObject* self, PyObject* const* args, Py_ssize_t nargs,
                 PyObject* kwnames) {
  const OpFunction& fn = *reinterpret_cast<OpHandle*>(self)->fn;
  if (!EnsureReady(fn.name.c_str())) return nullptr;
  ParsedArgs parsed;
  CallRefs refs;
  if (!ParseArgs(fn.signature, args, nargs, kwnames, &parsed) ||
      !PlainNumbers(fn, &parsed, &refs)) {
    return nullptr;
  }
  StreamArg stream;
  if (!ParseStream(parsed.stream, &stream)) return nullptr;
  CallFrame frame(Bridge::Get(), fn.name.c_str());
  if (!PrepareCall(fn, parsed, frame)) return nullptr;
  return Dispatch(fn, frame, stream);
}

PyObject* CallNoop(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  const OpFunction& fn = *reinterpret_cast<OpHandle*>(self)->fn;
  if (!EnsureReady("noop")) return nullptr;
  CallFrame frame(Bridge::Get(), "noop");
  if (!PrepareNoop(args, nargs, frame)) return nullptr;
  return Dispatch(fn, frame, StreamArg{});
}

// The signature as Python writes it, e.g.
// "add(input, other, alpha=1, *, out=None, stream=None)"; with
// `self_marker`, "$module" comes first, as __text_signature__ wants it.
std::string PythonSignature(const OpFunction& fn, bool self_marker) {
  std::vector<std::string> params;
  if (self_marker) params.push_back("$module");
  const std::string& name = fn.schema.name;  // the attribute's name
  if (fn.entry->geometry == Geometry::kNoop) {
    params.push_back("*" + fn.schema.args[0].name);
    return fmt::format("{}({})", name, fmt::join(params, ", "));
  }
  bool star = false;
  bool out_declared = false;
  for (const SchemaArg& a : fn.schema.args) {
    if (a.kwarg_only && !star) {
      params.push_back("*");
      star = true;
    }
    if (a.is_out()) {
      out_declared = true;
      params.push_back(a.name);
    } else {
      params.push_back(
          a.has_default ? a.name + "=" + DefaultText(a.default_value) : a.name);
    }
  }
  if (!star) params.push_back("*");
  if (!out_declared) params.push_back("out=None");
  params.push_back("stream=None");
  return fmt::format("{}({})", name, fmt::join(params, ", "));
}

// Fills everything but id, entry and schema, which the caller set.
bool Derive(OpFunction* fn) {
  const OpEntry& entry = *fn->entry;
  fn->name = fn->schema.qualified_name();
  Signature& sig = fn->signature;
  sig.name = fn->name.c_str();
  sig.allow_stream_out = entry.geometry != Geometry::kNoop;
  for (const SchemaArg& a : fn->schema.args) {
    if (a.is_out()) continue;  // the out= every op parses
    if (sig.num_params == kMaxParams) {
      return RaiseError(PyExc_ImportError,
                        fmt::format("torchferry._C: op {} has more than {} "
                                    "arguments",
                                    fn->name, kMaxParams));
    }
    if (!a.has_default) sig.required |= 1u << sig.num_params;
    if (!a.kwarg_only) ++sig.num_positional;
    fn->params[sig.num_params] = &a;
    sig.params[sig.num_params++] = a.name.c_str();
    fn->num_tensors += a.type == ArgType::kTensor;
  }
  fn->num_tensors += static_cast<int>(fn->schema.returns.size());
  fn->prepare = PrepareFor(entry.geometry);
  fn->has_out_arg = fn->schema.FindArg("out") >= 0;
  fn->doc = PythonSignature(*fn, /*self_marker=*/true) + "\n--\n\n" +
            std::string(entry.doc);
  return InternSignatureNames(&sig);
}

// list.append(item), taking over both references on failure: false with
// the exception set, and list released.
bool AppendItem(PyObject* list, PyObject* item) {
  const bool ok = item != nullptr && PyList_Append(list, item) == 0;
  Py_XDECREF(item);
  if (!ok) Py_DECREF(list);
  return ok;
}

// [{"name", "type", "optional", "kwarg_only", "written", "default",
// "number_ok"}], the default as Python writes it or None when there is none.
PyObject* ArgsList(const OpFunction& fn) {
  PyObject* list = PyList_New(0);
  if (list == nullptr) return nullptr;
  for (size_t i = 0; i < fn.schema.args.size(); ++i) {
    const SchemaArg& a = fn.schema.args[i];
    PyObject* item = Py_BuildValue(
        "{s:s,s:s,s:O,s:O,s:O,s:N,s:O}", "name", a.name.c_str(), "type",
        ArgTypeName(a.type), "optional", a.optional ? Py_True : Py_False,
        "kwarg_only", a.kwarg_only ? Py_True : Py_False, "written",
        a.written ? Py_True : Py_False, "default",
        a.has_default
            ? PyUnicode_FromString(DefaultText(a.default_value).c_str())
            : (Py_INCREF(Py_None), Py_None),
        "number_ok", NumberMayStandFor(fn, i) ? Py_True : Py_False);
    if (!AppendItem(list, item)) return nullptr;
  }
  return list;
}

// The dtypes an op lists, as torch spells them, in the table's order.
PyObject* DtypeNames(DtypeSet dtypes) {
  PyObject* names = PyList_New(0);
  for (int i = 0; names != nullptr && i < kNumDtypes; ++i) {
    const auto d = static_cast<DtypeIndex>(i);
    if (dtypes.Has(d) &&
        !AppendItem(names, PyUnicode_FromString(Dtype(d).name))) {
      return nullptr;
    }
  }
  return names;
}

}  // namespace

bool InitOpFunctions() {
  if (!Functions().empty()) return true;
  for (size_t i = 0; i < kNumOps; ++i) {
    OpFunction& fn = Functions().emplace_back();
    fn.id = static_cast<OpId>(i);
    fn.entry = &kOpTable[i];
    std::string error;
    if (!ParseSchema(kOpTable[i].schema, &fn.schema, &error)) {
      Functions().clear();
      return RaiseError(PyExc_ImportError,
                        fmt::format("torchferry._C: the schema of built-in op "
                                    "{} is malformed, {}: {}",
                                    i, error, kOpTable[i].schema));
    }
    if (!Derive(&fn)) {
      Functions().clear();
      return false;
    }
  }
  return true;
}

bool InitDeclaredOps(const Registry& registry) {
  for (const DeclaredOp& op : registry.declared_ops()) {
    const int index = registry.OpIndexOf(op.name);
    if (index != static_cast<int>(Functions().size())) {
      return RaiseError(PyExc_ImportError,
                        fmt::format("torchferry._C: declared op {} is number "
                                    "{} in the registry but {} here",
                                    op.name, index, Functions().size()));
    }
    OpFunction& fn = Functions().emplace_back();
    fn.id = static_cast<OpId>(index);
    fn.schema = op.schema;
    fn.declared_by = op.declared_by->name;
    fn.declared_text[0] = op.spelling;
    fn.declared_text[1] =
        op.doc.empty() ? "declared by plugin '" + fn.declared_by + "'" : op.doc;
    fn.declared_text[2] = fmt::format(
        "declared by plugin '{}': tensor arguments in inputs, the others in "
        "attrs, in the schema's order; out as the plugin's infer gives it",
        fn.declared_by);
    fn.declared = {fn.declared_text[0], dtype_sets::kAll,
                   AliasRule::kNone,    Geometry::kDeclared,
                   fn.declared_text[1], fn.declared_text[2]};
    fn.entry = &fn.declared;
    if (!Derive(&fn)) return false;
  }
  return true;
}

const OpFunction& Function(OpId op) {
  return Functions()[static_cast<size_t>(op)];
}

const OpFunction* FunctionNamed(const Registry& registry, const char* name) {
  const int index = registry.OpIndexOf(name);
  if (index < 0) {
    RaiseError(PyExc_ValueError, fmt::format("unknown op '{}'", name));
    return nullptr;
  }
  return &Function(static_cast<OpId>(index));
}

bool DeviceNamed(const char* name, tf_device* device) {
  const std::string text(name);
  if (text != "cpu" && text != "cuda") {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("unknown device '{}'; expected 'cpu' or 'cuda'", name));
  }
  *device = {text == "cuda" ? TF_DEVICE_CUDA : TF_DEVICE_CPU, 0};
  return true;
}

DtypeIndex DtypeNamed(const char* name) {
  for (int d = 0; d < kNumDtypes; ++d) {
    if (std::string(Dtype(static_cast<DtypeIndex>(d)).name) == name) {
      return static_cast<DtypeIndex>(d);
    }
  }
  RaiseError(PyExc_ValueError, fmt::format("unknown dtype '{}'", name));
  return kNoDtype;
}

namespace {

// name -> function of every op derived so far, kept with the process. A
// module object does not hold them reliably: re-importing torchferry._C
// (after its entries left sys.modules) gives a module rebuilt from what its
// init left, without the declared ops added later.
PyObject* g_functions = nullptr;

}  // namespace

bool AddOpFunctions(PyObject* module) {
  static PyType_Slot slots[] = {{0, nullptr}};
  static PyType_Spec spec = {"torchferry._C.OpHandle", sizeof(OpHandle), 0,
                             Py_TPFLAGS_DEFAULT, slots};
  static PyObject* type = PyType_FromSpec(&spec);  // kept with the process
  if (type == nullptr) return false;
  if (g_functions == nullptr && (g_functions = PyDict_New()) == nullptr) {
    return false;
  }
  // The method defs must outlive the functions: kept with the process.
  static auto* defs = new std::deque<PyMethodDef>();
  static size_t added = 0;  // built-in ops at import, declared ones at _init
  PyObject* module_name = PyUnicode_FromString("torchferry.ops");
  bool ok = module_name != nullptr;
  for (; ok && added < Functions().size(); ++added) {
    const OpFunction& fn = Functions()[added];
    const bool noop = fn.entry->geometry == Geometry::kNoop;
    defs->push_back({fn.schema.name.c_str(),
                     noop ? reinterpret_cast<PyCFunction>(
                                reinterpret_cast<void (*)()>(&CallNoop))
                          : reinterpret_cast<PyCFunction>(
                                reinterpret_cast<void (*)()>(&CallOp)),
                     noop ? METH_FASTCALL : METH_FASTCALL | METH_KEYWORDS,
                     fn.doc.c_str()});
    PyObject* handle =
        PyType_GenericAlloc(reinterpret_cast<PyTypeObject*>(type), 0);
    if (handle == nullptr) {
      ok = false;
      break;
    }
    reinterpret_cast<OpHandle*>(handle)->fn = &fn;
    PyObject* function = PyCFunction_NewEx(&defs->back(), handle, module_name);
    Py_DECREF(handle);  // the function holds it
    ok = function != nullptr &&
         PyDict_SetItemString(g_functions, fn.name.c_str(), function) == 0;
    Py_XDECREF(function);
  }
  Py_XDECREF(module_name);
  // Declared ops keep their "namespace::name" here; torchferry.ops puts
  // them under torchferry.ops.<namespace>. Every call sets all of them, so
  // that a module rebuilt by a re-import has the declared ops again.
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  while (ok && PyDict_Next(g_functions, &pos, &key, &value)) {
    ok = PyObject_SetAttr(module, key, value) == 0;
  }
  return ok;
}

PyObject* FunctionsDict() {
  if (g_functions == nullptr) return PyDict_New();
  return PyDict_Copy(g_functions);
}

PyObject* SchemasList() {
  PyObject* list = PyList_New(0);
  if (list == nullptr) return nullptr;
  for (const OpFunction& fn : Functions()) {
    const OpEntry& e = *fn.entry;
    const std::string doc(e.doc), contract(e.contract);
    // The ABI minor that brought a built-in op ("1.2"); a declared op has
    // none: it is the plugin's.
    const std::string since =
        fmt::format("{}.{}", TF_ABI_VERSION_MAJOR, e.minor);
    PyObject* item = Py_BuildValue(
        "{s:s,s:s,s:s,s:N,s:n,s:s,s:N,s:s,s:s,s:N,s:N,s:O}", "name",
        fn.name.c_str(), "schema", fn.schema.ToString().c_str(), "signature",
        PythonSignature(fn, /*self_marker=*/false).c_str(), "args",
        ArgsList(fn), "returns",
        static_cast<Py_ssize_t>(fn.schema.returns.size()), "doc", doc.c_str(),
        "dtypes", DtypeNames(e.dtypes), "aliasing",
        e.alias == AliasRule::kExact ? "exact" : "none", "contract",
        contract.c_str(), "declared_by",
        fn.declared_by.empty() ? (Py_INCREF(Py_None), Py_None)
                               : PyUnicode_FromString(fn.declared_by.c_str()),
        "since",
        fn.declared_by.empty() ? PyUnicode_FromString(since.c_str())
                               : (Py_INCREF(Py_None), Py_None),
        "accumulates", Accumulates(e.geometry) ? Py_True : Py_False);
    if (!AppendItem(list, item)) return nullptr;
  }
  return list;
}

}  // namespace torchferry
