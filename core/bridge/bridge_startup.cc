// Start-up: finding torch's functions, choosing the path, and calibrating
// the layouts the offset path and the probes read.
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "core/bridge/bridge.h"
#include "core/bridge/impl_words.h"
#include "core/bridge/py_errors.h"
#include "loader/environment.h"
#include "loader/host_parallel.h"
#include "loader/loader.h"

namespace torchferry {
namespace {

constexpr const char* kPathNames[kNumBridgePaths] = {"shim", "offset", "dlpack",
                                                     "exchange"};

// The paths 'auto' tries, the cheapest first: at import (unless
// TORCHFERRY_BRIDGE forces one) and in set_path("auto"). DLPack is never
// chosen: it is a fallback inside a call, not a path of its own.
constexpr BridgePath kAutoOrder[] = {BridgePath::kShim, BridgePath::kOffset,
                                     BridgePath::kExchange};

}  // namespace

const char* BridgePathName(BridgePath path) {
  return kPathNames[static_cast<int>(path)];
}

Bridge& Bridge::Get() {
  static Bridge* bridge = new Bridge();  // never destroyed: used until exit
  return *bridge;
}

void Bridge::ResetCounts() {
  for (auto& c : counts_) c.store(0);
  shim_deleted_.store(0);
}

bool Bridge::Init(PyObject* torch_module, const char* torch_version) {
  if (initialized_) return true;
  torch_version_ = torch_version;
  int major = 0, minor = 0;
  if (std::sscanf(torch_version, "%d.%d", &major, &minor) != 2) {
    return RaiseError(PyExc_ImportError,
                      fmt::format("torchferry could not parse the torch "
                                  "version '{}'; expected 'X.Y.Z'",
                                  torch_version));
  }
  // Symbols first: what a torch lacks says more than its version does.
  std::string error;
  if (!ResolveTorchLibrary(&lib_, &error) ||
      !VerifyTorchDtypeCodes(lib_.cpu_handle, &error)) {
    return RaiseError(PyExc_ImportError,
                      fmt::format("torchferry cannot use torch {}: {}",
                                  torch_version, error));
  }
  if (major < 2 || (major == 2 && minor < 3)) {
    return RaiseError(
        PyExc_ImportError,
        fmt::format("torchferry needs torch >= 2.3, found torch {}; upgrade "
                    "torch (pip install 'torch>=2.3')",
                    torch_version));
  }
  Py_INCREF(torch_module);
  torch_module_ = torch_module;
  torch_cpu_ = lib_.api.device_type_cpu();
  torch_cuda_ = lib_.api.device_type_cuda();
  // Without aoti_torch_device_type_meta (torch < 2.7) the meta device's code
  // is read from a meta tensor once calibration has found the handles.
  torch_meta_ = lib_.api.device_type_meta ? lib_.api.device_type_meta() : -1;
  // Compared with get_layout's answer, which needs both (torch >= 2.9).
  has_layout_ =
      lib_.api.get_layout != nullptr && lib_.api.layout_strided != nullptr;
  strided_ = has_layout_ ? lib_.api.layout_strided() : 0;

  PyObject* tensor = PyObject_GetAttrString(torch_module, "Tensor");
  PyObject* nn = tensor ? PyObject_GetAttrString(torch_module, "nn") : nullptr;
  PyObject* parameter = nn ? PyObject_GetAttrString(nn, "Parameter") : nullptr;
  Py_XDECREF(nn);
  if (parameter == nullptr || !PyType_Check(tensor) ||
      !PyType_Check(parameter)) {
    Py_XDECREF(tensor);
    Py_XDECREF(parameter);
    return RaiseError(PyExc_ImportError,
                      "torch.Tensor or torch.nn.Parameter is missing or not "
                      "a type; is this a real torch?");
  }
  tensor_type_ = reinterpret_cast<PyTypeObject*>(tensor);  // kept for life
  parameter_type_ = reinterpret_cast<PyTypeObject*>(parameter);
  plain_torch_dispatch_ = _PyType_Lookup(
      tensor_type_, PyUnicode_InternFromString("__torch_dispatch__"));
  if (plain_torch_dispatch_ == nullptr) {
    return RaiseError(PyExc_ImportError,
                      "torch.Tensor has no __torch_dispatch__; is this a "
                      "real torch?");
  }
  Py_INCREF(plain_torch_dispatch_);  // kept for life
  {
    PyObject* nn_parameter = PyImport_ImportModule("torch.nn.parameter");
    PyObject* mixin =
        nn_parameter
            ? PyObject_GetAttrString(nn_parameter, "UninitializedTensorMixin")
            : nullptr;
    Py_XDECREF(nn_parameter);
    if (mixin != nullptr && PyType_Check(mixin)) {
      uninitialized_type_ = reinterpret_cast<PyTypeObject*>(mixin);
    } else {
      Py_XDECREF(mixin);
    }
    PyErr_Clear();  // older torches without lazy modules: nothing to refuse
  }
  // Tensor.is_neg is a METH_NOARGS C function; calling its pointer directly
  // costs a few ns where an attribute lookup and call would cost a hundred.
  PyObject* is_neg =
      _PyType_Lookup(tensor_type_, PyUnicode_InternFromString("is_neg"));
  if (is_neg == nullptr || !PyObject_TypeCheck(is_neg, &PyMethodDescr_Type) ||
      reinterpret_cast<PyMethodDescrObject*>(is_neg)->d_method->ml_flags !=
          METH_NOARGS) {
    return RaiseError(PyExc_ImportError,
                      "torch.Tensor.is_neg is not a plain C method in this "
                      "torch; torchferry cannot check the negative bit");
  }
  is_neg_ = reinterpret_cast<PyMethodDescrObject*>(is_neg)->d_method->ml_meth;
  FindTorchFunctionHoldOff();
  FindExchangeApi();

  Calibrate(torch_module, major, minor);
  if (torch_meta_ < 0) FindMetaDevice(torch_module);
  ProbeNegBit(torch_module);
  // The key set the negative-bit probe found is a TensorImpl field: the
  // bytes up to it lie inside every TensorImpl, and the other probes read
  // no further (past the object's end lies the next heap block).
  const Py_ssize_t impl_bytes =
      neg_probe_.ok ? neg_probe_.keyset_offset + 8 : 0;
  // Checked before any probe runs: an A/B run that misspells the setting
  // must not measure the default while believing it measured the getters.
  const char* meta = ReadEnvironment(EnvVar::kTensorMeta);
  if (meta != nullptr && meta[0] != '\0' && std::strcmp(meta, "auto") != 0 &&
      std::strcmp(meta, "getters") != 0) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("unknown TORCHFERRY_TENSOR_META '{}'; expected 'auto' (or "
                    "unset) or 'getters': set it to one of those or unset it",
                    meta));
  }
  versions_.Calibrate(torch_module, impl_bytes);
  storage_.Calibrate(torch_module, &lib_.api, impl_bytes);
  meta_.Calibrate(torch_module, &lib_.api, impl_bytes, neg_probe_.keyset_offset,
                  neg_probe_.negative_mask);

  const char* forced = ReadEnvironment(EnvVar::kBridge);
  if (forced != nullptr && forced[0] != '\0' &&
      std::strcmp(forced, "auto") != 0) {
    // A user meets this at import, far from where the variable was set:
    // the error names it, and how to undo it.
    if (!SetPath(forced)) {
      std::string why = FetchErrorText();
      why.erase(0, why.find(": ") + 2);  // "ValueError: "
      return RaiseError(
          PyExc_ValueError,
          fmt::format("TORCHFERRY_BRIDGE='{}' cannot be honoured ({}); set "
                      "TORCHFERRY_BRIDGE to a path this torch offers, or "
                      "unset it (or set it to 'auto') to let torchferry "
                      "choose",
                      forced, why));
    }
    path_reason_ = fmt::format("forced by TORCHFERRY_BRIDGE={}", forced);
  } else if (!FirstAutoPath(&path_, &path_reason_)) {
    return RaiseError(
        PyExc_ImportError,
        fmt::format("torchferry has no bridge path under torch {}: "
                    "torch_tensor_from_pyobject is absent (torch < 2.14), "
                    "offset calibration failed ({}) and there is no DLPack "
                    "exchange API to fall back on ({})",
                    torch_version, calibration_.detail, exchange_detail_));
  }
  // parallel_for's backend (loader/host_parallel.h), torch's where it
  // exports its pool's C functions; dlsym by name, as each may be absent.
  TorchParallel parallel;
  void* cpu = lib_.cpu_handle;
  parallel.parallel_for = reinterpret_cast<decltype(parallel.parallel_for)>(
      dlsym(cpu, "torch_parallel_for"));
  parallel.get_num_threads =
      reinterpret_cast<decltype(parallel.get_num_threads)>(
          dlsym(cpu, "torch_get_num_threads"));
  parallel.get_thread_idx = reinterpret_cast<decltype(parallel.get_thread_idx)>(
      dlsym(cpu, "torch_get_thread_idx"));
  parallel.thread_count = reinterpret_cast<int (*)()>(
      dlsym(cpu, "_ZN2at15get_num_threadsEv"));  // at::get_num_threads()
  const char* parallel_choice = ReadEnvironment(EnvVar::kParallel);
  if (!InstallParallel(parallel, parallel_choice, &error)) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("TORCHFERRY_PARALLEL='{}' cannot be honoured ({}); set "
                    "it to 'auto', 'torch', 'host' or 'serial', or unset it",
                    parallel_choice, error));
  }
  initialized_ = true;
  return true;
}

