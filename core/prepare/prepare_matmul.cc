// matmul's preparation, with torch.matmul's rules: a 1-D input is a row and
// a 1-D other a column, whose dim the result drops; the batch dims (all but
// the last two) broadcast, any count of them. Kernels see only
// [B, m, k] x [B, k, n] -> [B, m, n]: the batch dims whose strides nest in
// all three tensors become B, and the host calls the kernel once per index of
// the others (CallFrame::repeat), as for a GQA product of expanded K/V views
// or operands broadcast in different dims. No operand is ever copied.
#include <fmt/format.h>

#include <algorithm>

#include "core/bridge/bridge_internal.h"
#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/op_description.h"
#include "core/prepare/prepare_parts.h"

namespace torchferry {
namespace {

// The three tensors of the product, in this order everywhere below.
enum { kA, kB, kOut, kTensors };

// One of a product's matrices: rows x cols with their strides.
struct Matrix {
  int64_t rows, cols, row_stride, col_stride;
};

// A size-1 dim: no address depends on its stride; it gets the one a dense
// matrix would have, so that a GEMM library (which refuses a zero or
// ambiguous stride) takes it.
int64_t DenseStride(int64_t size, int64_t stride) {
  return std::max<int64_t>(1, SaturatedProduct({size, stride}));
}

// The matrix in the last two dims of `v`; a 1-D `v` is a row (as_row) or a
// column of one.
Matrix MatrixOf(const tf_tensor& v, bool as_row) {
  if (v.ndim == 1) {
    const int64_t size = v.shape[0], stride = v.strides[0];
    return as_row ? Matrix{1, size, DenseStride(size, stride), stride}
                  : Matrix{size, 1, stride, DenseStride(size, stride)};
  }
  const int r = v.ndim - 2, c = v.ndim - 1;
  Matrix mat{v.shape[r], v.shape[c], v.strides[r], v.strides[c]};
  if (mat.rows == 1) mat.row_stride = DenseStride(mat.cols, mat.col_stride);
  if (mat.cols == 1) mat.col_stride = DenseStride(mat.rows, mat.row_stride);
  return mat;
}

// The output's matrix: its last dims, with the 1-D operands' dims (which
// the result lacks) as size 1.
Matrix OutMatrixOf(const tf_tensor& out, int nbatch, bool has_m, bool has_n,
                   int64_t m, int64_t n) {
  int d = nbatch;
  Matrix mat{m, n, 0, 0};
  if (has_m) mat.row_stride = out.strides[d++];
  if (has_n) mat.col_stride = out.strides[d];
  if (!has_m || m == 1) mat.row_stride = DenseStride(n, mat.col_stride);
  if (!has_n || n == 1) mat.col_stride = DenseStride(m, mat.row_stride);
  return mat;
}

// Batch dims after broadcasting, merged where every tensor's strides nest.
struct Batch {
  int ndim = 0;
  int64_t sizes[kMaxRank];
  int64_t strides[kTensors][kMaxRank];
};

// Merges adjacent dims of `b` that nest in all tensors, and drops size-1
// dims; an empty batch (a size 0) becomes the one dim {0}.
void MergeBatch(Batch* b) {
  Batch merged;
  for (int d = 0; d < b->ndim; ++d) {
    if (b->sizes[d] == 0) {
      merged.ndim = 1;
      merged.sizes[0] = 0;
      for (auto& s : merged.strides) s[0] = 0;
      *b = merged;
      return;
    }
  }
  for (int d = 0; d < b->ndim; ++d) {
    if (b->sizes[d] == 1) continue;
    const int last = merged.ndim - 1;
    bool nests = last >= 0;
    for (int t = 0; nests && t < kTensors; ++t) {
      nests = merged.strides[t][last] ==
              SaturatedProduct({b->strides[t][d], b->sizes[d]});
    }
    if (nests) {
      merged.sizes[last] *= b->sizes[d];
      for (int t = 0; t < kTensors; ++t) {
        merged.strides[t][last] = b->strides[t][d];
      }
      continue;
    }
    for (int t = 0; t < kTensors; ++t) {
      merged.strides[t][merged.ndim] = b->strides[t][d];
    }
    merged.sizes[merged.ndim++] = b->sizes[d];
  }
  *b = merged;
}

bool As3d(CallFrame& f, tf_tensor* v, int64_t batch, int64_t batch_stride,
          const Matrix& mat) {
  int64_t* shape = f.Arena(3);
  int64_t* strides = f.Arena(3);
  if (shape == nullptr || strides == nullptr) {
    return RaiseError(PyExc_ValueError, "matmul(): out of view space");
  }
  shape[0] = batch;
  shape[1] = mat.rows;
  shape[2] = mat.cols;
  strides[0] = batch == 1 ? 0 : batch_stride;
  strides[1] = mat.row_stride;
  strides[2] = mat.col_stride;
  v->ndim = 3;
  v->shape = shape;
  v->strides = strides;
  v->flags = bridge_internal::ContiguityFlag(3, shape, strides);
  return true;
}

bool CannotMultiply(const tf_tensor& a, const tf_tensor& b) {
  return RaiseError(
      PyExc_ValueError,
      fmt::format("matmul(): shapes {} and {} cannot be "
                  "multiplied",
                  ShapeText(a.ndim, a.shape), ShapeText(b.ndim, b.shape)));
}

}  // namespace

bool PrepareMatmul(const OpFunction& fn, const ParsedArgs& args, CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* a = f.Take(args.values[0], "input", false);
  if (a == nullptr || !CheckFloat(op, *a)) return false;
  TensorRef* b = TakeLike(op, "other", args.values[1], f, *a);
  if (b == nullptr) return false;
  const tf_tensor& av = a->view;
  const tf_tensor& bv = b->view;
  if (av.ndim == 0 || bv.ndim == 0) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("matmul(): expected operands of at least "
                                  "1 dim, got shapes {} and {}",
                                  ShapeText(av.ndim, av.shape),
                                  ShapeText(bv.ndim, bv.shape)));
  }
  const Matrix am = MatrixOf(av, /*as_row=*/true);
  const Matrix bm = MatrixOf(bv, /*as_row=*/false);
  if (am.cols != bm.rows) return CannotMultiply(av, bv);

  // Batch dims, right-aligned and broadcast as torch does: a size of 1
  // takes the other's, even 0 (then the product is empty).
  const int na = std::max(av.ndim - 2, 0), nb = std::max(bv.ndim - 2, 0);
  const int nbatch = std::max(na, nb);
  const bool has_m = av.ndim > 1, has_n = bv.ndim > 1;
  const int out_ndim = nbatch + has_m + has_n;
  if (out_ndim > kMaxRank) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("matmul(): expected a result of at most {} "
                                  "dims, got shapes {} and {}",
                                  kMaxRank, ShapeText(av.ndim, av.shape),
                                  ShapeText(bv.ndim, bv.shape)));
  }
  Batch batch;
  batch.ndim = nbatch;
  int64_t out_shape[kMaxRank];
  for (int d = 0; d < nbatch; ++d) {
    const int da = d - (nbatch - na), db = d - (nbatch - nb);
    const int64_t sa = da >= 0 ? av.shape[da] : 1;
    const int64_t sb = db >= 0 ? bv.shape[db] : 1;
    if (sa != sb && sa != 1 && sb != 1) return CannotMultiply(av, bv);
    batch.sizes[d] = out_shape[d] = sa == 1 ? sb : sa;
    batch.strides[kA][d] = sa == 1 ? 0 : av.strides[da];
    batch.strides[kB][d] = sb == 1 ? 0 : bv.strides[db];
  }
  int d = nbatch;
  if (has_m) out_shape[d++] = am.rows;
  if (has_n) out_shape[d] = bm.cols;
  if (!TakeOut(op, args, f, *a, a->dtype, out_ndim, out_shape) ||
      !CheckNoOverlap(op, "input", *a, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "other", *b, *f.out_ref(), false)) {
    return false;
  }
  const Matrix om =
      OutMatrixOf(f.output(), nbatch, has_m, has_n, am.rows, bm.cols);
  for (int i = 0; i < nbatch; ++i) {
    batch.strides[kOut][i] = f.output().strides[i];
  }
  MergeBatch(&batch);

  // The innermost merged dim is the kernel's B; the host repeats the call
  // over the others.
  const int inner = batch.ndim - 1;
  const int64_t bsize = inner >= 0 ? batch.sizes[inner] : 1;
  auto bstride = [&](int t) {
    return inner >= 0 ? batch.strides[t][inner] : 0;
  };
  if (!As3d(f, &a->view, bsize, bstride(kA), am) ||
      !As3d(f, &b->view, bsize, bstride(kB), bm) ||
      !As3d(f, &f.output(), bsize, bstride(kOut), om)) {
    return false;
  }
  if (batch.ndim > 1) {
    CallFrame::Repeat& r = f.repeat();
    r.ndim = batch.ndim - 1;
    r.num_tensors = kTensors;
    r.tensors[kA] = &a->view;
    r.tensors[kB] = &b->view;
    r.tensors[kOut] = &f.output();
    for (int i = 0; i < r.ndim; ++i) {
      r.sizes[i] = batch.sizes[i];
      for (int t = 0; t < kTensors; ++t) r.strides[t][i] = batch.strides[t][i];
    }
  }
  int64_t count = 1;
  for (int i = 0; i < batch.ndim; ++i) count *= batch.sizes[i];
  f.SetInputs({TensorArg(a), TensorArg(b)}, a,
              SaturatedProduct({count, am.rows, bm.cols, am.cols}));
  return true;
}

}  // namespace torchferry
