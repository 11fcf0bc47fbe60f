#include "core/bridge/storage_probe.h"

#include <fmt/format.h>

#include <vector>

#include "core/bridge/impl_words.h"

namespace torchferry {
namespace {

// How far into a StorageImpl the scan reads: its size follows its refcounts
// and DataPtr (about byte 48) in every torch 2.x, and it is larger than this.
constexpr Py_ssize_t kStorageImplScan = 64;

// The one offset in [8, limit) where pick(offset) holds, or -1.
template <typename Pick>
Py_ssize_t OnlyOffset(Py_ssize_t limit, Pick pick, int* matches) {
  Py_ssize_t found = -1;
  *matches = 0;
  for (Py_ssize_t off = sizeof(void*); off + 8 <= limit; off += 8) {
    if (pick(off)) {
      found = off;
      ++*matches;
    }
  }
  return *matches == 1 ? found : -1;
}

}  // namespace

void StorageProbe::Calibrate(PyObject* torch_module, const AotiApi* api,
                             Py_ssize_t impl_bytes) {
  api_ = api;
  // Two storages of distinctive sizes (float32: 31,676 and 31,628 bytes),
  // three views of the first at offsets 0, 5 and 11, and its .data.
  PyObject* base = PyObject_CallMethod(torch_module, "empty", "(i)", 7919);
  PyObject* other =
      base ? PyObject_CallMethod(torch_module, "empty", "(i)", 7907) : nullptr;
  std::vector<PyObject*> owned = {base, other};
  auto item = [&](PyObject* t, long start) -> PyObject* {
    PyObject* s = PyLong_FromLong(start);
    PyObject* slice = s ? PySlice_New(s, nullptr, nullptr) : nullptr;
    PyObject* view = slice && t ? PyObject_GetItem(t, slice) : nullptr;
    Py_XDECREF(slice);
    Py_XDECREF(s);
    owned.push_back(view);
    return view;
  };
  PyObject* at5 = item(base, 5);
  PyObject* at11 = item(base, 11);
  // A second family (a storage and a view of it), so that a word that only
  // happens to agree across the first one (padding, a recycled allocation)
  // is not taken for the StorageImpl*.
  PyObject* second =
      base ? PyObject_CallMethod(torch_module, "empty", "(i)", 7883) : nullptr;
  owned.push_back(second);
  PyObject* second_at3 = item(second, 3);
  PyObject* data = base ? PyObject_GetAttrString(base, "data") : nullptr;
  owned.push_back(data);
  auto finish = [&](bool ok, std::string why) {
    ok_ = ok;
    detail_ = ok ? fmt::format(
                       "storage offset at byte {} of TensorImpl, "
                       "StorageImpl* at byte {}, its size at byte {}",
                       offset_at_, storage_at_, nbytes_at_)
                 : why + "; reading them through the AOTI getters instead";
    for (PyObject* o : owned) Py_XDECREF(o);
    PyErr_Clear();
  };
  const char* t = data && at5 && at11 && other ? TensorImplOf(base) : nullptr;
  const char* t5 = t ? TensorImplOf(at5) : nullptr;
  const char* t11 = t ? TensorImplOf(at11) : nullptr;
  const char* td = t ? TensorImplOf(data) : nullptr;
  const char* u = t ? TensorImplOf(other) : nullptr;
  const char* t2 = t && second_at3 ? TensorImplOf(second) : nullptr;
  const char* t2v = t2 ? TensorImplOf(second_at3) : nullptr;
  if (!t || !t5 || !t11 || !td || !u || !t2 || !t2v) {
    return finish(false, "the calibration tensors could not be made");
  }
  int matches;
  offset_at_ = OnlyOffset(
      impl_bytes,
      [&](Py_ssize_t o) {
        return WordAt<int64_t>(t, o) == 0 && WordAt<int64_t>(t5, o) == 5 &&
               WordAt<int64_t>(t11, o) == 11 && WordAt<int64_t>(td, o) == 0;
      },
      &matches);
  if (offset_at_ < 0) {
    return finish(false, fmt::format("{} TensorImpl words look like the "
                                     "storage offset (expected 1)",
                                     matches));
  }
  storage_at_ = OnlyOffset(
      impl_bytes,
      [&](Py_ssize_t o) {
        const int64_t w = WordAt<int64_t>(t, o);
        const int64_t w2 = WordAt<int64_t>(t2, o);
        const int64_t wu = WordAt<int64_t>(u, o);
        return w != 0 && w == WordAt<int64_t>(t5, o) &&
               w == WordAt<int64_t>(t11, o) && w == WordAt<int64_t>(td, o) &&
               wu != 0 && wu != w && w2 != 0 && w2 == WordAt<int64_t>(t2v, o) &&
               w2 != w && w2 != wu;
      },
      &matches);
  if (storage_at_ < 0) {
    return finish(false, fmt::format("{} TensorImpl words look like the "
                                     "StorageImpl* (expected 1)",
                                     matches));
  }
  AtenTensorHandle h_base = nullptr, h_other = nullptr;
  // The handle of a tensor is a pointer to its at::Tensor, which is one
  // pointer: the TensorImpl*. Give the getters exactly that.
  const char* impls[2] = {t, u};
  h_base = reinterpret_cast<AtenTensorHandle>(&impls[0]);
  h_other = reinterpret_cast<AtenTensorHandle>(&impls[1]);
  int64_t bytes_base = -1, bytes_other = -1, off5 = -1;
  const char* impl5 = t5;
  if (api->get_storage_size(h_base, &bytes_base) != 0 ||
      api->get_storage_size(h_other, &bytes_other) != 0 ||
      api->get_storage_offset(reinterpret_cast<AtenTensorHandle>(&impl5),
                              &off5) != 0 ||
      off5 != 5 || bytes_base == bytes_other) {
    return finish(false,
                  "the AOTI storage getters disagree with the "
                  "calibration tensors");
  }
  const char* s =
      reinterpret_cast<const char*>(WordAt<int64_t>(t, storage_at_));
  const char* s_other =
      reinterpret_cast<const char*>(WordAt<int64_t>(u, storage_at_));
  nbytes_at_ = OnlyOffset(
      kStorageImplScan,
      [&](Py_ssize_t o) {
        return WordAt<int64_t>(s, o) == bytes_base &&
               WordAt<int64_t>(s_other, o) == bytes_other;
      },
      &matches);
  if (nbytes_at_ < 0) {
    return finish(false, fmt::format("{} StorageImpl words hold its size "
                                     "(expected 1)",
                                     matches));
  }
  finish(true, "");
}

}  // namespace torchferry
