// float32 products of a few rows or a narrow b, b read in place: c[m, n] =
// a[m, k] @ b[k, n] for m <= kGemmRowsMax, or n <= kGemmRowsNarrowN with any
// m, where each row of b is contiguous (b a [K, N] weight, or any view with
// unit column stride).
//
// With a few rows of a, a GEMM library's packing of b into panels is a copy
// of all of b that the product then reads once more: BLIS spends more time
// packing than multiplying at 8 rows, and its one-row path (gemv) reads b in
// place but through a general loop. Here a tile of output rows and columns
// stays in registers across the whole depth while b streams through once,
// row by row (gemm_rows.cc has the tiles and the numbers). A narrow b is
// small enough to stay in L2 while passes of rows of a stream past it,
// where BLIS's packing of a and of b costs more than the product.
#pragma once

#include <cstdint>

#include "gemm.h"

namespace torchferry::cpu {

inline constexpr int64_t kGemmRowsMax = 16;
inline constexpr int64_t kGemmRowsNarrowN = 128;

// Computes c = a @ b and returns true, or returns false without touching c
// when the product is not one of these: m > kGemmRowsMax with n >
// kGemmRowsNarrowN, b's column stride not 1, or a CPU below AVX2. m, n and
// k are >= 1. `whole_n` is the column count of the product this call is a
// block of (n when it is the whole): the depth of its blocks is chosen on
// it, so that a block computes each of its outputs as the whole would.
bool GemmRows(const float* a, GemmOperand as, const float* b, GemmOperand bs,
              float* c, GemmOperand cs, int64_t m, int64_t k, int64_t n,
              int64_t whole_n);

// The columns of the register tiles GemmRows uses for m rows on this CPU,
// or 1 where any split will do (it takes none, or every tile sums in one
// chain). A product split into blocks of columns that start at multiples of
// it, each block one GemmRows call, sums every output in the order the whole
// product does: a column's tile, and with fewer than eight rows its chains
// of sums, depend on where it lies from the call's first column.
int64_t GemmRowsColumnTile(int64_t m);

// Whether GemmRows streams a b of depth k and whole_n columns from beyond
// L2 (1 MiB, half of what this plugin's target CPUs have at least per core):
// then it walks b a few rows at a time and loads and stores each tile of c
// once per few rows, hundreds of times in a call (gemm_rows.cc, BlockDepth).
inline bool GemmRowsStreamsB(int64_t k, int64_t whole_n) {
  constexpr int64_t kResidentBytes = int64_t{1} << 20;
  return k * whole_n * static_cast<int64_t>(sizeof(float)) > kResidentBytes;
}

}  // namespace torchferry::cpu
