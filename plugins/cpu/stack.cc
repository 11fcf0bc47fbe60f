// stack: joins count tensors of one shape along a new dimension `dim`.
// Stacking only moves elements, so every dtype shares the copy for its
// element width.
#include <cstdint>
#include <cstring>

#include "call.h"
#include "dtype.h"
#include "join.h"
#include "kernel_table.h"
#include "map.h"
#include "words.h"

namespace torchferry::cpu {
namespace {

// Everything contiguous: out is [outer, count, inner] and each input
// [outer, inner], so the stack is count interleaved block copies, split over
// the host's threads by ranges of out.
void StackContiguous(const tf_tensor_list& xs, int dim, const tf_tensor& out,
                     size_t element_size) {
  const tf_tensor& first = xs.items[0];
  int64_t outer = 1;
  for (int d = 0; d < dim; ++d) outer *= first.shape[d];
  int64_t inner = 1;
  for (int d = dim; d < first.ndim; ++d) inner *= first.shape[d];
  JoinRows(
      xs.count, outer, element_size, DataOf<char>(out),
      [&](int64_t t) { return DataOf<const char>(xs.items[t]); },
      [&](int64_t) { return inner; });
}

template <typename U>
tf_status StackStrided(const tf_call* call, const tf_tensor_list& xs, int dim,
                       const tf_tensor& out) {
  const tf_tensor& first = xs.items[0];
  if (first.ndim > kMaxRank) return TooManyDims(call, "stack", out.ndim);
  // Input t lands in the slice out[..., t, ...] at `dim`: out's strides
  // without `dim`, starting t steps along it.
  int64_t slice_strides[kMaxRank];
  for (int d = 0, s = 0; d < out.ndim; ++d) {
    if (d != dim) slice_strides[s++] = out.strides[d];
  }
  for (int64_t t = 0; t < xs.count; ++t) {
    const View<U> slice{DataOf<U>(out) + t * out.strides[dim], slice_strides,
                        false};
    Map1(first.ndim, first.shape, slice, ViewOf<const U>(xs.items[t]),
         [](U v) { return v; });
  }
  return TF_OK;
}

struct Stack {
  static constexpr const char* kName = "stack";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 1, 1, 1); s != TF_OK) return s;
    const tf_arg& xs_arg = call->inputs[0];
    const tf_arg& dim_arg = call->attrs[0];
    const tf_tensor& out = call->outputs[0];
    if (xs_arg.kind != TF_ARG_TENSOR_LIST || xs_arg.value.list.count < 1) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "stack: expected a tensor list of at least one tensor as "
                  "input 0, found argument kind %d",
                  static_cast<int>(xs_arg.kind));
    }
    const tf_tensor_list& xs = xs_arg.value.list;
    const int ndim = xs.items[0].ndim;
    if (dim_arg.kind != TF_ARG_INT || dim_arg.value.i < 0 ||
        dim_arg.value.i > ndim || out.ndim != ndim + 1 ||
        out.shape[dim_arg.value.i] != xs.count) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "stack: expected an int dim in [0, %d] and out of %d dims "
                  "with size %lld at dim, found dim %lld and out of %d dims",
                  ndim, ndim + 1, static_cast<long long>(xs.count),
                  static_cast<long long>(dim_arg.value.i), out.ndim);
    }
    const int dim = static_cast<int>(dim_arg.value.i);
    if (Numel(out) == 0) return TF_OK;
    bool all_contiguous = IsContiguous(out);
    for (int64_t t = 0; t < xs.count && all_contiguous; ++t) {
      all_contiguous = IsContiguous(xs.items[t]);
    }
    if (all_contiguous) {
      StackContiguous(xs, dim, out, sizeof(T));
      return TF_OK;
    }
    return StackStrided<WordOf<T>>(call, xs, dim, out);
  }
};

constexpr auto kTable = KernelsFor<Stack>(AllTypes{});

}  // namespace

KernelList StackKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
