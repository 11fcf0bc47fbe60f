#include "plugins/cuda/matmul_plan.h"

#include <algorithm>

namespace torchferry::cuda {
namespace {

// How to read the logical matrix X (rows x cols, strides sr, sc) as op(M) of
// a column-major M. A size-1 dimension's stride never matters, so it is
// free to take whatever value the layout needs.
bool AsOperand(int64_t rows, int64_t cols, int64_t sr, int64_t sc,
               GemmOperand* operand) {
  // M = X: unit stride down each column, ld between columns.
  if (sr == 1 || rows == 1) {
    const int64_t ld = cols == 1 ? std::max<int64_t>(rows, 1) : sc;
    if (ld >= std::max<int64_t>(rows, 1)) {
      operand->transpose = false;
      operand->ld = ld;
      return true;
    }
  }
  // M = X^T: unit stride along each row, ld between rows.
  if (sc == 1 || cols == 1) {
    const int64_t ld = rows == 1 ? std::max<int64_t>(cols, 1) : sr;
    if (ld >= std::max<int64_t>(cols, 1)) {
      operand->transpose = true;
      operand->ld = ld;
      return true;
    }
  }
  return false;
}

// The output cannot be transposed by cuBLAS: it must be column-major as is.
bool AsOutput(int64_t rows, int64_t cols, int64_t sr, int64_t sc, int64_t* ld) {
  GemmOperand operand;
  if (!AsOperand(rows, cols, sr, sc, &operand) || operand.transpose) {
    return false;
  }
  *ld = operand.ld;
  return true;
}

// A batch of one (an operand shared by every batch entry) reads the same
// matrix each time, whatever stride the view reports.
int64_t BatchStride(const MatrixView& view) {
  return view.batch == 1 ? 0 : view.batch_stride;
}

}  // namespace

bool PlanGemm(const MatrixView& a, const MatrixView& b, const MatrixView& out,
              GemmPlan* plan, const char** why) {
  plan->batch = out.batch;
  plan->batch_stride_c = BatchStride(out);
  const MatrixView* first;
  const MatrixView* second;
  // Row-major out (the usual case): cuBLAS writes out^T = b^T a^T, an
  // (n x m) column-major matrix in the same memory.
  if (AsOutput(out.cols, out.rows, out.col_stride, out.row_stride,
               &plan->ldc)) {
    plan->swapped = true;
    plan->m = out.cols;
    plan->n = out.rows;
    plan->k = a.cols;
    if (!AsOperand(b.cols, b.rows, b.col_stride, b.row_stride, &plan->a)) {
      *why = "b";
      return false;
    }
    if (!AsOperand(a.cols, a.rows, a.col_stride, a.row_stride, &plan->b)) {
      *why = "a";
      return false;
    }
    first = &b;
    second = &a;
  } else if (AsOutput(out.rows, out.cols, out.row_stride, out.col_stride,
                      &plan->ldc)) {
    plan->swapped = false;
    plan->m = out.rows;
    plan->n = out.cols;
    plan->k = a.cols;
    if (!AsOperand(a.rows, a.cols, a.row_stride, a.col_stride, &plan->a)) {
      *why = "a";
      return false;
    }
    if (!AsOperand(b.rows, b.cols, b.row_stride, b.col_stride, &plan->b)) {
      *why = "b";
      return false;
    }
    first = &a;
    second = &b;
  } else {
    *why = "out";
    return false;
  }
  plan->a.batch_stride = BatchStride(*first);
  plan->b.batch_stride = BatchStride(*second);
  return true;
}

}  // namespace torchferry::cuda
