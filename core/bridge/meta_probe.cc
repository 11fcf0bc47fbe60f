#include "core/bridge/meta_probe.h"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "core/bridge/impl_words.h"
#include "loader/environment.h"
#include "loader/loader.h"

namespace torchferry {
namespace {

// What the getters say of one calibration tensor, and its TensorImpl.
struct Known {
  const char* impl = nullptr;
  int32_t dtype = -1;
  int64_t ndim = -1;
  int64_t* sizes = nullptr;
  int64_t* strides = nullptr;
};

}  // namespace

void MetaProbe::Calibrate(PyObject* torch_module, const AotiApi* api,
                          Py_ssize_t impl_bytes, Py_ssize_t keyset_at,
                          uint64_t negative_key) {
  keyset_at_ = keyset_at;
  std::vector<PyObject*> owned;
  auto finish = [&](bool ok, std::string why) {
    ok_ = ok;
    detail_ = ok ? fmt::format(
                       "dtype at byte {}, sizes and strides at byte {} of "
                       "TensorImpl, read for tensors whose keys lie within "
                       "{:#x}",
                       dtype_at_, sizes_at_, plain_keys_)
                 : why + "; reading them through the AOTI getters instead";
    for (PyObject* o : owned) Py_XDECREF(o);
    PyErr_Clear();
  };
  const char* forced = ReadEnvironment(EnvVar::kTensorMeta);
  if (forced != nullptr && std::string(forced) == "getters") {
    return finish(false, "forced by TORCHFERRY_TENSOR_META=getters");
  }
  if (impl_bytes <= 0) {
    return finish(false, "the TensorImpl's extent is unknown (no key set)");
  }
  // Every dim count from 0 to 6 (6 is past SizesAndStrides' inline buffer),
  // six dtypes, a permuted view and a tensor that requires grad: the
  // offsets must hold for all of them, and their keys make the plain set.
  auto make = [&](const char* code) -> PyObject* {
    PyObject* globals = PyDict_New();
    PyObject* t = nullptr;
    if (globals != nullptr &&
        PyDict_SetItemString(globals, "torch", torch_module) == 0) {
      t = PyRun_String(code, Py_eval_input, globals, globals);
    }
    Py_XDECREF(globals);
    owned.push_back(t);
    return t;
  };
  PyObject* probes[] = {
      make("torch.empty(2, 3, 5)"),
      make("torch.empty(2, 3, 5).permute(2, 0, 1)"),
      make("torch.empty(7, dtype=torch.int64)"),
      make("torch.empty((), dtype=torch.float16)"),
      make("torch.empty(4, 9, dtype=torch.bfloat16)"),
      make("torch.empty(1, 2, 3, 2, 1, dtype=torch.bool)"),
      make("torch.empty(2, 1, 3, 1, 2, 2, dtype=torch.uint8)[:, :, 1:]"),
      make("torch.empty(3, 4, requires_grad=True)"),
      make("torch.empty(5, 6, 7, 8)"),
  };
  std::vector<Known> known;
  for (PyObject* p : probes) {
    Known k;
    k.impl = p ? TensorImplOf(p) : nullptr;
    if (k.impl == nullptr) {
      return finish(false, "the calibration tensors could not be made");
    }
    // A handle is a pointer to an at::Tensor, which is one pointer: the
    // TensorImpl*. Give the getters exactly that.
    const char* impl = k.impl;
    auto h = reinterpret_cast<AtenTensorHandle>(&impl);
    if (api->get_dtype(h, &k.dtype) != 0 || api->get_dim(h, &k.ndim) != 0 ||
        api->get_sizes(h, &k.sizes) != 0 ||
        api->get_strides(h, &k.strides) != 0) {
      return finish(false, "the AOTI getters failed on a calibration tensor");
    }
    plain_keys_ |= WordAt<uint64_t>(k.impl, keyset_at);
    known.push_back(k);
  }
  if (negative_key == 0 || (plain_keys_ & negative_key) != 0) {
    return finish(false,
                  "the negative bit is unknown or among a plain "
                  "tensor's keys");
  }
  // The sizes: the one word that holds each tensor's dim and is followed by
  // the very buffer the getters hand out (pointers compared, not values).
  constexpr Py_ssize_t kSizesAndStrides = 8 + 2 * kInlineDims * 8;
  int matches = 0;
  for (Py_ssize_t off = sizeof(void*); off + kSizesAndStrides <= impl_bytes;
       off += 8) {
    bool all = true;
    for (const Known& k : known) {
      const char* buffer = k.impl + off + 8;
      const int64_t* sizes = k.ndim <= kInlineDims
                                 ? reinterpret_cast<const int64_t*>(buffer)
                                 : WordAt<const int64_t*>(buffer, 0);
      // Strides are placed only once sizes is known to be the getters' (not
      // null, as a heap word that is not a pointer may be).
      all = all && WordAt<int64_t>(k.impl, off) == k.ndim && sizes == k.sizes &&
            sizes + (k.ndim <= kInlineDims ? kInlineDims : k.ndim) == k.strides;
    }
    if (all) {
      sizes_at_ = off;
      ++matches;
    }
  }
  if (matches != 1) {
    return finish(false, fmt::format("{} TensorImpl words hold the sizes "
                                     "and strides (expected 1)",
                                     matches));
  }
  // The dtype: a caffe2::TypeMeta, whose 16-bit index is the ScalarType.
  matches = 0;
  for (Py_ssize_t off = sizeof(void*); off + 2 <= impl_bytes; off += 2) {
    bool all = true;
    for (const Known& k : known) {
      all = all && WordAt<uint16_t>(k.impl, off) == k.dtype;
    }
    if (all) {
      dtype_at_ = off;
      ++matches;
    }
  }
  if (matches != 1) {
    return finish(false, fmt::format("{} TensorImpl words hold the dtype "
                                     "(expected 1)",
                                     matches));
  }
  finish(true, "");
}

}  // namespace torchferry