bool Bridge::SetPath(const char* name) {
  if (std::strcmp(name, "shim") == 0) {
    if (!shim_available()) {
      return RaiseError(
          PyExc_RuntimeError,
          fmt::format("bridge path 'shim' is unavailable under torch {}: "
                      "libtorch does not export torch_tensor_from_pyobject "
                      "(added in torch 2.14)",
                      torch_version_));
    }
    path_ = BridgePath::kShim;
    return true;
  }
  if (std::strcmp(name, "offset") == 0) {
    if (!calibration_.ok) {
      return RaiseError(
          PyExc_RuntimeError,
          fmt::format("bridge path 'offset' is unavailable under torch {}: "
                      "calibration failed: {}",
                      torch_version_, calibration_.detail));
    }
    path_ = BridgePath::kOffset;
    return true;
  }
  if (std::strcmp(name, "exchange") == 0) {
    if (!exchange_available()) {
      return RaiseError(
          PyExc_RuntimeError,
          fmt::format("bridge path 'exchange' is unavailable under torch {}: "
                      "{}",
                      torch_version_, exchange_detail_));
    }
    path_ = BridgePath::kExchange;
    return true;
  }
  if (std::strcmp(name, "auto") == 0) {
    std::string reason;
    return FirstAutoPath(&path_, &reason) ||
           RaiseError(PyExc_RuntimeError, "no bridge path is available");
  }
  return RaiseError(PyExc_ValueError,
                    fmt::format("unknown bridge path '{}'; expected 'auto', "
                                "'shim', 'offset' or 'exchange'",
                                name));
}

