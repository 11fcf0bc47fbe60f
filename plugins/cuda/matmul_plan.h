// How a row-major matmul out[B, m, n] = a[B, m, k] @ b[B, k, n] of arbitrary
// strides maps onto one column-major cuBLAS strided-batched GEMM, or why it
// cannot. Pure arithmetic on shapes and strides, so it is tested on the host.
#pragma once

#include <cstdint>

namespace torchferry::cuda {

// One 3-D operand as the host hands it over: sizes and strides in elements.
struct MatrixView {
  int64_t batch, rows, cols;
  int64_t batch_stride, row_stride, col_stride;
};

// A cuBLAS operand: the column-major matrix M that cuBLAS reads, with
// op(M) = M or M^T.
struct GemmOperand {
  bool transpose;
  int64_t ld;
  int64_t batch_stride;
};

// C = op(A) op(B) in cuBLAS's terms; C is (m x n) column-major with ldc.
// When `swapped`, cuBLAS's A is our b and its B our a: it computes out^T =
// b^T a^T, which is how a row-major out is written.
struct GemmPlan {
  bool swapped;
  int64_t m, n, k;
  GemmOperand a, b;
  int64_t ldc;
  int64_t batch_stride_c;
  int64_t batch;
};

// Fills `plan` and returns true, or returns false with `why` saying which
// operand has a layout cuBLAS cannot read (neither of its two innermost dims
// has unit stride, or the other stride is too small for a leading dim). The
// caller handles empty shapes and k == 0 first, and checks int32 limits.
bool PlanGemm(const MatrixView& a, const MatrixView& b, const MatrixView& out,
              GemmPlan* plan, const char** why);

}  // namespace torchferry::cuda
