// The preparation rule of linear (Geometry::kLinear): out = input @
// weight.T + bias for input [..., K], weight [N, K] (nn.Linear's layout) and
// bias [N] or None. Kernels see matmul's shapes: input as [B, M, K], weight
// as the [B, K, N] view weight.t() with batch stride 0, out as [B, M, N], so
// that a plugin's matmul does the product without a copy of the weight and
// only the bias is linear's own.
#include "core/prepare/prepare_linear.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/op_description.h"
#include "core/prepare/prepare_parts.h"

namespace torchferry {
namespace {

// Dims [first, last) of `v` as one dim: true with its size and stride when
// their strides nest (size-1 dims never break nesting), as a reshape without
// a copy would find.
bool Collapse(const tf_tensor& v, int first, int last, int64_t* size,
              int64_t* stride) {
  *size = 1;
  *stride = 0;
  for (int d = first; d < last; ++d) {
    if (v.shape[d] == 0) {  // no elements: any strides will do
      *size = 0;
      return true;
    }
  }
  int64_t inner_size = 1, inner_stride = 0;
  bool any = false;
  for (int d = last - 1; d >= first; --d) {
    const int64_t n = v.shape[d];
    *size *= n;
    if (n == 1) continue;
    if (any && v.strides[d] != SaturatedProduct({inner_stride, inner_size})) {
      return false;
    }
    if (!any) *stride = v.strides[d];
    any = true;
    inner_size = n;
    inner_stride = v.strides[d];
  }
  return true;
}

// The leading dims (all but the last) of `v` as [B, M]: all of them as M
// (kAllInM), the last as M and the others as B (kLastInM), or the last two
// as B and M with the host repeating the call over the others (kLastTwo).
// The first two need the dims they collapse to nest.
enum class Split { kAllInM, kLastInM, kLastTwo };
struct Rows {
  int64_t batch, batch_stride, m, m_stride;
};
bool LeadingAsRows(const tf_tensor& v, Split split, Rows* r) {
  const int lead = v.ndim - 1;
  bool ok = true;
  if (split == Split::kAllInM) {
    r->batch = 1;
    r->batch_stride = 0;
    ok = Collapse(v, 0, lead, &r->m, &r->m_stride);
  } else {
    r->m = v.shape[lead - 1];
    r->m_stride = v.strides[lead - 1];
    if (split == Split::kLastInM) {
      ok = Collapse(v, 0, lead - 1, &r->batch, &r->batch_stride);
    } else {
      r->batch = v.shape[lead - 2];
      r->batch_stride = v.strides[lead - 2];
    }
  }
  // One row: no address depends on its stride; give it the one a dense
  // matrix would have, so that a GEMM library (which refuses a zero stride)
  // still takes it.
  if (r->m == 1)
    r->m_stride = std::max<int64_t>(
        1, SaturatedProduct({v.shape[lead], v.strides[lead]}));
  return ok;
}

bool As3d(CallFrame& f, tf_tensor* v, const Rows& r, int64_t cols,
          int64_t col_stride) {
  int64_t* shape = f.Arena(3);
  int64_t* strides = f.Arena(3);
  if (shape == nullptr || strides == nullptr) {
    return RaiseError(PyExc_ValueError, "linear(): out of view space");
  }
  shape[0] = r.batch;
  shape[1] = r.m;
  shape[2] = cols;
  strides[0] = r.batch_stride;
  strides[1] = r.m_stride;
  strides[2] = col_stride;
  v->ndim = 3;
  v->shape = shape;
  v->strides = strides;
  v->flags = 0;
  return true;
}

}  // namespace

bool PrepareLinear(const OpFunction& fn, const ParsedArgs& args, CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* x = f.Take(args.values[0], "input", false);
  if (x == nullptr || !CheckFloat(op, *x)) return false;
  TensorRef* w = TakeLike(op, "weight", args.values[1], f, *x);
  if (w == nullptr) return false;
  TensorRef* bias = nullptr;
  if (args.values[2] != nullptr && args.values[2] != Py_None) {
    bias = TakeLike(op, "bias", args.values[2], f, *x);
    if (bias == nullptr) return false;
  }
  const tf_tensor& xv = x->view;
  const tf_tensor& wv = w->view;
  if (xv.ndim < 1 || wv.ndim != 2) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}(): expected input [..., in_features] (at least 1-D) "
                    "and weight [out_features, in_features], got shapes {} "
                    "and {}",
                    op, ShapeText(xv.ndim, xv.shape),
                    ShapeText(wv.ndim, wv.shape)));
  }
  const int64_t k = xv.shape[xv.ndim - 1];
  const int64_t n = wv.shape[0];
  if (wv.shape[1] != k) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}(): input's last dim is {} but weight {} has "
                    "in_features {}; expected weight [out_features, {}]",
                    op, k, ShapeText(wv.ndim, wv.shape), wv.shape[1], k));
  }
  if (bias != nullptr && (bias->view.ndim != 1 || bias->view.shape[0] != n)) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}(): expected bias [{}] (weight's out_features), got "
                    "shape {}",
                    op, n, ShapeText(bias->view.ndim, bias->view.shape)));
  }
  int64_t out_shape[kMaxRank];
  if (xv.ndim > kMaxRank) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): input has {} dims; at most {}", op,
                                  xv.ndim, kMaxRank));
  }
  for (int d = 0; d + 1 < xv.ndim; ++d) out_shape[d] = xv.shape[d];
  out_shape[xv.ndim - 1] = n;
  if (!TakeOut(op, args, f, *x, x->dtype, xv.ndim, out_shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "weight", *w, *f.out_ref(), false) ||
      (bias != nullptr &&
       !CheckNoOverlap(op, "bias", *bias, *f.out_ref(), false))) {
    return false;
  }
  // input and out share their leading dims; both must take one split.
  Rows xr{}, outr{};
  bool ok = xv.ndim == 1;
  if (ok) {
    // A 1-D input is one row (see LeadingAsRows for its stride).
    xr = Rows{1, 0, 1,
              std::max<int64_t>(1, SaturatedProduct({k, xv.strides[0]}))};
    outr = Rows{
        1, 0, 1,
        std::max<int64_t>(1, SaturatedProduct({n, f.output().strides[0]}))};
  } else {
    ok = LeadingAsRows(xv, Split::kAllInM, &xr) &&
         LeadingAsRows(f.output(), Split::kAllInM, &outr);
    if (!ok && xv.ndim >= 3) {
      ok = LeadingAsRows(xv, Split::kLastInM, &xr) &&
           LeadingAsRows(f.output(), Split::kLastInM, &outr);
    }
    if (!ok) {
      // At least 4-D (3-D always takes kLastInM): the kernel gets the last
      // two leading dims and the dispatcher repeats it over the others, as
      // matmul does for batch dims that do not nest.
      LeadingAsRows(xv, Split::kLastTwo, &xr);
      LeadingAsRows(f.output(), Split::kLastTwo, &outr);
      CallFrame::Repeat& r = f.repeat();
      r.ndim = xv.ndim - 3;
      r.num_tensors = 2;
      r.tensors[0] = &x->view;
      r.tensors[1] = &f.output();
      for (int d = 0; d < r.ndim; ++d) {
        r.sizes[d] = xv.shape[d];
        r.strides[0][d] = xv.strides[d];
        r.strides[1][d] = f.output().strides[d];
      }
    }
  }
  const int64_t x_col = xv.strides[xv.ndim - 1];
  const int64_t out_col = f.output().strides[f.output().ndim - 1];
  // weight.t(): [K, N] with weight's strides swapped, one for every batch.
  const int64_t w_row = wv.strides[1], w_col = wv.strides[0];
  if (!As3d(f, &x->view, xr, k, x_col) ||
      !As3d(f, &f.output(), outr, n, out_col)) {
    return false;
  }
  Rows wr{xr.batch, 0, k, w_row};
  if (!As3d(f, &w->view, wr, n, w_col)) return false;
  int64_t calls = 1;
  for (int d = 0; d < f.repeat().ndim; ++d) calls *= f.repeat().sizes[d];
  f.SetInputs({TensorArg(x), TensorArg(w),
               bias != nullptr ? TensorArg(bias) : NoneArg()},
              x,
              SaturatedProduct({calls, xr.batch, xr.m, n, SaturatedSum(k, 1)}));
  return true;
}

}  // namespace torchferry
