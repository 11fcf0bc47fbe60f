// torchferry._C: the Python face of the core. Op functions are plain
// vectorcall C functions (METH_FASTCALL | METH_KEYWORDS) so that a call costs
// no tuple, dict or Python frame; everything else here is cold.
#include <Python.h>
#include <fmt/format.h>

#include <chrono>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/bridge/bridge.h"
#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/kernel_cache.h"
#include "core/prepare/out_alloc.h"
#include "core/python/infer_spec.h"
#include "core/python/number_rule.h"
#include "core/python/op_functions.h"
#include "core/python/py_view.h"
#include "core/python/readiness.h"
#include "loader/environment.h"
#include "loader/host_parallel.h"
#include "loader/known_values.h"
#include "loader/loader.h"

namespace torchferry {
namespace {

Registry* g_registry = nullptr;
double g_load_seconds = 0;
// The variables the loader did not read in a privileged process.
std::vector<std::string> g_ignored_environment;

// --- start-up ----------------------------------------------------------------

// One str (or bytes) of an entry point tuple as a file system path: bytes a
// file name holds that are not UTF-8 travel as the OS spells them.
bool PathArg(PyObject* item, std::string* out) {
  PyObject* bytes = nullptr;
  if (!PyUnicode_FSConverter(item, &bytes)) return false;
  out->assign(PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes));
  Py_DECREF(bytes);
  return true;
}

// The entry points torchferry/entry_points.py resolved: ((label, path), ...)
// and the unresolved ones ((path, name, reason), ...). The Python side hands
// only str items without NUL characters, so a failure here is a bug there.
bool EntryPointArgs(PyObject* resolved, PyObject* unresolved,
                    std::vector<EntryPointPath>* paths,
                    std::vector<Skipped>* skipped) {
  PyObject* seq = PySequence_Fast(resolved, "entry points: expected a list");
  if (seq == nullptr) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    const char* label;
    PyObject* path;
    EntryPointPath entry;
    if (!PyArg_ParseTuple(item, "sO", &label, &path) ||
        !PathArg(path, &entry.path)) {
      Py_DECREF(seq);
      return false;
    }
    entry.label = label;
    paths->push_back(std::move(entry));
  }
  Py_DECREF(seq);
  seq = PySequence_Fast(unresolved, "unresolved entry points: expected a list");
  if (seq == nullptr) return false;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    const char *path, *name, *reason;
    if (!PyArg_ParseTuple(item, "sss", &path, &name, &reason)) {
      Py_DECREF(seq);
      return false;
    }
    skipped->push_back({path, name, reason});
  }
  Py_DECREF(seq);
  return true;
}

// Sets every op's function on `module` and on the torchferry._C that
// sys.modules holds. They differ after a re-import: the rebuilt module's
// functions (this one included) are still bound to the first module object.
bool AddOpFunctionsEverywhere(PyObject* module) {
  if (!AddOpFunctions(module)) return false;
  PyObject* name = PyUnicode_FromString("torchferry._C");
  if (name == nullptr) return false;
  PyObject* current = PyImport_GetModule(name);
  Py_DECREF(name);
  if (current == nullptr) return !PyErr_Occurred();
  const bool ok = current == module || AddOpFunctions(current);
  Py_DECREF(current);
  return ok;
}

