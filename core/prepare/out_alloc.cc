#include "core/prepare/out_alloc.h"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <string>

#include "core/bridge/py_errors.h"

namespace torchferry {
namespace {

PyObject* g_empty = nullptr;                 // torch.empty
PyObject* g_dtype_objects[kNumDtypes] = {};  // torch.float32, ...
PyObject* g_cpu = nullptr;                   // torch.device("cpu")
PyObject* g_device_type = nullptr;           // torch.device
PyObject* g_kwnames = nullptr;               // ("dtype", "device")

const TorchLibrary* g_lib = nullptr;
bool g_direct_available = false;
std::atomic<bool> g_direct{false};  // read on every allocation, set by A/B runs
std::string g_reason;

PyObject* Wrap(AtenTensorHandle handle) {
  if (g_lib->api.tensor_to_pyobject != nullptr) {
    void* out = nullptr;
    if (g_lib->api.tensor_to_pyobject(handle, nullptr, &out) == 0) {
      return static_cast<PyObject*>(out);
    }
    if (!PyErr_Occurred()) {
      const char* what = g_lib->api.exception_get_what != nullptr
                             ? g_lib->api.exception_get_what()
                             : nullptr;
      RaiseError(PyExc_RuntimeError,
                 fmt::format("torch_tensor_to_pyobject failed: {}",
                             what ? what : "no message"));
    }
    return nullptr;
  }
  // A C++ function of libtorch_python: whatever it throws must not cross
  // into Python.
  try {
    return static_cast<PyObject*>(g_lib->variable_wrap(handle));
  } catch (const std::exception& e) {
    RaiseError(PyExc_RuntimeError,
               fmt::format("THPVariable_Wrap failed: {}", e.what()));
  } catch (...) {
    RaiseError(PyExc_RuntimeError, "THPVariable_Wrap failed");
  }
  return nullptr;
}

// nullptr without a Python error where the direct route does not apply or
// failed, so that torch.empty runs (and raises torch's own error).
PyObject* AllocateDirect(DtypeIndex dtype, int ndim, const int64_t* shape) {
  // Every out the host allocates has passed the rank limit; a deeper one
  // would go to torch.empty.
  int64_t strides[TF_MAX_NDIM];
  if (ndim > TF_MAX_NDIM) return nullptr;
  int64_t stride = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    strides[d] = stride;
    // Strides past int64: torch.empty raises its own error.
    if (__builtin_mul_overflow(stride, shape[d] > 1 ? shape[d] : 1, &stride)) {
      return nullptr;
    }
  }
  AtenTensorHandle handle = nullptr;
  if (g_lib->api.empty_strided(ndim, shape, strides, Dtype(dtype).torch_code,
                               Bridge::Get().torch_cpu_device(), 0,
                               &handle) != 0) {
    return nullptr;
  }
  PyObject* out = Wrap(handle);
  g_lib->api.delete_tensor_object(handle);  // `out` holds its own reference
  return out;
}

PyObject* AllocateByTorchEmpty(const TensorRef& like, DtypeIndex dtype,
                               int ndim, const int64_t* shape) {
  PyObject* size = PyTuple_New(ndim);
  if (size == nullptr) return nullptr;
  for (int d = 0; d < ndim; ++d) {
    PyTuple_SET_ITEM(size, d, PyLong_FromLongLong(shape[d]));
  }
  // torch.empty(size, dtype=..., device=...) by vectorcall: no kwargs dict,
  // and a CPU tensor's device is the cached torch.device("cpu") (the default
  // device may be another, so it is always passed). The device is the one
  // the bridge read from torch, never `like`'s attribute, which a subclass's
  // __torch_function__ would answer.
  PyObject* device =
      like.view.device.device_type == TF_DEVICE_CPU
          ? (Py_INCREF(g_cpu), g_cpu)
          : PyObject_CallFunction(g_device_type, "si", "cuda",
                                  static_cast<int>(like.view.device.device_id));
  PyObject* out = nullptr;
  if (device != nullptr) {
    PyObject* args[] = {nullptr, size, g_dtype_objects[dtype], device};
    out = PyObject_Vectorcall(g_empty, args + 1,
                              1 | PY_VECTORCALL_ARGUMENTS_OFFSET, g_kwnames);
  }
  Py_XDECREF(device);
  Py_DECREF(size);
  return out;
}

}  // namespace

bool InitOutAlloc(PyObject* torch_module, const TorchLibrary& lib) {
  g_lib = &lib;
  g_empty = PyObject_GetAttrString(torch_module, "empty");
  if (g_empty == nullptr) return false;
  g_device_type = PyObject_GetAttrString(torch_module, "device");
  g_cpu = g_device_type ? PyObject_CallFunction(g_device_type, "s", "cpu")
                        : nullptr;
  g_kwnames = g_cpu ? Py_BuildValue("(ss)", "dtype", "device") : nullptr;
  if (g_kwnames == nullptr) return false;
  for (int i = 0; i < kNumDtypes; ++i) {
    g_dtype_objects[i] = PyObject_GetAttrString(
        torch_module, Dtype(static_cast<DtypeIndex>(i)).name);
    if (g_dtype_objects[i] == nullptr) return false;
  }
  const bool wrap =
      lib.api.tensor_to_pyobject != nullptr || lib.variable_wrap != nullptr;
  g_direct_available = lib.api.empty_strided != nullptr && wrap;
  g_direct.store(g_direct_available);
  g_reason =
      !g_direct_available
          ? fmt::format("libtorch lacks {}: CPU outputs come from torch.empty",
                        lib.api.empty_strided == nullptr
                            ? "aoti_torch_empty_strided"
                            : "torch_tensor_to_pyobject and THPVariable_Wrap")
      : lib.api.tensor_to_pyobject != nullptr
          ? "CPU outputs: aoti_torch_empty_strided + torch_tensor_to_pyobject"
          : "CPU outputs: aoti_torch_empty_strided + THPVariable_Wrap "
            "(libtorch_python)";
  return true;
}

PyObject* AllocateOut(const char* op, const TensorRef& like, DtypeIndex dtype,
                      int ndim, const int64_t* shape) {
  if (!like.is_torch()) {
    RaiseError(PyExc_TypeError,
               fmt::format("{}() missing argument 'out': it can be allocated "
                           "only when input is a torch.Tensor",
                           op));
    return nullptr;
  }
  if (g_direct.load(std::memory_order_relaxed) &&
      like.view.device.device_type == TF_DEVICE_CPU) {
    PyObject* out = AllocateDirect(dtype, ndim, shape);
    if (out != nullptr || PyErr_Occurred()) return out;
  }
  return AllocateByTorchEmpty(like, dtype, ndim, shape);
}

const char* OutAllocRoute() {
  return g_direct.load() ? "direct" : "torch.empty";
}

const char* OutAllocReason() { return g_reason.c_str(); }

bool SetOutAllocRoute(const char* name) {
  if (std::strcmp(name, "torch.empty") == 0) {
    g_direct.store(false);
    return true;
  }
  if (std::strcmp(name, "auto") == 0 || std::strcmp(name, "direct") == 0) {
    if (std::strcmp(name, "direct") == 0 && !g_direct_available) {
      return RaiseError(PyExc_RuntimeError,
                        fmt::format("output allocation 'direct' is "
                                    "unavailable: {}",
                                    g_reason));
    }
    g_direct.store(g_direct_available);
    return true;
  }
  return RaiseError(PyExc_ValueError,
                    fmt::format("unknown output allocation '{}'; expected "
                                "'auto', 'direct' or 'torch.empty'",
                                name));
}

}  // namespace torchferry
