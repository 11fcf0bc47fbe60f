#include "core/bridge/version_counter.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>

#include "core/bridge/bridge.h"
#include "core/bridge/impl_words.h"
#include "core/bridge/py_errors.h"

namespace torchferry {
namespace {

// A VersionCounter is an intrusive_ptr_target (vtable, reference counts)
// followed by std::atomic<uint32_t> version_: 24 bytes, version_ at 16.
// Candidates stay inside those 24 bytes.
constexpr Py_ssize_t kValueCandidates[] = {16, 20, 8, 12};

long VersionOf(PyObject* tensor) {
  PyObject* v = PyObject_GetAttrString(tensor, "_version");
  long version = v ? PyLong_AsLong(v) : -1;
  Py_XDECREF(v);
  return version;
}

}  // namespace

void VersionCounter::Calibrate(PyObject* torch_module, Py_ssize_t impl_bytes) {
  PyObject* graph = PyImport_ImportModule("torch.autograd.graph");
  increment_version_ =
      graph ? PyObject_GetAttrString(graph, "increment_version") : nullptr;
  Py_XDECREF(graph);
  inference_mode_enabled_ =
      PyObject_GetAttrString(torch_module, "is_inference_mode_enabled");
  PyObject* tensor_type = PyObject_GetAttrString(torch_module, "Tensor");
  PyObject* is_inference =
      tensor_type ? _PyType_Lookup(reinterpret_cast<PyTypeObject*>(tensor_type),
                                   PyUnicode_InternFromString("is_inference"))
                  : nullptr;
  if (is_inference != nullptr &&
      PyObject_TypeCheck(is_inference, &PyMethodDescr_Type) &&
      reinterpret_cast<PyMethodDescrObject*>(is_inference)
              ->d_method->ml_flags == METH_NOARGS) {
    is_inference_ =
        reinterpret_cast<PyMethodDescrObject*>(is_inference)->d_method->ml_meth;
  }
  Py_XDECREF(tensor_type);

  // A base, a view of it (same counter), base.data (a counter of its own, and
  // flags that differ) and an unrelated tensor (its own counter, the same
  // flags).
  // Five dims fill a TensorImpl's inline sizes and strides, which a view
  // would otherwise copy from its base with whatever the unused slots hold.
  PyObject* base =
      PyObject_CallMethod(torch_module, "empty", "(iiiii)", 1, 1, 1, 1, 4);
  PyObject* view =
      base ? PyObject_CallMethod(base, "view", "(iiiii)", 1, 1, 1, 1, 4)
           : nullptr;
  PyObject* data = view ? PyObject_GetAttrString(base, "data") : nullptr;
  PyObject* other = data ? PyObject_CallMethod(torch_module, "empty", "(iiiii)",
                                               1, 1, 1, 1, 4)
                         : nullptr;
  auto finish = [&](bool ok, std::string detail) {
    ok_ = ok;
    detail_ = std::move(detail);
    if (!ok_)
      detail_ += "; calling torch.autograd.graph.increment_version instead";
    Py_XDECREF(base);
    Py_XDECREF(view);
    Py_XDECREF(data);
    Py_XDECREF(other);
    PyErr_Clear();
  };
  const char* impl_base = data ? TensorImplOf(base) : nullptr;
  const char* impl_view = data ? TensorImplOf(view) : nullptr;
  const char* impl_data = data ? TensorImplOf(data) : nullptr;
  const char* impl_other = other ? TensorImplOf(other) : nullptr;
  if (impl_base == nullptr || impl_view == nullptr || impl_data == nullptr ||
      impl_other == nullptr || increment_version_ == nullptr ||
      inference_mode_enabled_ == nullptr) {
    return finish(false, "the calibration tensors could not be made");
  }
  // The base's words before a second view of it exists: reference counts
  // (which two TensorImpls can happen to share) change with it, the
  // counter does not, and the second view shares it too.
  constexpr Py_ssize_t kMaxWords = 64;
  if (impl_bytes > kMaxWords * 8) impl_bytes = kMaxWords * 8;
  void* before[kMaxWords] = {};
  for (Py_ssize_t off = 0; off + 8 <= impl_bytes; off += 8) {
    before[off / 8] = WordAt<void*>(impl_base, off);
  }
  PyObject* view2 = PyObject_CallMethod(base, "view", "(iiiii)", 1, 1, 1, 1, 4);
  const char* impl_view2 = view2 ? TensorImplOf(view2) : nullptr;
  int matches = 0;
  std::string where;
  for (Py_ssize_t off = sizeof(void*); impl_view2 && off + 8 <= impl_bytes;
       off += 8) {
    void* w = WordAt<void*>(impl_base, off);
    // The counter points at a heap object, 8-aligned; a word of flags and
    // small fields (dtype, device) that base and its views share is not.
    if (w != nullptr && reinterpret_cast<uintptr_t>(w) % 8 == 0 &&
        w == before[off / 8] && w == WordAt<void*>(impl_view, off) &&
        w == WordAt<void*>(impl_view2, off) &&
        WordAt<void*>(impl_data, off) != nullptr &&
        WordAt<void*>(impl_data, off) != w &&
        WordAt<void*>(impl_other, off) != nullptr &&
        WordAt<void*>(impl_other, off) != w) {
      counter_offset_ = off;
      where += fmt::format("{}{}", matches++ ? ", " : "", off);
    }
  }
  Py_XDECREF(view2);
  if (matches != 1) {
    return finish(false,
                  fmt::format("{} TensorImpl words look like the "
                              "version counter (expected 1{}{})",
                              matches, matches ? ": bytes " : "", where));
  }
  const char* counter =
      static_cast<const char*>(WordAt<void*>(impl_base, counter_offset_));
  for (Py_ssize_t value_offset : kValueCandidates) {
    bool follows = true;
    for (int step = 0; follows && step < 3; ++step) {
      uint32_t value;
      std::memcpy(&value, counter + value_offset, sizeof(value));
      follows = static_cast<long>(value) == VersionOf(base) &&
                VersionOf(view) == VersionOf(base);
      PyObject* r = PyObject_CallOneArg(increment_version_, base);
      follows = follows && r != nullptr;
      Py_XDECREF(r);
    }
    if (follows) {
      value_offset_ = value_offset;
      return finish(true, fmt::format("version counter at byte {} of "
                                      "TensorImpl, its value at byte {}",
                                      counter_offset_, value_offset_));
    }
  }
  finish(false, "no word of the counter follows tensor._version");
}

}  // namespace torchferry
