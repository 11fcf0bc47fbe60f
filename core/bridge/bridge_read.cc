// The per-call read (Bridge::Read): a torch tensor's view, and the checks that
// keep a kernel inside its memory (storage fit, negative bit, wrapper
// subclasses); DLPack producers go on to dlpack_import.cc. Also the version
// counter's per-call check and bump (VersionCounter, calibrated in
// version_counter.cc).
#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join, which fmt 11 moved here

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/bridge/bridge.h"
#include "core/bridge/bridge_internal.h"
#include "core/bridge/impl_words.h"
#include "core/bridge/py_errors.h"
#include "core/bridge/version_counter.h"

namespace torchferry {

using bridge_internal::Bump;
using bridge_internal::ContiguityFlag;
using bridge_internal::Numel;
using bridge_internal::RaiseDtypeNotCarried;
using bridge_internal::RaiseMetaTensor;
using bridge_internal::RaiseNoMemory;

// The entry: what kind of object `obj` is decides how it is read.
bool Bridge::Read(PyObject* obj, const char* what, bool writable,
                  TensorRef* ref) {
  ref->object = obj;
  ref->owned_handle = nullptr;
  ref->dlpack_managed = nullptr;
  ref->dlpack_strides = nullptr;
  ref->exchanged_impl = nullptr;
  PyTypeObject* type = Py_TYPE(obj);
  if (type == tensor_type_ || type == parameter_type_) {
    return ReadTorchTensor(obj, what, ref) &&
           (!writable || CheckWritable(obj, what, ref));
  }
  if (PyType_IsSubtype(type, tensor_type_)) {
    return CheckSubclass(type, what) && ReadTorchTensor(obj, what, ref) &&
           (!writable || CheckWritable(obj, what, ref));
  }
  if (PyObject_HasAttrString(obj, "__dlpack__")) {
    return ReadDlpack(obj, what, writable, ref);
  }
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}: expected a torch.Tensor (or an object "
                                "with __dlpack__), got {}",
                                what, Py_TYPE(obj)->tp_name));
}

// Wrapper subclasses (FakeTensor, DTensor, functional tensors) override
// __torch_dispatch__ and may have no storage: reading their data pointer would
// fail inside torch or, worse, hand out an unrelated buffer.
bool Bridge::CheckSubclass(PyTypeObject* type, const char* what) {
  if (uninitialized_type_ != nullptr &&
      PyType_IsSubtype(type, uninitialized_type_)) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}: this {} is an uninitialized parameter or buffer of a "
                    "lazy module and holds no data yet; run the module's "
                    "forward once (or initialize it) before passing it",
                    what, type->tp_name));
  }
  // Looked up on the type without running Python (a metaclass's
  // __getattr__ could), so that reading a tensor never runs Python code.
  static PyObject* name = PyUnicode_InternFromString("__torch_dispatch__");
  if (_PyType_Lookup(type, name) == plain_torch_dispatch_) return true;
  return RaiseError(
      PyExc_TypeError,
      fmt::format("{}: {} overrides __torch_dispatch__ (a wrapper subclass "
                  "such as FakeTensor or DTensor) and has no storage "
                  "torchferry can read; pass a plain torch.Tensor",
                  what, type->tp_name));
}

// ReadTorchTensor, FillFromHandle and CheckFitsStorage are the per-tensor
// read of every torch tensor: kept inline in Read, where each call level
// would be paid for every tensor.
[[gnu::always_inline]] inline bool Bridge::ReadTorchTensor(PyObject* obj,
                                                           const char* what,
                                                           TensorRef* ref) {
  ref->exchanged = false;
  if (path_ == BridgePath::kExchange) return ReadExchanged(obj, what, ref);
  AtenTensorHandle handle;
  if (path_ == BridgePath::kShim) {
    if (lib_.api.tensor_from_pyobject(obj, &handle) != 0) {
      return RaiseTorchFailure("torch_tensor_from_pyobject", obj, what);
    }
    ref->owned_handle = handle;
  } else {
    handle = HandleAt(obj);
  }
  Bump(counts_[static_cast<int>(path_)]);
  bool plain = false;  // read from the TensorImpl: no negative bit
  if (!FillFromHandle(handle, obj, what, ref, &plain) ||
      (!plain && !CheckNotNegated(TensorImplOfHandle(handle), obj, what))) {
    Release(ref);
    return false;
  }
  ref->view.source = handle;
  ref->view.source_kind = TF_SOURCE_ATEN;
  return true;
}

