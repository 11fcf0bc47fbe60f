// cat: the inputs, one after another along `dim`. Each input is copied into
// its slice of out as raw words, so one kernel per element width serves
// every dtype.
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

// True when every tensor is contiguous and the inputs tile out exactly
// along dim (what the host guarantees; checked again since the copy below
// trusts it).
bool AllContiguous(const tf_tensor_list& xs, int64_t dim,
                   const tf_tensor& out) {
  if (!IsContiguous(out)) return false;
  int64_t along = 0;
  for (int64_t t = 0; t < xs.count; ++t) {
    const tf_tensor& x = xs.items[t];
    if (x.ndim != out.ndim || !IsContiguous(x)) return false;
    for (int d = 0; d < out.ndim; ++d) {
      if (d != dim && x.shape[d] != out.shape[d]) return false;
    }
    along += x.shape[dim];
  }
  return along == out.shape[dim];
}

// Every tensor contiguous: for each index of the dims before `dim`, out
// holds each input's block of that index in turn, so the blocks are copied
// in that order and out is written once, front to back, as torch does. One
// input at a time wrote out in strided runs, a pass per input:
// [4096, 2048] twice along the last dim took 1.08 (float32) and 1.11
// (float16) of torch's time. Ranges of out split over the host's threads.
void CatContiguous(const tf_tensor_list& xs, int64_t dim, const tf_tensor& out,
                   size_t word) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= out.shape[d];
  for (int64_t d = dim + 1; d < out.ndim; ++d) inner *= out.shape[d];
  JoinRows(
      xs.count, outer, word, DataOf<char>(out),
      [&](int64_t t) { return DataOf<const char>(xs.items[t]); },
      [&](int64_t t) { return xs.items[t].shape[dim] * inner; });
}

struct Cat {
  static constexpr const char* kName = "cat";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 1, 1, 1); s != TF_OK) return s;
    const tf_arg& xs_arg = call->inputs[0];
    const tf_arg& dim_arg = call->attrs[0];
    const tf_tensor& out = call->outputs[0];
    if (xs_arg.kind != TF_ARG_TENSOR_LIST || xs_arg.value.list.count < 1 ||
        dim_arg.kind != TF_ARG_INT || dim_arg.value.i < 0 ||
        dim_arg.value.i >= out.ndim) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "cat: expected a list of at least one tensor and an int dim "
                  "in [0, %d), found argument kinds %d and %d",
                  out.ndim, static_cast<int>(xs_arg.kind),
                  static_cast<int>(dim_arg.kind));
    }
    if (out.ndim > kMaxRank) return TooManyDims(call, kName, out.ndim);
    using W = WordOf<T>;
    const tf_tensor_list& xs = xs_arg.value.list;
    const int64_t dim = dim_arg.value.i;
    if (AllContiguous(xs, dim, out)) {
      CatContiguous(xs, dim, out, sizeof(W));
      return TF_OK;
    }
    int64_t start = 0;  // where the next input begins along dim
    for (int64_t t = 0; t < xs.count; ++t) {
      const tf_tensor& x = xs.items[t];
      if (x.ndim != out.ndim || start + x.shape[dim] > out.shape[dim]) {
        return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                    "cat: input %lld does not fit out along dim %lld",
                    static_cast<long long>(t), static_cast<long long>(dim));
      }
      // out's slice for x: out's strides, starting `start` steps along dim.
      // Compact, and so copied flat, where x and out are and no dim before
      // `dim` has more than one element (or x fills out along dim).
      int64_t outer = 1;
      for (int64_t d = 0; d < dim; ++d) outer *= out.shape[d];
      const bool flat = IsContiguous(x) && IsContiguous(out) &&
                        (outer == 1 || x.shape[dim] == out.shape[dim]);
      const View<W> slice{DataOf<W>(out) + start * out.strides[dim],
                          out.strides, flat};
      Map1(x.ndim, x.shape, slice, ViewOf<const W>(x), [](W v) { return v; });
      start += x.shape[dim];
    }
    return TF_OK;
  }
};

constexpr auto kTable = KernelsFor<Cat>(AllTypes{});

}  // namespace

KernelList CatKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