bool Bridge::FirstAutoPath(BridgePath* path, std::string* reason) const {
  for (BridgePath candidate : kAutoOrder) {
    switch (candidate) {
      case BridgePath::kShim:
        if (!shim_available() || lib_.api.delete_tensor_object == nullptr) {
          continue;
        }
        *reason =
            "torch_tensor_from_pyobject and aoti_torch_delete_tensor_object "
            "resolve in libtorch";
        break;
      case BridgePath::kOffset:
        if (!calibration_.ok) continue;
        *reason = fmt::format(
            "torch_tensor_from_pyobject is absent from libtorch; the "
            "at::Tensor offset was calibrated: {}",
            calibration_.detail);
        break;
      case BridgePath::kExchange:
        if (!exchange_available()) continue;
        *reason = fmt::format(
            "torch_tensor_from_pyobject is absent from libtorch and offset "
            "calibration failed ({}); torch.Tensor offers the {}",
            calibration_.detail, exchange_detail_);
        break;
      case BridgePath::kDlpack:
        continue;
    }
    *path = candidate;
    return true;
  }
  return false;
}

// The offset path must never read a guessed address: take a tensor whose
// TensorImpl* we know (tensor._cdata), look for it at the offset this torch's
// layout predicts, and confirm through the AOTI getters that the handle there
// describes that tensor. Anything else refuses the path.
void Bridge::Calibrate(PyObject* torch_module, int major, int minor) {
  OffsetCalibration& c = calibration_;
  const Py_ssize_t head = static_cast<Py_ssize_t>(sizeof(PyObject));
  if (major > 2 || (major == 2 && minor >= 10)) {
    c.tensor_offset = head;  // at::Tensor cdata right after PyObject_HEAD
  } else {
    c.borrowed_flag_offset = head;  // c10::MaybeOwned: bool, then the tensor
    c.tensor_offset = head + static_cast<Py_ssize_t>(sizeof(void*));
  }
  PyObject* tensor =
      PyObject_CallMethod(torch_module, "empty", "(iii)", 2, 3, 5);
  PyObject* base =
      tensor ? PyObject_CallMethod(torch_module, "arange", "(d)", 10.0)
             : nullptr;
  PyObject* three = PyLong_FromLong(3);
  PyObject* slice = PySlice_New(three, nullptr, nullptr);
  Py_XDECREF(three);
  PyObject* view = base && slice ? PyObject_GetItem(base, slice) : nullptr;
  Py_XDECREF(slice);
  auto finish = [&](bool ok, std::string detail) {
    c.ok = ok;
    c.detail = std::move(detail);
    Py_XDECREF(tensor);
    Py_XDECREF(base);
    Py_XDECREF(view);
    PyErr_Clear();
  };
  if (view == nullptr) {
    return finish(false, "could not create the calibration tensors");
  }
  for (PyObject* t : {tensor, view}) {
    const void* impl = TensorImplOf(t);
    void* word = *reinterpret_cast<void**>(HandleAt(t));
    if (impl == nullptr || word != impl) {
      return finish(false,
                    fmt::format("the TensorImpl* ({}) was not found at byte {} "
                                "of the Python object (found {}); this torch's "
                                "THPVariable layout is not the one expected "
                                "for torch {}.{}",
                                impl, c.tensor_offset, word, major, minor));
    }
  }
  const AotiApi& a = lib_.api;
  AtenTensorHandle h = HandleAt(tensor);
  int64_t dim = 0;
  int64_t* sizes = nullptr;
  int32_t dtype = -1;
  if (a.get_dim(h, &dim) != 0 || dim != 3 || a.get_sizes(h, &sizes) != 0 ||
      sizes[0] != 2 || sizes[1] != 3 || sizes[2] != 5 ||
      a.get_dtype(h, &dtype) != 0 || dtype != Dtype(kFloat32).torch_code) {
    return finish(false,
                  "the handle at the calibrated offset does not describe the "
                  "calibration tensor (expected float32 [2, 3, 5])");
  }
  void* data = nullptr;
  PyObject* expected = PyObject_CallMethod(view, "data_ptr", nullptr);
  void* expected_ptr = expected ? PyLong_AsVoidPtr(expected) : nullptr;
  Py_XDECREF(expected);
  if (a.get_data_ptr(HandleAt(view), &data) != 0 || data != expected_ptr) {
    return finish(
        false,
        "the data pointer read through the calibrated offset does "
        "not match tensor.data_ptr() of a view with a storage offset");
  }
  finish(true,
         c.borrowed_flag_offset >= 0
             ? fmt::format("the torch 2.3 - 2.9 layout: at::Tensor at byte {} "
                           "of the Python object, inside a "
                           "c10::MaybeOwned<at::Tensor> whose borrowed flag "
                           "at byte {} is checked per tensor",
                           c.tensor_offset, c.borrowed_flag_offset)
             : fmt::format("the torch >= 2.10 layout: at::Tensor at byte {} "
                           "of the Python object, right after its header",
                           c.tensor_offset));
}

