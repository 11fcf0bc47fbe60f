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
// k are >= 1.
bool GemmRows(const float* a, GemmOperand as, const float* b, GemmOperand bs,
              float* c, GemmOperand cs, int64_t m, int64_t k, int64_t n);

}  // namespace torchferry::cpu
