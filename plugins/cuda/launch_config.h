// Grid sizing shared by the grid-stride kernels.
#pragma once

#include <cstdint>

namespace torchferry::cuda {

constexpr int kThreadsPerBlock = 256;

// Grid-stride loops cover any size, so the grid stops growing once it fills
// every SM of the largest GPUs many times over.
constexpr int64_t kMaxBlocks = 65536;

// Below this element count, indices (and index + grid stride) fit in 32 bits.
constexpr int64_t kMax32BitIndex = (int64_t{1} << 31) - 1;

inline unsigned GridFor(int64_t work_items) {
  int64_t blocks = (work_items + kThreadsPerBlock - 1) / kThreadsPerBlock;
  if (blocks < 1) blocks = 1;
  if (blocks > kMaxBlocks) blocks = kMaxBlocks;
  return static_cast<unsigned>(blocks);
}

}  // namespace torchferry::cuda