// The meta device's code, from a meta tensor read at the calibrated offset:
// torch < 2.7 exports no aoti_torch_device_type_meta. Where this fails the
// code stays -1 and a meta tensor is refused as a device torchferry does not
// carry, which is still a refusal.
void Bridge::FindMetaDevice(PyObject* torch_module) {
  if (!calibration_.ok) return;
  PyObject* meta = PyObject_CallMethod(torch_module, "empty", "(i)", 1);
  PyObject* on_meta =
      meta ? PyObject_CallMethod(meta, "to", "(s)", "meta") : nullptr;
  int32_t code = -1;
  if (on_meta != nullptr &&
      lib_.api.get_device_type(HandleAt(on_meta), &code) == 0 &&
      code != torch_cpu_ && code != torch_cuda_) {
    torch_meta_ = code;
  }
  Py_XDECREF(on_meta);
  Py_XDECREF(meta);
  PyErr_Clear();
}

void Bridge::ProbeNegBit(PyObject* torch_module) {
  NegBitProbe& p = neg_probe_;
  // Two plain tensors of different dtypes and shapes, and the negated view
  // of each: the key set is the word that is equal in both plain tensors and
  // differs from their negated views in the same single bit.
  PyObject* plain = PyObject_CallMethod(torch_module, "empty", "(i)", 4);
  PyObject* negated =
      plain ? PyObject_CallMethod(torch_module, "_neg_view", "(O)", plain)
            : nullptr;
  PyObject* other =
      negated ? PyObject_CallMethod(torch_module, "zeros", "(ii)", 3, 5)
              : nullptr;
  PyObject* other_negated =
      other ? PyObject_CallMethod(torch_module, "_neg_view", "(O)", other)
            : nullptr;
  // An inference tensor's key set is a plain one's less the autograd keys:
  // without raw_repr, it tells the key set from a bit field of TensorImpl
  // that a negated view also changes by one bit (torch 2.14's does).
  PyObject* inference = nullptr;
  if (other_negated != nullptr) {
    PyObject* mode =
        PyObject_CallMethod(torch_module, "inference_mode", nullptr);
    PyObject* entered =
        mode ? PyObject_CallMethod(mode, "__enter__", nullptr) : nullptr;
    inference = entered ? PyObject_CallMethod(torch_module, "empty", "(i)", 4)
                        : nullptr;
    PyObject* exited = entered ? PyObject_CallMethod(mode, "__exit__", "(OOO)",
                                                     Py_None, Py_None, Py_None)
                               : nullptr;
    Py_XDECREF(exited);
    Py_XDECREF(entered);
    Py_XDECREF(mode);
  }
  PyObject* c = PyObject_GetAttrString(torch_module, "_C");
  PyObject* keys_of = c ? PyObject_GetAttrString(c, "_dispatch_keys") : nullptr;
  Py_XDECREF(c);
  // torch._C._dispatch_keys(t).raw_repr() (torch >= 2.4) names the word's
  // value, which confirms the find; torch 2.3 has no raw_repr.
  auto raw_keys = [&](PyObject* t, uint64_t* raw) {
    PyObject* keys = PyObject_CallFunctionObjArgs(keys_of, t, nullptr);
    PyObject* value =
        keys ? PyObject_CallMethod(keys, "raw_repr", nullptr) : nullptr;
    *raw = value ? PyLong_AsUnsignedLongLong(value) : 0;
    Py_XDECREF(value);
    Py_XDECREF(keys);
    const bool ok = value != nullptr && !PyErr_Occurred();
    PyErr_Clear();
    return ok;
  };
  const char* impls[5] = {};
  if (inference != nullptr) {
    impls[0] = TensorImplOf(plain);
    impls[1] = TensorImplOf(negated);
    impls[2] = TensorImplOf(other);
    impls[3] = TensorImplOf(other_negated);
    impls[4] = TensorImplOf(inference);
  }
  uint64_t raw_plain = 0, raw_negated = 0;
  const bool have_raw = keys_of != nullptr && impls[0] != nullptr &&
                        raw_keys(plain, &raw_plain) &&
                        raw_keys(negated, &raw_negated);
  if (impls[0] == nullptr || impls[1] == nullptr || impls[2] == nullptr ||
      impls[3] == nullptr || impls[4] == nullptr) {
    p.detail = "could not create the probe tensors";
  } else {
    // Scan the TensorImpl word by word, stopping at the first match: the key
    // set lies well inside the object in every torch 2.x (byte 168 - 176),
    // and the scan never goes past kMaxScan.
    constexpr Py_ssize_t kMaxScan = 256;
    auto word = [](const char* impl, Py_ssize_t off) {
      uint64_t w;
      std::memcpy(&w, impl + off, sizeof(w));
      return w;
    };
    for (Py_ssize_t off = sizeof(void*); off < kMaxScan; off += 8) {
      const uint64_t w = word(impls[0], off), n = word(impls[1], off);
      const uint64_t inf = word(impls[4], off);
      if (have_raw ? (w != raw_plain || n != raw_negated)
                   : (w != word(impls[2], off) || n != word(impls[3], off) ||
                      __builtin_popcountll(w ^ n) != 1 || (w & n) != w ||
                      inf == w || (inf & ~w) != 0)) {
        continue;
      }
      p.negative_mask = n & ~w;
      p.ok = __builtin_popcountll(p.negative_mask) == 1;
      p.keyset_offset = off;
      break;
    }
    p.detail = p.ok ? fmt::format(
                          "DispatchKeySet at byte {} of TensorImpl, "
                          "negative bit {:#x}{}",
                          p.keyset_offset, p.negative_mask,
                          have_raw ? ""
                                   : " (found by comparing tensors with "
                                     "their negated views: this torch's "
                                     "DispatchKeySet has no raw_repr)")
                    : "the DispatchKeySet was not found in the TensorImpl";
  }
  if (!p.ok) p.detail += "; checking Tensor.is_neg per tensor instead";
  Py_XDECREF(keys_of);
  Py_XDECREF(inference);
  Py_XDECREF(other_negated);
  Py_XDECREF(other);
  Py_XDECREF(negated);
  Py_XDECREF(plain);
  PyErr_Clear();
}