PyObject* Init(PyObject* module, PyObject* args) {
  PyObject* torch_module;
  const char* torch_version;
  const char* plugin_dir;
  PyObject* resolved = nullptr;
  PyObject* unresolved = nullptr;
  const char* built_dir = nullptr;
  if (!PyArg_ParseTuple(args, "Oss|OOz", &torch_module, &torch_version,
                        &plugin_dir, &resolved, &unresolved, &built_dir)) {
    return nullptr;
  }
  std::vector<EntryPointPath> entry_points;
  std::vector<Skipped> unresolved_entry_points;
  if (resolved != nullptr && unresolved != nullptr &&
      !EntryPointArgs(resolved, unresolved, &entry_points,
                      &unresolved_entry_points)) {
    return nullptr;
  }
  if (Bridge::Get().initialized()) {
    // importlib.reload(torchferry), or a re-import after torchferry's
    // entries left sys.modules: the plugins stay loaded, and a rebuilt
    // module gets the declared ops' functions back.
    if (!AddOpFunctionsEverywhere(module)) return nullptr;
    Py_RETURN_NONE;
  }
  if (!Bridge::Get().Init(torch_module, torch_version) ||
      !InitGradCheck(torch_module) ||
      !InitOutAlloc(torch_module, Bridge::Get().library())) {
    return nullptr;
  }
  SetHostQuery("torch.version", torch_version);
  auto start = std::chrono::steady_clock::now();
  g_registry = new Registry();  // lives until exit, as do the plugins
  LoaderOptions options = LoaderOptions::FromEnvironment(
      plugin_dir, std::move(entry_points), std::move(unresolved_entry_points));
  // The per-user folder of `python -m torchferry build-aten` for this torch,
  // last: the package's own ATen plugin, when it loads under this torch,
  // keeps its place. Its location comes from the environment
  // (TORCHFERRY_CACHE, XDG_CACHE_HOME, HOME), so a privileged process does
  // not search it, as it does not read TORCHFERRY_PLUGIN_PATH.
  if (built_dir != nullptr && *built_dir != '\0' && !SecureExecution()) {
    options.search_path.emplace_back(built_dir);
  }
  // The loader's own (options.ignored_environment) and the bridge's, which
  // Bridge::Init() read through the same table.
  g_ignored_environment = IgnoredEnvironmentVariables(SecureExecution());
  g_registry->Load(options);
  g_load_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!InitDeclaredOps(*g_registry) || !AddOpFunctionsEverywhere(module)) {
    return nullptr;
  }
  KernelCache::Get().Attach(g_registry);
  Py_RETURN_NONE;
}

PyObject* SetLoadingFlag(PyObject*, PyObject* arg) {
  const int loading = PyObject_IsTrue(arg);
  if (loading < 0) return nullptr;
  SetLoading(loading != 0);
  Py_RETURN_NONE;
}

PyObject* OpFunctions(PyObject*, PyObject*) { return FunctionsDict(); }

// One dict for the process, for Python state that must outlive the modules
// holding it (torchferry.library's torch library: torch refuses to define
// its namespace twice, and a re-imported torchferry must find it again).
PyObject* State(PyObject*, PyObject*) {
  static PyObject* state = PyDict_New();  // kept with the process
  Py_XINCREF(state);
  return state;
}

// --- bridge ------------------------------------------------------------------

PyObject* BridgePathNow(PyObject*, PyObject*) {
  if (!EnsureInitialized()) return nullptr;
  return PyUnicode_FromString(BridgePathName(Bridge::Get().path()));
}

PyObject* SetBridgePath(PyObject*, PyObject* arg) {
  if (!EnsureInitialized()) return nullptr;
  if (!PyUnicode_Check(arg)) {
    RaiseError(PyExc_TypeError,
               fmt::format("set_path() expected a str ('auto', 'shim' or "
                           "'offset'), got {}",
                           Py_TYPE(arg)->tp_name));
    return nullptr;
  }
  const char* name = PyUnicode_AsUTF8(arg);
  if (name == nullptr || !Bridge::Get().SetPath(name)) return nullptr;
  Py_RETURN_NONE;
}

PyObject* BridgeCounts(PyObject*, PyObject*) {
  Bridge& b = Bridge::Get();
  return Py_BuildValue(
      "{s:K,s:K,s:K,s:K,s:K,s:K}", "shim", b.count(BridgePath::kShim), "offset",
      b.count(BridgePath::kOffset), "dlpack", b.count(BridgePath::kDlpack),
      "exchange", b.count(BridgePath::kExchange), "shim_handles_created",
      b.shim_created(), "shim_handles_deleted", b.shim_deleted());
}

PyObject* ResetBridgeCounts(PyObject*, PyObject*) {
  Bridge::Get().ResetCounts();
  Py_RETURN_NONE;
}

