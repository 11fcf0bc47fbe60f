// The exchange path: torch's DLPack C exchange API (torch >= 2.10), in its
// non-owning form, which fills a DLTensor with no allocation and no
// reference count. It is a promised, versioned contract, but it gives no
// at::Tensor: the checks that read one on the other paths (the negative
// bit, the storage's extent, the state noted before Python runs) call the
// C functions behind torch's own Tensor methods here, and the ATen plugin
// gets no source tensor.
#include <fmt/format.h>

#include <cstring>

#include "core/bridge/bridge.h"
#include "core/bridge/bridge_internal.h"
#include "core/bridge/py_errors.h"

namespace torchferry {

using bridge_internal::Bump;
using bridge_internal::ContiguityFlag;
using bridge_internal::Numel;
using bridge_internal::RaiseDtypeNotCarried;
using bridge_internal::RaiseMetaTensor;
using bridge_internal::RaiseNoMemory;

namespace {

constexpr uint32_t kExchangeMajor = 1;  // the exchange API major read here

// A METH_NOARGS C method of `type`, looked up without running Python.
PyCFunction NoArgsMethod(PyTypeObject* type, const char* name) {
  PyObject* key = PyUnicode_InternFromString(name);
  PyObject* method = key ? _PyType_Lookup(type, key) : nullptr;
  Py_XDECREF(key);
  if (method == nullptr || !PyObject_TypeCheck(method, &PyMethodDescr_Type)) {
    return nullptr;
  }
  PyMethodDef* def = reinterpret_cast<PyMethodDescrObject*>(method)->d_method;
  return def->ml_flags == METH_NOARGS ? def->ml_meth : nullptr;
}

// A Python int result of a direct C method call, then released.
bool TakeInt(PyObject* value, int64_t* out) {
  if (value == nullptr) return false;
  *out = PyLong_AsLongLong(value);
  Py_DECREF(value);
  return !(*out == -1 && PyErr_Occurred());
}

}  // namespace

void Bridge::FindExchangeApi() {
  PyObject* capsule = PyObject_GetAttrString(
      reinterpret_cast<PyObject*>(tensor_type_), "__dlpack_c_exchange_api__");
  if (capsule == nullptr) {
    PyErr_Clear();
    exchange_detail_ =
        "torch.Tensor has no __dlpack_c_exchange_api__ (torch < 2.10)";
    return;
  }
  const auto* header = static_cast<const dlpack::ExchangeApiHeader*>(
      PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
  Py_DECREF(capsule);  // torch keeps the table for the process
  PyErr_Clear();
  // A newer major leads by prev_api to the older ones it still serves.
  const dlpack::ExchangeApiHeader* found = header;
  while (found != nullptr && found->version.major != kExchangeMajor) {
    found = found->prev_api;
  }
  if (found == nullptr) {
    exchange_detail_ = fmt::format(
        "torch's DLPack exchange API is version {}.{}, with no major {} "
        "behind it",
        header ? header->version.major : 0, header ? header->version.minor : 0,
        kExchangeMajor);
    return;
  }
  const auto* api = reinterpret_cast<const dlpack::ExchangeApi*>(found);
  // The TensorImpl* behind a tensor, for the calibrated words of the
  // negative-bit and storage probes: without it, each check is a Python
  // method called as a C function.
  PyObject* cdata_key = PyUnicode_InternFromString("_cdata");
  PyObject* cdata =
      cdata_key ? _PyType_Lookup(tensor_type_, cdata_key) : nullptr;
  Py_XDECREF(cdata_key);
  if (cdata != nullptr && PyObject_TypeCheck(cdata, &PyGetSetDescr_Type)) {
    cdata_ = reinterpret_cast<PyGetSetDescrObject*>(cdata)->d_getset->get;
  }
  PyObject* c_module = PyObject_GetAttrString(torch_module_, "_C");
  untyped_storage_ = NoArgsMethod(tensor_type_, "untyped_storage");
  PyObject* storage_type =
      c_module ? PyObject_GetAttrString(c_module, "StorageBase") : nullptr;
  Py_XDECREF(c_module);
  if (storage_type != nullptr && PyType_Check(storage_type)) {
    auto* type = reinterpret_cast<PyTypeObject*>(storage_type);
    storage_data_ptr_ = NoArgsMethod(type, "data_ptr");
    storage_nbytes_ = NoArgsMethod(type, "nbytes");
  }
  Py_XDECREF(storage_type);
  PyErr_Clear();
  if (api->dltensor_from_py_object_no_sync == nullptr) {
    exchange_detail_ = fmt::format(
        "torch's DLPack exchange API {}.{} has no non-owning "
        "dltensor_from_py_object_no_sync",
        found->version.major, found->version.minor);
  } else if (untyped_storage_ == nullptr || storage_data_ptr_ == nullptr ||
             storage_nbytes_ == nullptr || is_neg_ == nullptr) {
    exchange_detail_ =
        "Tensor.untyped_storage, StorageBase.data_ptr or StorageBase.nbytes "
        "is not a plain C method in this torch; the exchange path's checks "
        "need them";
  } else {
    exchange_ = api;
    exchange_detail_ = fmt::format(
        "DLPack exchange API {}.{}, non-owning dltensor_from_py_object_no_sync",
        found->version.major, found->version.minor);
  }
}

// `obj`'s storage without a handle: its base address and its size in bytes,
// through torch's own methods called as C functions. untyped_storage()
// allocates a Python object, which can start the garbage collector, whose
// callbacks are Python: the collector is held off meanwhile, so that no
// Python runs between reading a tensor and its kernel on this path either.
bool Bridge::ExchangedStorage(PyObject* obj, int64_t* base,
                              int64_t* nbytes) const {
  const int collecting = PyGC_Disable();
  PyObject* storage = untyped_storage_(obj, nullptr);
  const bool ok = storage != nullptr &&
                  TakeInt(storage_data_ptr_(storage, nullptr), base) &&
                  TakeInt(storage_nbytes_(storage, nullptr), nbytes);
  Py_XDECREF(storage);
  if (collecting) PyGC_Enable();
  return ok;
}

const char* Bridge::ImplFromCdata(PyObject* obj) const {
  if (cdata_ == nullptr || !exchange_reads_impl_) return nullptr;
  PyObject* value = cdata_(obj, nullptr);  // a PyLong: not tracked by the GC
  void* impl = value != nullptr ? PyLong_AsVoidPtr(value) : nullptr;
  Py_XDECREF(value);
  if (impl == nullptr) PyErr_Clear();
  return static_cast<const char*>(impl);
}

// torch refuses to describe a tensor DLPack cannot hold; the refusal says
// why in the words the other paths use (nested, not strided, meta, dtype),
// and torch's own message, without its C++ backtrace, for anything else.
bool Bridge::RaiseExchangeFailure(PyObject* obj, const char* what) {
  if (PendingErrorIsFatal()) return false;
  std::string why = FetchErrorText();
  why = why.substr(0, why.find("\nException raised from"));
  if (RaiseIfNotDense(obj, what, /*check_layout=*/true)) return false;
  if (AttrText(obj, "device") == "meta") return RaiseMetaTensor(what);
  if (why.find("not supported by dlpack") != std::string::npos) {
    return RaiseDtypeNotCarried(obj, what);
  }
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}: torch's DLPack exchange API could not "
                                "describe this {}: {}",
                                what, Py_TYPE(obj)->tp_name, why));
}

