// DLPack import: an object that is not a torch tensor but has __dlpack__,
// checked field by field before a kernel may walk it.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/bridge/bridge.h"
#include "core/bridge/bridge_internal.h"
#include "core/bridge/dlpack_abi.h"
#include "core/bridge/py_errors.h"

namespace torchferry {
namespace {

using bridge_internal::Bump;
using bridge_internal::ContiguityFlag;

constexpr uint32_t kDlpackMajor = 1;  // the DLPack major this host reads

// A DLPack producer is someone else's code: everything it describes is
// checked before a kernel may walk it. Returns what is wrong ("" when
// nothing), with the Python exception type to raise.
// `strides_required`: DLPack 1.2 and later forbid NULL strides for ndim > 0;
// before, NULL meant compact and row-major (numpy 1.x exports so).
std::string CheckDlpackTensor(const dlpack::Tensor& dl, bool strides_required,
                              DtypeIndex* dtype, int64_t* numel,
                              PyObject** error_type) {
  *error_type = PyExc_TypeError;
  if (dl.device.device_type != TF_DEVICE_CPU &&
      dl.device.device_type != TF_DEVICE_CUDA) {
    *error_type = PyExc_NotImplementedError;
    return fmt::format(
        "DLPack device type {} is not carried; expected cpu (1) or cuda (2)",
        dl.device.device_type);
  }
  *dtype = DtypeFromDlpack(dl.dtype.code, dl.dtype.bits, dl.dtype.lanes);
  if (*dtype == kNoDtype) {
    return fmt::format(
        "torchferry does not carry DLPack dtype (code {}, {} bits, {} lanes); "
        "expected a float, int, uint or bool dtype",
        dl.dtype.code, dl.dtype.bits, dl.dtype.lanes);
  }
  *error_type = PyExc_ValueError;
  if (dl.ndim < 0 || dl.ndim > TF_MAX_NDIM || (dl.ndim > 0 && !dl.shape)) {
    return fmt::format(
        "the DLPack tensor has {} dims{}; expected 0 to {} "
        "with a shape",
        dl.ndim, dl.shape ? "" : " and no shape", TF_MAX_NDIM);
  }
  if (dl.strides == nullptr && dl.ndim > 0 && strides_required) {
    return fmt::format(
        "the DLPack tensor has {} dims and no strides, which DLPack 1.2 and "
        "later require",
        dl.ndim);
  }
  // Elements, and the furthest element in each direction, must fit int64.
  // No strides (DLPack before 1.0, for a compact tensor): row-major, whose
  // furthest element is the last.
  int64_t count = 1, reach = 0;
  for (int32_t d = 0; d < dl.ndim; ++d) {
    const int64_t size = dl.shape[d];
    int64_t step;
    if (size < 0) {
      return fmt::format("the DLPack tensor has size {} on dim {}", size, d);
    }
    if (__builtin_mul_overflow(count, size, &count) ||
        (size > 0 && dl.strides != nullptr &&
         (__builtin_mul_overflow(size - 1, dl.strides[d], &step) ||
          step == INT64_MIN ||  // has no positive counterpart
          __builtin_add_overflow(reach, step < 0 ? -step : step, &reach)))) {
      return "the DLPack tensor describes more elements or bytes than fit in "
             "int64";
    }
  }
  if (dl.strides == nullptr && count > 0) reach = count - 1;
  const int64_t itemsize = Dtype(*dtype).itemsize;
  int64_t span, bytes;
  if (__builtin_add_overflow(reach, 1, &span) ||
      __builtin_mul_overflow(span, itemsize, &bytes) ||
      dl.byte_offset > static_cast<uint64_t>(INT64_MAX - bytes)) {
    return "the DLPack tensor describes more bytes than fit in int64";
  }
  if (dl.data == nullptr && count > 0) {
    return fmt::format(
        "the DLPack tensor has {} elements but a NULL data "
        "pointer",
        count);
  }
  *numel = count;
  return "";
}

// Calls obj.__dlpack__ once, asking for a versioned capsule (only DLPack
// >= 1.0 can say "read-only", which an output must not be). A producer from
// before DLPack 1.0 refuses the keyword with a TypeError that names it; only
// then is it asked again without. Any other error is the producer's own and
// is not retried: nested producers would otherwise call each other
// exponentially often.
PyObject* CallDlpack(PyObject* obj) {
  PyObject* method = PyObject_GetAttrString(obj, "__dlpack__");
  if (method == nullptr) return nullptr;
  PyObject* kwargs = Py_BuildValue("{s:(ii)}", "max_version", 1, 0);
  PyObject* empty = kwargs ? PyTuple_New(0) : nullptr;
  PyObject* capsule = empty ? PyObject_Call(method, empty, kwargs) : nullptr;
  Py_XDECREF(empty);
  Py_XDECREF(kwargs);
  if (capsule == nullptr && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyObject* text = value ? PyObject_Str(value) : nullptr;
    const bool about_keyword =
        text != nullptr &&
        Utf8Text(text).find("max_version") != std::string::npos;
    Py_XDECREF(text);
    if (about_keyword) {
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(trace);
      PyErr_Clear();
      capsule = PyObject_CallNoArgs(method);
    } else {
      PyErr_Restore(type, value, trace);
    }
  }
  Py_DECREF(method);
  return capsule;
}

}  // namespace

bool Bridge::ReadDlpack(PyObject* obj, const char* what, bool writable,
                        TensorRef* ref) {
  PyObject* capsule = CallDlpack(obj);
  if (capsule == nullptr) {
    // An interrupt or an exhausted process is not about the argument.
    if (PendingErrorIsFatal()) return false;
    std::string why = FetchErrorText();
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}: this {} could not be exported through "
                                  "__dlpack__: {}",
                                  what, Py_TYPE(obj)->tp_name, why));
  }
  const dlpack::Tensor* dl = nullptr;
  bool strides_required = false;  // a DLPack >= 1.2 export
  ref->read_only = false;
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    auto* managed = static_cast<dlpack::ManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule, "dltensor_versioned"));
    // Still unclaimed on every refusal here: the capsule frees it.
    if (managed->version.major != kDlpackMajor) {
      const uint32_t major = managed->version.major;
      const uint32_t minor = managed->version.minor;
      Py_DECREF(capsule);
      return RaiseError(
          PyExc_BufferError,
          fmt::format("{}: this {} exported a DLPack {}.{} tensor; "
                      "torchferry reads DLPack {}.x (the major versions must "
                      "match)",
                      what, Py_TYPE(obj)->tp_name, major, minor, kDlpackMajor));
    }
    ref->read_only = (managed->flags & dlpack::kFlagReadOnly) != 0;
    strides_required = managed->version.minor >= 2;
    if (writable && ref->read_only) {
      Py_DECREF(capsule);
      return RaiseError(PyExc_ValueError,
                        fmt::format("{}: this {} is read-only; expected a "
                                    "writable array",
                                    what, Py_TYPE(obj)->tp_name));
    }
    PyCapsule_SetName(capsule, "used_dltensor_versioned");
    ref->dlpack_managed = managed;
    ref->dlpack_versioned = true;
    dl = &managed->dl_tensor;
  } else if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* managed = static_cast<dlpack::ManagedTensor*>(
        PyCapsule_GetPointer(capsule, "dltensor"));
    PyCapsule_SetName(capsule, "used_dltensor");
    ref->dlpack_managed = managed;
    ref->dlpack_versioned = false;
    dl = &managed->dl_tensor;
  }
  Py_DECREF(capsule);
  if (dl == nullptr) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}: {}.__dlpack__() returned something "
                                  "other than a DLPack capsule",
                                  what, Py_TYPE(obj)->tp_name));
  }
  Bump(counts_[static_cast<int>(BridgePath::kDlpack)]);
  PyObject* error_type = nullptr;
  std::string problem = CheckDlpackTensor(*dl, strides_required, &ref->dtype,
                                          &ref->numel, &error_type);
  if (!problem.empty()) {
    // The message is built from `dl` before Release frees it.
    std::string message =
        fmt::format("{}: {} ({})", what, problem, Py_TYPE(obj)->tp_name);
    Release(ref);
    return RaiseError(error_type, message);
  }
  static int64_t kUnitStride = 1;
  if (dl->strides == nullptr && dl->ndim > 1) {
    // Row-major strides, as torch gives a compact tensor: a dim of size 0
    // or 1 counts as 1, so they fit whenever the sizes' product does.
    ref->dlpack_strides = new int64_t[dl->ndim];
    int64_t step = 1;
    for (int32_t d = dl->ndim - 1; d >= 0; --d) {
      ref->dlpack_strides[d] = step;
      if (__builtin_mul_overflow(step, std::max<int64_t>(dl->shape[d], 1),
                                 &step)) {
        step = INT64_MAX;  // only past the outermost dim, or for no elements
      }
    }
  }
  tf_tensor& v = ref->view;
  v.device = {dl->device.device_type, dl->device.device_id};
  v.dtype = Dtype(ref->dtype).dtype;
  v.data = ref->numel == 0 && dl->data == nullptr
               ? nullptr
               : static_cast<char*>(dl->data) + dl->byte_offset;
  v.byte_offset = 0;
  v.ndim = dl->ndim;
  v.shape = dl->shape;
  v.strides = dl->strides           ? dl->strides
              : ref->dlpack_strides ? ref->dlpack_strides
                                    : &kUnitStride;
  v.flags = ContiguityFlag(v.ndim, v.shape, v.strides);
  v.source = nullptr;
  v.source_kind = TF_SOURCE_NONE;
  return true;
}

void Bridge::ReleaseDlpack(TensorRef* ref) {
  // A producer's deleter may run Python (ctypes, Cython), which must not see
  // an exception this call is about to raise.
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  if (ref->dlpack_versioned) {
    auto* m = static_cast<dlpack::ManagedTensorVersioned*>(ref->dlpack_managed);
    if (m->deleter) m->deleter(m);
  } else {
    auto* m = static_cast<dlpack::ManagedTensor*>(ref->dlpack_managed);
    if (m->deleter) m->deleter(m);
  }
  ref->dlpack_managed = nullptr;
  delete[] ref->dlpack_strides;
  ref->dlpack_strides = nullptr;
  PyErr_Restore(type, value, trace);
}

}  // namespace torchferry