// parallel_for's backend, thread count now, and regions per backend.
PyObject* ParallelInfo(PyObject*, PyObject*) {
  const ParallelCounts c = GetParallelCounts();
  return Py_BuildValue(
      "{s:s,s:s,s:i,s:{s:K,s:K,s:K}}", "backend",
      ParallelBackendName(CurrentParallelBackend()), "reason",
      ParallelReason().c_str(), "threads", ParallelNumThreads(), "counts",
      "torch", c.parallel[static_cast<int>(ParallelBackend::kTorch)], "host",
      c.parallel[static_cast<int>(ParallelBackend::kHost)], "inline",
      c.inline_calls);
}

PyObject* ResetParallelCountsNow(PyObject*, PyObject*) {
  ResetParallelCounts();
  Py_RETURN_NONE;
}

PyObject* ShimAvailable(PyObject*, PyObject*) {
  if (!EnsureInitialized()) return nullptr;
  return PyBool_FromLong(Bridge::Get().shim_available());
}

PyObject* BridgeInfo(PyObject*, PyObject*) {
  if (!EnsureInitialized()) return nullptr;
  Bridge& b = Bridge::Get();
  const OffsetCalibration& c = b.offset_calibration();
  // Paths and messages through NewText: a libtorch under a folder whose
  // name is not UTF-8 must not fail `info`.
  return Py_BuildValue(
      "{s:s,s:N,s:O,s:{s:O,s:N},s:{s:O,s:n,s:n,s:N},s:N,s:N,s:N,s:N,s:N,s:N,s:"
      "N,s:{s:s,s:N}}",
      "path", BridgePathName(b.path()), "reason", NewText(b.path_reason()),
      "shim_available", b.shim_available() ? Py_True : Py_False, "exchange",
      "available", b.exchange_available() ? Py_True : Py_False, "detail",
      NewText(b.exchange_detail()), "offset_calibration", "ok",
      c.ok ? Py_True : Py_False, "tensor_offset", c.tensor_offset,
      "maybe_owned_flag_offset", c.borrowed_flag_offset, "detail",
      NewText(c.detail), "neg_bit_check", NewText(b.neg_bit_probe().detail),
      "version_counter", NewText(b.versions().detail()), "storage_check",
      NewText(b.storage_probe().detail()), "tensor_meta",
      NewText(b.meta_probe().detail()), "grad_check",
      NewText(GradCheckDetail()), "libtorch",
      NewText(b.library().cpu_library_path), "libtorch_cuda",
      NewText(b.library().cuda_library_path), "out_alloc", "route",
      OutAllocRoute(), "reason", NewText(OutAllocReason()));
}

PyObject* SetOutAlloc(PyObject*, PyObject* arg) {
  if (!EnsureInitialized()) return nullptr;
  const char* name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : nullptr;
  if (name == nullptr) {
    PyErr_Clear();
    RaiseError(PyExc_TypeError,
               fmt::format("set_out_alloc() expected a str ('auto', 'direct' "
                           "or 'torch.empty'), got {}",
                           Py_TYPE(arg)->tp_name));
    return nullptr;
  }
  if (!SetOutAllocRoute(name)) return nullptr;
  Py_RETURN_NONE;
}

// Exactly what a plugin would receive for `obj`.
PyObject* View(PyObject*, PyObject* obj) {
  if (!EnsureInitialized()) return nullptr;
  return NewView(obj);
}

// Tests only: whether the exchange path reads a tensor's TensorImpl (the
// default) or takes the fallbacks it has where it cannot.
PyObject* SetExchangeReadsImpl(PyObject*, PyObject* arg) {
  if (!EnsureInitialized()) return nullptr;
  const int on = PyObject_IsTrue(arg);
  if (on < 0) return nullptr;
  Bridge::Get().set_exchange_reads_impl(on != 0);
  Py_RETURN_NONE;
}