bool Bridge::ReadExchanged(PyObject* obj, const char* what, TensorRef* ref) {
  dlpack::Tensor dl;
  if (exchange_->dltensor_from_py_object_no_sync(obj, &dl) != 0) {
    return RaiseExchangeFailure(obj, what);
  }
  Bump(counts_[static_cast<int>(BridgePath::kExchange)]);
  tf_tensor& v = ref->view;
  if (dl.device.device_type != TF_DEVICE_CPU &&
      dl.device.device_type != TF_DEVICE_CUDA) {
    return RaiseError(PyExc_NotImplementedError,
                      fmt::format("{}: torchferry does not carry tensors on "
                                  "device {}; expected cpu or cuda",
                                  what, AttrText(obj, "device")));
  }
  ref->dtype = DtypeFromDlpack(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes);
  if (ref->dtype == kNoDtype) return RaiseDtypeNotCarried(obj, what);
  const HeldOff quiet(*this, obj);
  const char* impl = ImplFromCdata(obj);
  ref->exchanged_impl = impl;
  if (!CheckNotNegated(impl, obj, what)) return false;
  static int64_t kUnitStride = 1;
  v.device = {dl.device.device_type, dl.device.device_id};
  v.dtype = Dtype(ref->dtype).dtype;
  v.data = dl.data == nullptr ? nullptr
                              : static_cast<char*>(dl.data) + dl.byte_offset;
  v.byte_offset = 0;
  v.ndim = dl.ndim;
  v.shape = dl.shape;
  v.strides = dl.strides != nullptr ? dl.strides : &kUnitStride;
  v.flags = ContiguityFlag(v.ndim, v.shape, v.strides);
  v.source = nullptr;
  v.source_kind = TF_SOURCE_NONE;
  ref->exchanged = true;
  ref->numel = Numel(v.ndim, v.shape);
  if (ref->numel == 0) return true;
  if (v.data == nullptr) {
    return RaiseNoMemory(obj, what, ref->numel);
  }
  int64_t offset = 0, nbytes = 0;
  if (impl != nullptr && storage_.ReadImpl(impl, &offset, &nbytes)) {
    return CheckFitsStorageSpan(obj, what, *ref, offset, nbytes);
  }
  // Runs no Python (it holds the collector off): the view read above stays
  // what the kernel gets.
  int64_t base = 0;
  if (!ExchangedStorage(obj, &base, &nbytes)) {
    return RaiseTorchFailure("storage", obj, what);
  }
  const int64_t itemsize = Dtype(ref->dtype).itemsize;
  const int64_t byte_offset =
      static_cast<int64_t>(reinterpret_cast<intptr_t>(v.data) - base);
  if (byte_offset < 0 || byte_offset % itemsize != 0) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}: this tensor's data pointer lies outside its storage "
                    "(byte {} of it); was its storage replaced?",
                    what, byte_offset));
  }
  return CheckFitsStorageSpan(obj, what, *ref, byte_offset / itemsize, nbytes);
}

// The state of an exchanged tensor, read again: its handle-less stand-in for
// StateOf, so that Python run mid-call is noticed on this path too.
TensorState Bridge::ExchangedStateOf(const TensorRef& ref) const {
  const HeldOff quiet(*this, ref.object);
  TensorState s;
  dlpack::Tensor dl;
  int64_t base = 0;
  if (!ExchangedStorage(ref.object, &base, &s.nbytes) ||
      exchange_->dltensor_from_py_object_no_sync(ref.object, &dl) != 0 ||
      dl.ndim > TF_MAX_NDIM) {
    PyErr_Clear();
    s.ndim = -1;  // never equal
    return s;
  }
  s.data = dl.data == nullptr ? nullptr
                              : static_cast<char*>(dl.data) + dl.byte_offset;
  s.ndim = dl.ndim;
  for (int64_t d = 0; d < s.ndim; ++d) {
    s.dims[d] = dl.shape[d];
    s.dims[s.ndim + d] = dl.strides != nullptr ? dl.strides[d] : 1;
  }
  return s;
}

}  // namespace torchferry