bool Bridge::CheckWritable(PyObject* obj, const char* what, TensorRef* ref) {
  if (versions_.CheckWritable(what, obj, ref->probe_handle())) return true;
  Release(ref);
  return false;
}

// Layout, device, dtype, dim, sizes and strides through the AOTI getters:
// every tensor the MetaProbe does not read, with the errors that say why a
// tensor is refused.
bool Bridge::FillFromGetters(AtenTensorHandle h, PyObject* obj,
                             const char* what, int32_t* code, int64_t* ndim,
                             TensorRef* ref) {
  const AotiApi& a = lib_.api;
  int32_t layout, device_type;
  if (has_layout_ && a.get_layout(h, &layout) != 0) {
    return RaiseTorchFailure("layout", obj, what);
  }
  if (has_layout_ && layout != strided_) return RaiseNotStrided(obj, what);
  if (a.get_device_type(h, &device_type) != 0) {
    return RaiseTorchFailure("device", obj, what);
  }
  tf_tensor& v = ref->view;
  if (device_type == torch_cpu_) {
    v.device = {TF_DEVICE_CPU, 0};
  } else if (device_type == torch_cuda_) {
    int32_t index = 0;
    if (a.get_device_index(h, &index) != 0) {
      return RaiseTorchFailure("device index", obj, what);
    }
    v.device = {TF_DEVICE_CUDA, index};
  } else if (device_type == torch_meta_) {
    return RaiseMetaTensor(what);
  } else {
    return RaiseError(PyExc_NotImplementedError,
                      fmt::format("{}: torchferry does not carry tensors on "
                                  "device {}; expected cpu or cuda",
                                  what, AttrText(obj, "device")));
  }
  if (a.get_dtype(h, code) != 0) return RaiseTorchFailure("dtype", obj, what);
  if (a.get_dim(h, ndim) != 0 || a.get_sizes(h, &v.shape) != 0) {
    return RaiseTorchFailure("sizes", obj, what);
  }
  if (a.get_strides(h, &v.strides) != 0) {
    return RaiseTorchFailure("strides", obj, what);
  }
  return true;
}

// Whether `obj` is torch.strided, as torch's own getter says; costs a Python
// call, so only on the way to a refusal.
bool Bridge::IsStrided(PyObject* obj) {
  PyObject* layout = TorchAttr(obj, "layout");
  PyObject* strided =
      layout ? PyObject_GetAttrString(torch_module_, "strided") : nullptr;
  const bool same = strided != nullptr && layout == strided;
  Py_XDECREF(strided);
  Py_XDECREF(layout);
  PyErr_Clear();
  return same;
}

bool Bridge::RaiseNotStrided(PyObject* obj, const char* what) {
  return RaiseError(
      PyExc_TypeError,
      fmt::format("{}: expected a dense (torch.strided) tensor, got layout "
                  "{}; call .to_dense() first",
                  what, AttrText(obj, "layout")));
}