// The bridge alone, timed in C++ with the GIL held: ns per conversion
// (read + release) of `tensor`, on the current path.
PyObject* TimeBridge(PyObject*, PyObject* args) {
  PyObject* tensor;
  long long iterations;
  if (!PyArg_ParseTuple(args, "OL", &tensor, &iterations)) return nullptr;
  if (!EnsureInitialized()) return nullptr;
  Bridge& b = Bridge::Get();
  TensorRef ref;
  int64_t sink = 0;
  auto start = std::chrono::steady_clock::now();
  for (long long i = 0; i < iterations; ++i) {
    if (!b.Read(tensor, "tensor", false, &ref)) return nullptr;
    sink += ref.view.ndim;
    b.Release(&ref);
  }
  double ns = std::chrono::duration<double, std::nano>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (sink < 0) Py_RETURN_NONE;  // keeps the loop from being optimised out
  return PyFloat_FromDouble(ns / static_cast<double>(iterations));
}

// torch's shim pair alone, timed as TimeBridge is: ns per
// torch_tensor_from_pyobject + aoti_torch_delete_tensor_object of `tensor`,
// the floor under the shim path's cost. None where torch lacks the pair.
PyObject* TimeShimPair(PyObject*, PyObject* args) {
  PyObject* tensor;
  long long iterations;
  if (!PyArg_ParseTuple(args, "OL", &tensor, &iterations)) return nullptr;
  if (!EnsureInitialized()) return nullptr;
  const AotiApi& api = Bridge::Get().library().api;
  if (api.tensor_from_pyobject == nullptr ||
      !Bridge::Get().IsTorchTensor(tensor)) {
    Py_RETURN_NONE;
  }
  int64_t sink = 0;
  auto start = std::chrono::steady_clock::now();
  for (long long i = 0; i < iterations; ++i) {
    AtenTensorHandle handle;
    if (api.tensor_from_pyobject(tensor, &handle) != 0) {
      RaiseError(PyExc_RuntimeError, "torch_tensor_from_pyobject failed");
      return nullptr;
    }
    sink += reinterpret_cast<intptr_t>(handle) & 1;
    api.delete_tensor_object(handle);
  }
  double ns = std::chrono::duration<double, std::nano>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (sink < 0) Py_RETURN_NONE;
  return PyFloat_FromDouble(ns / static_cast<double>(iterations));
}

// --- plugins -----------------------------------------------------------------

// Loader text is bytes from the file system, the environment and plugins
// (folder and file names, a plugin's version, its init and option messages,
// TORCHFERRY_PLUGINS), and need not be UTF-8: it crosses into Python through
// NewText (core/bridge/py_errors.h), so b"caf\xe9" reads 'caf\\xe9'.

// dict[key] = value, taking over the reference; false with the exception set
// when value is NULL (it failed) or the dict cannot take it.
bool Put(PyObject* dict, const char* key, PyObject* value) {
  if (value == nullptr) return false;
  const int rc = PyDict_SetItemString(dict, key, value);
  Py_DECREF(value);
  return rc == 0;
}

// list.append(item), taking over the reference; false as for Put.
bool Append(PyObject* list, PyObject* item) {
  if (item == nullptr) return false;
  const int rc = PyList_Append(list, item);
  Py_DECREF(item);
  return rc == 0;
}

// Builds a list with one dict per element, filled by fill(dict, element);
// NULL with the exception set when anything fails.
template <typename Items, typename Fill>
PyObject* DictList(const Items& items, const Fill& fill) {
  PyObject* list = PyList_New(0);
  if (list == nullptr) return nullptr;
  for (const auto& item : items) {
    PyObject* dict = PyDict_New();
    if (dict != nullptr && !fill(dict, item)) Py_CLEAR(dict);
    if (!Append(list, dict)) {  // takes dict over
      Py_DECREF(list);
      return nullptr;
    }
  }
  return list;
}

PyObject* KernelList(const std::vector<KernelInfo>& kernels) {
  PyObject* list = PyList_New(0);
  if (list == nullptr) return nullptr;
  for (const KernelInfo& k : kernels) {
    PyObject* op = NewText(k.op);
    PyObject* device = NewText(DeviceName(k.device_type));
    PyObject* dtype = NewText(DtypeName(k.dtype));
    PyObject* item = op != nullptr && device != nullptr && dtype != nullptr
                         ? PyTuple_Pack(3, op, device, dtype)
                         : nullptr;
    Py_XDECREF(op);
    Py_XDECREF(device);
    Py_XDECREF(dtype);
    if (!Append(list, item)) {
      Py_DECREF(list);
      return nullptr;
    }
  }
  return list;
}

