// Reductions along one dimension ("rows"), shared by rms_norm and softmax.
// Short rows get a warp each, several warps to a block; long rows get a whole
// block. Every thread of a row ends with the row's result.
//
// A thread's own share of a row is summed in a LongSum: no accumulator in
// the op's math type adds more than kSerialTerms terms in sequence before
// it is folded into a float64 total (the CPU plugin's bound, sums.h), so a
// float32 sum neither stops growing at 2**24 times its terms nor drifts on
// a long row; the threads' totals then meet in a tree of float64 adds.
#pragma once

#include <cstdint>

#include "plugins/cuda/launch_config.h"
#include "plugins/cuda/strided_layout.h"

namespace torchferry::cuda {

// Rows up to this length get one warp each.
constexpr int64_t kWarpRowLimit = 1024;
constexpr int kWarpRowsPerBlock = 8;
constexpr int kBlockRowThreads = 512;

constexpr int kSerialTerms = 256;

template <typename A>
struct LongSum {
  A part = 0;
  double total = 0;
  int count = 0;

  __device__ __forceinline__ void Add(A term) {
    part += term;
    if (++count == kSerialTerms) {
      total += static_cast<double>(part);
      part = 0;
      count = 0;
    }
  }
  __device__ __forceinline__ double Value() const {
    return total + static_cast<double>(part);
  }
};

struct Plus {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return a + b;
  }
};

// Ignores NaN; a NaN element still poisons the row through exp(NaN - max).
struct Max {
  template <typename A>
  __device__ __forceinline__ A operator()(A a, A b) const {
    return b > a ? b : a;
  }
};

template <int kThreadsPerRow, typename A, typename Op>
__device__ __forceinline__ A RowReduce(A value, Op op) {
  static_assert(kThreadsPerRow == 32 || kThreadsPerRow % 32 == 0,
                "rows are reduced by whole warps");
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  if constexpr (kThreadsPerRow > 32) {
    constexpr int kWarps = kThreadsPerRow / 32;
    __shared__ A partial[kWarps];
    // A previous reduction in this block may still be reading `partial`.
    __syncthreads();
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = value;
    __syncthreads();
    value = partial[0];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) value = op(value, partial[w]);
  }
  return value;
}

// Blocks for `rows` rows of the given shape of work.
inline unsigned RowGrid(int64_t rows, int rows_per_block) {
  int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return static_cast<unsigned>(blocks);
}

}  // namespace torchferry::cuda
