// A small N-d iterator over several operands that share one shape, each with
// its own strides. It drops size-1 dimensions and merges dimensions that are
// laid out back to back in every operand, so that most views (contiguous,
// sliced rows, broadcast rows) end up as a few long inner runs the caller can
// hand to a vectorised loop. Everything lives on the stack: no allocation.
#pragma once

#include <cstdint>

#include "abi/torchferry.h"

namespace torchferry::cpu {

// The deepest tensor the CPU kernels take: every rank the host accepts
// (abi/ABI.md), so that no call the host prepares is refused here for its
// rank. Fixed, so that the iterator's state fits in stack arrays; only the
// entries of the dims in use are ever written or read.
constexpr int kMaxRank = TF_MAX_NDIM;

template <int N>
class StridedWalker {
 public:
  // Returns false when ndim exceeds kMaxRank; the caller reports it.
  bool Init(int ndim, const int64_t* shape,
            const int64_t* const (&strides)[N]) {
    if (ndim > kMaxRank) return false;
    rank_ = 0;
    // Walk from the innermost dimension out, so that dims_[0] is the inner
    // run and merging looks at the dimension just inside.
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t size = shape[d];
      if (size == 1) continue;  // its stride never matters
      if (rank_ > 0 && Mergeable(d, strides)) {
        sizes_[rank_ - 1] *= size;
        continue;
      }
      sizes_[rank_] = size;
      for (int k = 0; k < N; ++k) strides_[rank_][k] = strides[k][d];
      ++rank_;
    }
    return true;
  }

  // The positions the walk covers (1 for a tensor with no dimensions).
  int64_t Size() const {
    int64_t n = 1;
    for (int d = 0; d < rank_; ++d) n *= sizes_[d];
    return n;
  }

  // Calls body(offsets, length, inner_strides) once per inner run, where
  // offsets[k] is operand k's element offset of the run's first element and
  // inner_strides[k] its stride along the run. A tensor with no dimensions
  // (0-dim or all sizes 1) is one run of length 1. The caller skips tensors
  // with zero elements.
  template <typename Body>
  void Run(const Body& body) const {
    RunRange(0, Size(), body);
  }

  // As Run, over positions [first, last) of the walk only (position p is the
  // p-th element Run visits): runs cut at first and last are handed over in
  // part. Threads may each walk their own range of one walker.
  template <typename Body>
  void RunRange(int64_t first, int64_t last, const Body& body) const {
    if (first >= last) return;
    int64_t offsets[N] = {};
    if (rank_ == 0) {
      const int64_t unit[N] = {};
      body(offsets, int64_t{1}, unit);
      return;
    }
    int64_t index[kMaxRank];
    int64_t rest = first;
    for (int d = 0; d < rank_; ++d) {
      // From position 0 (every Run) no division is needed.
      index[d] = rest == 0 ? 0 : rest % sizes_[d];
      rest = rest == 0 ? 0 : rest / sizes_[d];
      for (int k = 0; k < N; ++k) offsets[k] += index[d] * strides_[d][k];
    }
    int64_t remaining = last - first;
    for (;;) {
      const int64_t left = sizes_[0] - index[0];
      const int64_t len = left < remaining ? left : remaining;
      body(offsets, len, strides_[0]);
      remaining -= len;
      if (remaining == 0) return;
      // Back to the start of the run, then one step in the dims outside it.
      for (int k = 0; k < N; ++k) offsets[k] -= index[0] * strides_[0][k];
      index[0] = 0;
      int d = 1;
      for (; d < rank_; ++d) {
        for (int k = 0; k < N; ++k) offsets[k] += strides_[d][k];
        if (++index[d] < sizes_[d]) break;
        for (int k = 0; k < N; ++k) offsets[k] -= strides_[d][k] * sizes_[d];
        index[d] = 0;
      }
      if (d == rank_) return;
    }
  }

 private:
  // Dimension d folds into the run inside it when, in every operand, one
  // step along d lands exactly where the inner run would continue.
  bool Mergeable(int d, const int64_t* const (&strides)[N]) const {
    const int inner = rank_ - 1;
    for (int k = 0; k < N; ++k) {
      if (strides[k][d] != strides_[inner][k] * sizes_[inner]) return false;
    }
    return true;
  }

  int rank_ = 0;
  int64_t sizes_[kMaxRank];  // [0, rank_) set by Init
  int64_t strides_[kMaxRank][N];
};

}  // namespace torchferry::cpu
