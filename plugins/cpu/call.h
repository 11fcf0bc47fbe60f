// Reading a tf_call: typed access to its tensors and scalars, and reporting
// failures through the host's error sink. Kernels never throw; every failure
// leaves through Fail().
#pragma once

#include <cstdint>

#include "abi/torchferry.h"
#include "strided.h"

namespace torchferry::cpu {

// Formats the message on the stack and hands it to host->set_error; returns
// `status` so that a kernel can `return Fail(...)`.
tf_status Fail(const tf_call* call, tf_status status, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

// The host checks every call against the op's schema (ABI.md); kernels only
// confirm the counts so that a broken host cannot make them read past the
// argument arrays.
tf_status CheckArity(const tf_call* call, const char* op, int num_inputs,
                     int num_attrs, int num_outputs);

// Reports a tensor deeper than the strided iterator takes.
tf_status TooManyDims(const tf_call* call, const char* op, int ndim);

inline int64_t Numel(const tf_tensor& t) {
  int64_t n = 1;
  for (int d = 0; d < t.ndim; ++d) n *= t.shape[d];
  return n;
}

inline bool IsContiguous(const tf_tensor& t) {
  return (t.flags & TF_TENSOR_CONTIGUOUS) != 0;
}

template <typename T>
inline T* DataOf(const tf_tensor& t) {
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

// The tensor in argument slot `i` (the host guarantees the kind).
inline const tf_tensor& TensorArg(const tf_arg* args, int i) {
  return *args[i].value.tensor;
}

// An operand of an elementwise loop: typed data, strides in elements over the
// loop's shape, and whether it may be indexed flat.
template <typename T>
struct View {
  T* data;
  const int64_t* strides;
  bool contiguous;
};

template <typename T>
inline View<T> ViewOf(const tf_tensor& t) {
  return {DataOf<T>(t), t.strides, IsContiguous(t)};
}

// One value seen at every position of the loop's shape (stride 0 throughout),
// for scalar arguments that stand in for tensors.
inline constexpr int64_t kZeroStrides[kMaxRank] = {};
template <typename T>
inline View<const T> BroadcastValue(const T* value) {
  return {value, kZeroStrides, false};
}

}  // namespace torchferry::cpu