[[gnu::always_inline]] inline bool Bridge::FillFromHandle(AtenTensorHandle h,
                                                          PyObject* obj,
                                                          const char* what,
                                                          TensorRef* ref,
                                                          bool* plain) {
  const AotiApi& a = lib_.api;
  tf_tensor& v = ref->view;
  int32_t code;
  int64_t ndim;
  *plain = meta_.Read(h, &code, &ndim, &v.shape, &v.strides);
  if (*plain) {
    v.device = {TF_DEVICE_CPU, 0};  // a plain CPU tensor: dense by its keys
  } else if (!FillFromGetters(h, obj, what, &code, &ndim, ref)) {
    return false;
  }
  ref->dtype = DtypeFromTorchCode(code);
  if (ref->dtype == kNoDtype) return RaiseDtypeNotCarried(obj, what);
  v.dtype = Dtype(ref->dtype).dtype;
  void* data;
  if (a.get_data_ptr(h, &data) != 0) {
    return RaiseTorchFailure("data pointer", obj, what);
  }
  v.data = data;
  v.ndim = static_cast<int32_t>(ndim);
  v.byte_offset = 0;
  v.flags = ContiguityFlag(ndim, v.shape, v.strides);
  ref->numel = Numel(ndim, v.shape);
  if (ref->numel == 0) return true;
  if (data == nullptr) {
    return RaiseNoMemory(obj, what, ref->numel);
  }
  return CheckFitsStorage(h, obj, what, *ref);
}

TensorState Bridge::StateOf(const TensorRef& ref) const {
  if (ref.exchanged) return ExchangedStateOf(ref);
  const AotiApi& a = lib_.api;
  AtenTensorHandle h = ref.handle();
  TensorState s;
  int64_t *sizes, *strides, offset;
  int32_t code;
  const bool shaped =
      meta_.Read(h, &code, &s.ndim, &sizes, &strides) ||
      (a.get_dim(h, &s.ndim) == 0 && a.get_sizes(h, &sizes) == 0 &&
       a.get_strides(h, &strides) == 0);
  if (!shaped || a.get_data_ptr(h, &s.data) != 0 ||
      !storage_.Read(h, &offset, &s.nbytes) || s.ndim > TF_MAX_NDIM) {
    s.ndim = -1;  // never equal
    return s;
  }
  std::memcpy(s.dims, sizes, s.ndim * sizeof(int64_t));
  std::memcpy(s.dims + s.ndim, strides, s.ndim * sizeof(int64_t));
  return s;
}

namespace {

// One byte past the furthest element `ref`'s view reaches, `offset` elements
// into its storage: false where that overflows. torch has no negative
// strides; for a compact view the end is offset + numel.
inline bool BytesReached(const TensorRef& ref, int64_t offset,
                         int64_t* needed) {
  const tf_tensor& v = ref.view;
  int64_t end = offset + ref.numel;
  bool overflow = false;
  if (!(v.flags & TF_TENSOR_CONTIGUOUS)) {
    end = offset + 1;
    for (int32_t d = 0; d < v.ndim; ++d) {
      int64_t reach;
      overflow |=
          __builtin_mul_overflow(v.shape[d] - 1, v.strides[d], &reach) ||
          __builtin_add_overflow(end, reach, &end);
    }
  }
  overflow |= __builtin_mul_overflow(end, Dtype(ref.dtype).itemsize, needed);
  return !overflow;
}

// Out of line and cold: the message's formatting would otherwise give every
// read the stack frame of fmt's buffer.
[[gnu::cold, gnu::noinline]] bool RaiseBeyondStorage(const char* what,
                                                     const TensorRef& ref,
                                                     int64_t offset,
                                                     int64_t nbytes) {
  const tf_tensor& v = ref.view;
  int64_t needed = 0;
  const bool overflow = !BytesReached(ref, offset, &needed);
  return RaiseError(
      PyExc_ValueError,
      fmt::format(
          "{}: this tensor's view (shape [{}], storage offset {}) "
          "reaches byte {} of its storage, which holds {} bytes; was "
          "its storage resized or freed (untyped_storage().resize_)?",
          what, fmt::join(v.shape, v.shape + v.ndim, ", "), offset,
          overflow ? std::string("beyond 2^63") : std::to_string(needed),
          nbytes));
}

// `ref`'s view against its storage: `offset` elements into it, of `nbytes`.
[[gnu::always_inline]] inline bool FitsOrRaise(const char* what,
                                               const TensorRef& ref,
                                               int64_t offset, int64_t nbytes) {
  int64_t needed;
  if (BytesReached(ref, offset, &needed) && needed <= nbytes) return true;
  return RaiseBeyondStorage(what, ref, offset, nbytes);
}

}  // namespace

