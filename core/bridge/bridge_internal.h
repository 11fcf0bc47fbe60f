// What the bridge's three files share (core/bridge/bridge_startup.cc,
// core/bridge/bridge_read.cc, core/bridge/dlpack_import.cc); not for other
// files.
#pragma once

#include <Python.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdint>

#include "abi/torchferry.h"
#include "core/bridge/bridge.h"
#include "core/bridge/bump.h"
#include "core/bridge/py_errors.h"

namespace torchferry {
namespace bridge_internal {

// The refusals more than one path gives, in one set of words. Each returns
// false with the Python exception set. Cold and out of line, so that the
// formatting's stack frame stays off the per-tensor read.
[[gnu::cold, gnu::noinline]] inline bool RaiseMetaTensor(const char* what) {
  return RaiseError(PyExc_ValueError,
                    fmt::format("{}: meta tensors carry no data; expected a "
                                "tensor on cpu or cuda",
                                what));
}
[[gnu::cold, gnu::noinline]] inline bool RaiseDtypeNotCarried(
    PyObject* obj, const char* what) {
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}: torchferry does not carry dtype {}; "
                                "expected a float, int, uint or bool dtype",
                                what, Bridge::Get().AttrText(obj, "dtype")));
}
// Functional wrappers and ZeroTensors report elements but own no memory.
[[gnu::cold, gnu::noinline]] inline bool RaiseNoMemory(PyObject* obj,
                                                       const char* what,
                                                       int64_t numel) {
  return RaiseError(PyExc_TypeError,
                    fmt::format("{}: this {} has {} elements but no memory "
                                "(a functional, zero or other storage-less "
                                "tensor); pass a materialized tensor",
                                what, Py_TYPE(obj)->tp_name, numel));
}

inline uint32_t ContiguityFlag(int64_t ndim, const int64_t* shape,
                               const int64_t* strides) {
  int64_t expected = 1;
  for (int64_t d = ndim - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;  // any stride is fine on a size-1 dim
    if (shape[d] == 0) return TF_TENSOR_CONTIGUOUS;
    if (strides[d] != expected) return 0;
    // Only a foreign (DLPack) tensor can get here with sizes whose product
    // overflows; such a tensor is refused later, and is not compact.
    if (__builtin_mul_overflow(expected, shape[d], &expected)) return 0;
  }
  return TF_TENSOR_CONTIGUOUS;
}

inline int64_t Numel(int64_t ndim, const int64_t* shape) {
  int64_t n = 1;
  for (int64_t d = 0; d < ndim; ++d) n *= shape[d];
  return n;
}

}  // namespace bridge_internal
}  // namespace torchferry
