// Index arithmetic for tensors of arbitrary strides, shared by every kernel
// that walks an iteration shape. The host builds one layout per call and the
// kernel receives it by value, so no metadata ever needs device memory.
#pragma once

#include <cstdint>

#include "abi/torchferry.h"

#if defined(__CUDACC__)
#define TF_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TF_HOST_DEVICE inline
#endif

namespace torchferry::cuda {

// The deepest tensor the kernels take, and so the dimensions a layout holds
// even before merging: every rank the host passes (abi/ABI.md), so that no
// call is refused for its rank. One bound serves both the host-side scratch
// arrays and the layout, since merging only ever removes dimensions. Merging
// adjacent dimensions that are contiguous with each other leaves most tensors
// a dim or two; the kernels loop over the ndim in use only. A layout of five
// tensors is 3 KB of kernel parameters, inside CUDA's 32 KB (CUDA 12.1 and
// later, on every architecture CUDA 13 builds for).
constexpr int kMaxRank = TF_MAX_NDIM;

// N tensors that share one iteration shape, each with its own strides (in
// elements). Dimension 0 is the outermost.
template <int N>
struct StridedLayout {
  int32_t ndim;
  int64_t sizes[kMaxRank];
  int64_t strides[N][kMaxRank];

  // Element offsets of the `linear`-th element (row-major order over sizes)
  // in each tensor. IndexT is 32-bit where the element count allows: integer
  // division is the cost of this loop, and 32-bit division is far cheaper.
  template <typename IndexT>
  TF_HOST_DEVICE void Offsets(IndexT linear, int64_t (&offsets)[N]) const {
    for (int t = 0; t < N; ++t) offsets[t] = 0;
    for (int d = ndim - 1; d > 0; --d) {
      const IndexT size = static_cast<IndexT>(sizes[d]);
      const IndexT quotient = linear / size;
      const int64_t coordinate = static_cast<int64_t>(linear - quotient * size);
      for (int t = 0; t < N; ++t) offsets[t] += coordinate * strides[t][d];
      linear = quotient;
    }
    // The outermost coordinate is what remains: no division needed.
    for (int t = 0; t < N; ++t) {
      offsets[t] += static_cast<int64_t>(linear) * strides[t][0];
    }
  }

  // True when every tensor is one dense run of unit stride.
  TF_HOST_DEVICE bool IsContiguous() const {
    if (ndim != 1) return false;
    for (int t = 0; t < N; ++t) {
      if (strides[t][0] != 1) return false;
    }
    return true;
  }
};

// Builds a layout for tensors of shape `shape` (ndim entries, outermost
// first) whose strides are strides[t][0 .. ndim). Drops dimensions of size 1
// and merges neighbours that are contiguous with each other in every tensor,
// so a dense tensor becomes one dimension. Returns false when more than
// kMaxRank dimensions remain. The caller handles zero-element shapes first.
template <int N>
inline bool BuildLayout(int ndim, const int64_t* shape,
                        const int64_t* const (&strides)[N],
                        StridedLayout<N>* layout) {
  // Collected innermost first, then reversed.
  int kept = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    const int64_t size = shape[d];
    if (size == 1) continue;
    if (kept > 0) {
      const int inner = kept - 1;
      bool mergeable = true;
      for (int t = 0; t < N; ++t) {
        if (strides[t][d] != layout->strides[t][inner] * layout->sizes[inner]) {
          mergeable = false;
          break;
        }
      }
      if (mergeable) {
        layout->sizes[inner] *= size;
        continue;
      }
    }
    if (kept == kMaxRank) return false;
    layout->sizes[kept] = size;
    for (int t = 0; t < N; ++t) layout->strides[t][kept] = strides[t][d];
    ++kept;
  }
  if (kept == 0) {
    // A single element: call it a dense run so the fast paths take it.
    layout->ndim = 1;
    layout->sizes[0] = 1;
    for (int t = 0; t < N; ++t) layout->strides[t][0] = 1;
    return true;
  }
  layout->ndim = kept;
  for (int lo = 0, hi = kept - 1; lo < hi; ++lo, --hi) {
    const int64_t size = layout->sizes[lo];
    layout->sizes[lo] = layout->sizes[hi];
    layout->sizes[hi] = size;
    for (int t = 0; t < N; ++t) {
      const int64_t stride = layout->strides[t][lo];
      layout->strides[t][lo] = layout->strides[t][hi];
      layout->strides[t][hi] = stride;
    }
  }
  return true;
}

inline int64_t NumElements(int ndim, const int64_t* shape) {
  int64_t numel = 1;
  for (int d = 0; d < ndim; ++d) numel *= shape[d];
  return numel;
}

}  // namespace torchferry::cuda