// A view whose storage was shrunk or freed under it
// (t.untyped_storage().resize_(0)) still reports a data pointer: the
// storage's base, NULL, plus its offset. Only the storage's size tells, and
// every element the view reaches must lie inside it.
[[gnu::always_inline]] inline bool Bridge::CheckFitsStorage(
    AtenTensorHandle h, PyObject* obj, const char* what, const TensorRef& ref) {
  int64_t offset, nbytes;
  if (!storage_.Read(h, &offset, &nbytes)) {
    return RaiseTorchFailure("storage", obj, what);
  }
  return FitsOrRaise(what, ref, offset, nbytes);
}

// For the exchange path, which reads the storage its own way.
bool Bridge::CheckFitsStorageSpan(PyObject*, const char* what,
                                  const TensorRef& ref, int64_t offset,
                                  int64_t nbytes) {
  return FitsOrRaise(what, ref, offset, nbytes);
}

// torch can negate a tensor lazily (x.conj().imag): the memory then holds
// -value and a bit on the TensorImpl says so. Kernels read memory, so such a
// tensor would compute with the wrong sign; refuse it instead.
bool Bridge::CheckNotNegated(const char* impl, PyObject* obj,
                             const char* what) {
  bool negated;
  if (neg_probe_.ok && impl != nullptr) {
    uint64_t keys;
    std::memcpy(&keys, impl + neg_probe_.keyset_offset, sizeof(keys));
    negated = (keys & neg_probe_.negative_mask) != 0;
  } else {
    const HeldOff quiet(*this, obj);  // torch's answer, not a subclass's
    PyObject* result = is_neg_(obj, nullptr);
    if (result == nullptr) return false;
    negated = result == Py_True;
    Py_DECREF(result);
  }
  if (!negated) return true;
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}: this tensor has torch's negative bit set "
                                "(a lazily negated view such as "
                                "x.conj().imag), so its memory holds -value; "
                                "pass x.resolve_neg()",
                                what));
}

// The version counter's per-call work that may run Python, beside the read
// it follows: a tensor read for writing that autograd could not see written
// refused before any kernel, and the bump of a tensor without a handle. The
// counter's calibration at import is in version_counter.cc.

bool VersionCounter::BumpInPython(PyObject* object) const {
  const Bridge::HeldOff quiet(Bridge::Get(), object);  // torch's code only
  PyObject* r = PyObject_CallOneArg(increment_version_, object);
  Py_XDECREF(r);
  return r != nullptr;
}

bool VersionCounter::IsInference(PyObject* object,
                                 AtenTensorHandle handle) const {
  if (ok_ && handle != nullptr) return CounterOf(handle) == nullptr;
  if (is_inference_ == nullptr) return false;
  // torch's answer: the method hands a subclass's __torch_function__ or a
  // mode the question unless that is held off.
  const Bridge::HeldOff quiet(Bridge::Get(), object);
  PyObject* r = is_inference_(object, nullptr);
  Py_XDECREF(r);
  PyErr_Clear();
  return r == Py_True;
}

bool VersionCounter::CheckWritable(const char* what, PyObject* object,
                                   AtenTensorHandle handle) const {
  if (!IsInference(object, handle)) return true;
  // A C function returning a bool: no Python code runs here.
  PyObject* enabled = PyObject_CallNoArgs(inference_mode_enabled_);
  Py_XDECREF(enabled);
  if (enabled == Py_True) return true;
  PyErr_Clear();
  return RaiseError(PyExc_RuntimeError,
                    fmt::format("Inplace update to inference tensor outside "
                                "InferenceMode is not allowed: {} is an "
                                "inference tensor; write it inside "
                                "torch.inference_mode(), or pass a clone",
                                what));
}

}  // namespace torchferry