bool Bridge::RaiseIfNotDense(PyObject* obj, const char* what,
                             bool check_layout) {
  PyObject* nested = TorchAttr(obj, "is_nested");
  const bool is_nested = nested == Py_True;
  Py_XDECREF(nested);
  PyErr_Clear();
  if (is_nested) {
    RaiseError(PyExc_TypeError,
               fmt::format("{}: nested tensors (NestedTensorImpl) have no "
                           "single shape or strides; pass a dense tensor, "
                           "e.g. t.to_padded_tensor(0)",
                           what));
    return true;
  }
  if (check_layout && !IsStrided(obj)) {
    RaiseNotStrided(obj, what);
    return true;
  }
  return false;
}

bool Bridge::RaiseTorchFailure(const char* getter, PyObject* obj,
                               const char* what) {
  // Nested tensors have no single shape; say so on every torch, including
  // those whose shim cannot report torch's own message (< 2.13). Without
  // aoti_torch_get_layout (torch < 2.9) a sparse, compressed or mkldnn
  // tensor is first told by a getter failing (its strides or its data
  // pointer): say what is wrong with it, not which getter failed.
  if (RaiseIfNotDense(obj, what, /*check_layout=*/!has_layout_)) return false;
  const char* what_failed =
      lib_.api.exception_get_what ? lib_.api.exception_get_what() : nullptr;
  std::string why = what_failed ? what_failed : "no message (torch < 2.13)";
  // Keep torch's message, not where inside torch it was raised.
  why = why.substr(0, why.find("\nException raised from"));
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}: torch could not read the {} of this {}: "
                                "{}",
                                what, getter, Py_TYPE(obj)->tp_name, why));
}

}  // namespace torchferry