PyObject* TextList(const std::vector<std::string>& items) {
  PyObject* list = PyList_New(0);
  if (list == nullptr) return nullptr;
  for (const std::string& item : items) {
    if (!Append(list, NewText(item))) {
      Py_DECREF(list);
      return nullptr;
    }
  }
  return list;
}

PyObject* Plugins(PyObject*, PyObject*) {
  if (!EnsureInitialized()) return nullptr;
  return DictList(g_registry->plugins(), [](PyObject* d, const auto& p) {
    return Put(d, "name", NewText(p->name)) &&
           Put(d, "version", NewText(p->version)) &&
           Put(d, "path", NewText(p->path)) &&
           Put(d, "kind",
               NewText(p->kind == TF_PLUGIN_NATIVE ? "native" : "fallback")) &&
           Put(d, "abi",
               NewText(fmt::format("{}.{}", p->abi_major, p->abi_minor))) &&
           Put(d, "kernels", KernelList(p->kernels)) &&
           Put(d, "declared_ops", TextList(p->declared_ops)) &&
           Put(d, "skipped_kernels",
               DictList(p->skipped_kernels, [](PyObject* k, const auto& s) {
                 return Put(k, "kernel", NewText(s.kernel)) &&
                        Put(k, "reason", NewText(s.reason));
               }));
  });
}

PyObject* Skipped(PyObject*, PyObject*) {
  if (!EnsureInitialized()) return nullptr;
  return DictList(g_registry->skipped(), [](PyObject* d, const auto& s) {
    return Put(d, "path", NewText(s.path)) && Put(d, "name", NewText(s.name)) &&
           Put(d, "reason", NewText(s.reason));
  });
}

PyObject* Shadowed(PyObject*, PyObject*) {
  if (!EnsureInitialized()) return nullptr;
  return DictList(g_registry->shadowed(), [](PyObject* d, const auto& s) {
    return Put(d, "op", NewText(s.kernel.op)) &&
           Put(d, "device", NewText(DeviceName(s.kernel.device_type))) &&
           Put(d, "dtype", NewText(DtypeName(s.kernel.dtype))) &&
           Put(d, "loser", NewText(s.loser)) &&
           Put(d, "winner", NewText(s.winner));
  });
}

// Which plugin serves (op, device, dtype) now: what a call would pick.
PyObject* KernelFor(PyObject*, PyObject* args) {
  const char *op, *device, *dtype;
  if (!PyArg_ParseTuple(args, "sss", &op, &device, &dtype)) return nullptr;
  if (!EnsureInitialized()) return nullptr;
  tf_device dev;
  if (!DeviceNamed(device, &dev)) return nullptr;
  const OpFunction* fn = FunctionNamed(*g_registry, op);
  if (fn == nullptr) return nullptr;
  const DtypeIndex d = DtypeNamed(dtype);
  if (d == kNoDtype) return nullptr;
  const KernelEntry* k = KernelCache::Get().Find(fn->id, dev, d);
  if (k == nullptr) Py_RETURN_NONE;
  return NewText(k->plugin->name);
}

PyObject* Infer(PyObject*, PyObject* args) {
  if (!EnsureInitialized()) return nullptr;
  return InferSpec(*g_registry, args);
}

PyObject* Number(PyObject*, PyObject* args) {
  if (!EnsureInitialized()) return nullptr;
  return NumberForArg(*g_registry, args);
}

