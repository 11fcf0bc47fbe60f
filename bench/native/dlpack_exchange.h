// The DLPack C exchange API (`__dlpack_c_exchange_api__`, DLPack 1.3, torch
// >= 2.10) as the benchmark peers call it, with the structs the core's
// bridge declares (core/bridge/dlpack_abi.h), so that the peers build without
// a recent dlpack.h and read the table exactly as the bridge does.
#pragma once

#include <Python.h>

#include <cstdint>

#include "core/bridge/dlpack_abi.h"

namespace torchferry_bench {

using DLPackExchangeAPI = torchferry::dlpack::ExchangeApi;
using DLManagedTensorVersioned = torchferry::dlpack::ManagedTensorVersioned;
using DLTensor = torchferry::dlpack::Tensor;

// The exchange table of `obj`'s type, looked up once per type as the protocol
// allows (one type is cached: the benchmark converts one type at a time).
// NULL with a Python exception set when the type has none.
inline const DLPackExchangeAPI* ExchangeApiOf(PyObject* obj) {
  static PyTypeObject* cached_type = nullptr;
  static const DLPackExchangeAPI* cached_api = nullptr;
  PyTypeObject* type = Py_TYPE(obj);
  if (type == cached_type) return cached_api;
  PyObject* capsule = PyObject_GetAttrString(reinterpret_cast<PyObject*>(type),
                                             "__dlpack_c_exchange_api__");
  if (capsule == nullptr) return nullptr;
  auto* api = static_cast<const DLPackExchangeAPI*>(
      PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
  Py_DECREF(capsule);
  if (api == nullptr) return nullptr;
  if (api->header.version.major != 1) {
    PyErr_Format(PyExc_RuntimeError,
                 "expected a DLPack exchange API of major version 1, found %u",
                 api->header.version.major);
    return nullptr;
  }
  cached_type = type;
  cached_api = api;
  return api;
}

// One non-owning view of `obj` through the exchange API, the way a consumer
// reads it for the duration of a call: the DLTensor form where the producer
// offers it, else the managed form released at once. 0 on success, -1 with a
// Python exception set.
inline int ExchangeView(const DLPackExchangeAPI* api, PyObject* obj,
                        int64_t* sink) {
  if (api->dltensor_from_py_object_no_sync != nullptr) {
    DLTensor view;
    if (api->dltensor_from_py_object_no_sync(obj, &view) != 0) return -1;
    *sink += view.ndim;
    return 0;
  }
  DLManagedTensorVersioned* managed = nullptr;
  if (api->managed_tensor_from_py_object_no_sync(obj, &managed) != 0) {
    return -1;
  }
  *sink += managed->dl_tensor.ndim;
  if (managed->deleter != nullptr) managed->deleter(managed);
  return 0;
}

}  // namespace torchferry_bench