PyObject* SetPluginOption(PyObject*, PyObject* args) {
  const char *plugin, *key, *value;
  if (!PyArg_ParseTuple(args, "sss", &plugin, &key, &value)) return nullptr;
  if (!EnsureInitialized()) return nullptr;
  ErrorSink sink;
  if (g_registry->SetOption(plugin, key, value, &sink) == TF_OK) {
    Py_RETURN_NONE;
  }
  // The plugin's own message (its set_option ran) gets its name in front, as
  // a kernel's does; the registry's messages name the plugin already.
  const Plugin* found = g_registry->FindPlugin(plugin);
  const bool from_plugin = found != nullptr && found->set_option != nullptr;
  PyObject* message =
      NewText(from_plugin ? fmt::format("{}: {}", found->name, sink.message)
                          : sink.message);
  if (message != nullptr) {
    PyErr_SetObject(PyExc_ValueError, message);
    Py_DECREF(message);
  }
  return nullptr;
}

PyObject* Schemas(PyObject*, PyObject*) { return SchemasList(); }

PyObject* LoadSeconds(PyObject*, PyObject*) {
  return PyFloat_FromDouble(g_load_seconds);
}

PyObject* SecureExecutionNow(PyObject*, PyObject*) {
  return PyBool_FromLong(SecureExecution());
}

PyObject* IgnoredEnvironment(PyObject*, PyObject*) {
  PyObject* list = PyList_New(0);
  if (list == nullptr) return nullptr;
  for (const std::string& name : g_ignored_environment) {
    PyObject* item = PyUnicode_FromString(name.c_str());
    if (item == nullptr || PyList_Append(list, item) != 0) {
      Py_XDECREF(item);
      Py_DECREF(list);
      return nullptr;
    }
    Py_DECREF(item);
  }
  return list;
}

// loader/environment.h's table, for `python -m torchferry info` and the
// package, which read what each TORCHFERRY_* variable is from it.
PyObject* EnvironmentTableNow(PyObject*, PyObject*) {
  const std::vector<EnvVarInfo>& table = EnvironmentTable();
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(table.size()));
  if (list == nullptr) return nullptr;
  for (size_t i = 0; i < table.size(); ++i) {
    const EnvVarInfo& entry = table[i];
    PyObject* item = Py_BuildValue(
        "{s:s,s:O,s:s,s:s,s:s}", "name", entry.name, "selects_code",
        entry.selects_code ? Py_True : Py_False, "reader", entry.reader,
        "values", entry.values, "meaning", entry.meaning);
    if (item == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), item);
  }
  return list;
}

// Registry lookup alone (uncached, as at first call): ns per Find.
PyObject* TimeLookup(PyObject*, PyObject* args) {
  long long iterations;
  if (!PyArg_ParseTuple(args, "L", &iterations)) return nullptr;
  if (!EnsureInitialized()) return nullptr;
  const tf_dtype f32 = Dtype(kFloat32).dtype;
  int64_t found = 0;
  auto start = std::chrono::steady_clock::now();
  for (long long i = 0; i < iterations; ++i) {
    found += g_registry->Find("add", TF_DEVICE_CPU, f32) != nullptr;
  }
  double ns = std::chrono::duration<double, std::nano>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  if (found < 0) Py_RETURN_NONE;
  return PyFloat_FromDouble(ns / static_cast<double>(iterations));
}

#define TF_CFUNC(fn) \
  reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(fn))

PyMethodDef g_methods[] = {
    {"_init", TF_CFUNC(Init), METH_VARARGS,
     "_init(torch, torch_version, plugin_dir[, entry_points, unresolved, "
     "built_dir]): "
     "start the bridge and load plugins"},
    {"_set_loading", TF_CFUNC(SetLoadingFlag), METH_O,
     "_set_loading(flag): torchferry's import is (not) loading plugins"},
    {"_functions", TF_CFUNC(OpFunctions), METH_NOARGS,
     "_functions(): {name: function} of every op, declared ones included"},
    {"_state", TF_CFUNC(State), METH_NOARGS,
     "_state(): a dict that lives as long as the process"},
    {"_bridge_path", TF_CFUNC(BridgePathNow), METH_NOARGS, nullptr},
    {"_set_bridge_path", TF_CFUNC(SetBridgePath), METH_O, nullptr},
    {"_bridge_counts", TF_CFUNC(BridgeCounts), METH_NOARGS, nullptr},
    {"_reset_bridge_counts", TF_CFUNC(ResetBridgeCounts), METH_NOARGS, nullptr},
    {"_parallel_info", TF_CFUNC(ParallelInfo), METH_NOARGS, nullptr},
    {"_reset_parallel_counts", TF_CFUNC(ResetParallelCountsNow), METH_NOARGS,
     nullptr},
    {"_shim_available", TF_CFUNC(ShimAvailable), METH_NOARGS, nullptr},
    {"_bridge_info", TF_CFUNC(BridgeInfo), METH_NOARGS, nullptr},
    {"_set_out_alloc", TF_CFUNC(SetOutAlloc), METH_O, nullptr},
    {"_view", TF_CFUNC(View), METH_O, nullptr},
    {"_set_exchange_reads_impl", TF_CFUNC(SetExchangeReadsImpl), METH_O,
     nullptr},
    {"_time_bridge", TF_CFUNC(TimeBridge), METH_VARARGS, nullptr},
    {"_time_shim_pair", TF_CFUNC(TimeShimPair), METH_VARARGS, nullptr},
    {"_time_lookup", TF_CFUNC(TimeLookup), METH_VARARGS, nullptr},
    {"_plugins", TF_CFUNC(Plugins), METH_NOARGS, nullptr},
    {"_skipped", TF_CFUNC(Skipped), METH_NOARGS, nullptr},
    {"_shadowed", TF_CFUNC(Shadowed), METH_NOARGS, nullptr},
    {"_kernel_for", TF_CFUNC(KernelFor), METH_VARARGS, nullptr},
    {"_infer", TF_CFUNC(Infer), METH_VARARGS, nullptr},
    {"_number", TF_CFUNC(Number), METH_VARARGS,
     "_number(op, arg, value, dtype, device): value as the op takes it for "
     "arg beside a tensor of dtype on device, or the eager call's error"},
    {"_set_plugin_option", TF_CFUNC(SetPluginOption), METH_VARARGS, nullptr},
    {"_load_seconds", TF_CFUNC(LoadSeconds), METH_NOARGS, nullptr},
    {"_secure_execution", TF_CFUNC(SecureExecutionNow), METH_NOARGS,
     "_secure_execution(): whether this process is privileged, so that "
     "variables choosing the code it loads are ignored"},
    {"_ignored_environment", TF_CFUNC(IgnoredEnvironment), METH_NOARGS,
     "_ignored_environment(): the variables the loader did not read"},
    {"_environment_table", TF_CFUNC(EnvironmentTableNow), METH_NOARGS,
     "_environment_table(): every TORCHFERRY_* variable: name, selects_code, "
     "reader, values, meaning"},
    {"_schemas", TF_CFUNC(Schemas), METH_NOARGS, nullptr},
    {nullptr, nullptr, 0, nullptr},  // ops are added at module init
};

PyModuleDef g_module = {PyModuleDef_HEAD_INIT,
                        "_C",
                        "torchferry's native core (use torchferry instead)",
                        -1,
                        g_methods,
                        nullptr,
                        nullptr,
                        nullptr,
                        nullptr};

}  // namespace
}  // namespace torchferry

extern "C" __attribute__((visibility("default"))) PyObject* PyInit__C() {
  using namespace torchferry;
  if (!InitOpFunctions()) return nullptr;
  PyObject* module = PyModule_Create(&g_module);
  if (module == nullptr) return nullptr;
  if (!InitViewType(module)) {
    Py_DECREF(module);
    return nullptr;
  }
  if (!AddOpFunctions(module)) {
    Py_DECREF(module);
    return nullptr;
  }
  // The rank limit and the host's ABI version, for Python to read rather
  // than restate.
  const std::string abi =
      fmt::format("{}.{}", TF_ABI_VERSION_MAJOR, TF_ABI_VERSION_MINOR);
  if (PyModule_AddIntConstant(module, "MAX_NDIM", TF_MAX_NDIM) != 0 ||
      PyModule_AddStringConstant(module, "ABI_VERSION", abi.c_str()) != 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
