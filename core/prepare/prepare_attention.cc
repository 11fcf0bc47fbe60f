// The preparation rules of the attention ops: rotary_embedding (kRotary) and
// scaled_dot_product_attention (kAttention). Both present every tensor to
// the kernel at one rank, with stride 0 where a tensor broadcasts, so that a
// kernel walks one index space and never reasons about broadcasting.
#include "core/prepare/prepare_attention.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/op_description.h"
#include "core/prepare/prepare_parts.h"

namespace torchferry {
namespace {

// True when `v`'s shape broadcasts to `shape` (of `ndim` dims) without
// growing it: aligned from the right, each dim is 1 or shape's.
bool BroadcastsTo(const tf_tensor& v, int ndim, const int64_t* shape) {
  if (v.ndim > ndim) return false;
  for (int d = 0; d < v.ndim; ++d) {
    const int64_t size = v.shape[d];
    const int64_t want = shape[ndim - v.ndim + d];
    if (size != 1 && size != want) return false;
  }
  return true;
}

// The output view at `ndim` dims (leading dims of size 1 prepended), for a
// kernel that sees every tensor at one rank.
bool OutputAtRank(const char* op, CallFrame& f, int ndim) {
  if (f.output().ndim == ndim) return true;
  TensorRef probe = *f.out_ref();
  probe.view = f.output();
  int64_t shape[kMaxRank];
  const int pad = ndim - f.output().ndim;
  for (int d = 0; d < ndim; ++d) {
    shape[d] = d < pad ? 1 : f.output().shape[d - pad];
  }
  if (!BroadcastTo(op, f, &probe, ndim, shape)) return false;
  f.output() = probe.view;
  return true;
}

bool BoolAttr(const OpFunction& fn, const ParsedArgs& args, int index,
              DtypeIndex dtype, bool* value) {
  tf_arg arg;
  if (!DeclaredAttr(fn.name.c_str(), *fn.params[index], args.values[index],
                    dtype, &arg)) {
    return false;
  }
  *value = arg.value.i != 0;
  return true;
}

}  // namespace

bool PrepareRotary(const OpFunction& fn, const ParsedArgs& args, CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* x = f.Take(args.values[0], "input", false);
  if (x == nullptr || !CheckFloat(op, *x)) return false;
  TensorRef* cos = TakeLike(op, "cos", args.values[1], f, *x);
  if (cos == nullptr) return false;
  TensorRef* sin = TakeLike(op, "sin", args.values[2], f, *x);
  if (sin == nullptr) return false;
  const int ndim = x->view.ndim;
  if (ndim < 1) {
    return RaiseError(PyExc_ValueError,
                      "rotary_embedding(): expected input with at least one "
                      "dim (the head dim), got a 0-dim tensor");
  }
  const tf_tensor& cv = cos->view;
  if (cv.ndim < 1) {
    return RaiseError(PyExc_ValueError,
                      "rotary_embedding(): expected cos and sin with at least "
                      "one dim (the rotary dim r / 2), got a 0-dim tensor");
  }
  if (!CheckShape(op, "sin (cos's shape)", *sin, cv.ndim, cv.shape)) {
    return false;
  }
  const int64_t head_dim = x->view.shape[ndim - 1];
  const int64_t half = cv.shape[cv.ndim - 1];
  // half > head_dim / 2, not 2 * half > head_dim: a stride-0 cos of size
  // 2**62 doubles past int64 and wrapped into a check that passed.
  if (half > head_dim / 2) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("rotary_embedding(): expected cos and sin with a last dim "
                    "of at most half input's last dim {} (the rotary dim r = "
                    "2 * cos.shape[-1] <= head dim), got {}",
                    head_dim, half));
  }
  // cos and sin cover every position of input.shape[:-1] by broadcasting:
  // [S, 1, h] against x [B, S, H, D], or [S, h] against x [B, H, S, D].
  int64_t shape[kMaxRank];
  if (ndim > kMaxRank) {
    return RaiseError(PyExc_ValueError, "rotary_embedding(): too many dims");
  }
  std::copy(x->view.shape, x->view.shape + ndim, shape);
  shape[ndim - 1] = half;
  tf_tensor leading = cv;  // cos without its last dim, against x's leading
  leading.ndim = cv.ndim - 1;
  if (!BroadcastsTo(leading, ndim - 1, shape)) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("rotary_embedding(): expected cos and sin of shape [..., "
                    "r/2] whose leading dims broadcast to input's leading "
                    "dims {}, got {}",
                    ShapeText(ndim - 1, x->view.shape),
                    ShapeText(cv.ndim, cv.shape)));
  }
  bool interleaved = false;
  if (!BoolAttr(fn, args, 3, x->dtype, &interleaved) ||
      !TakeOut(op, args, f, *x, x->dtype, ndim, x->view.shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(), /*exact_alias_ok=*/true) ||
      !CheckNoOverlap(op, "cos", *cos, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "sin", *sin, *f.out_ref(), false) ||
      !BroadcastTo(op, f, cos, ndim, shape) ||
      !BroadcastTo(op, f, sin, ndim, shape)) {
    return false;
  }
  tf_arg flag{};
  flag.kind = TF_ARG_BOOL;
  flag.value.i = interleaved ? 1 : 0;
  f.AddAttr() = flag;
  f.SetInputs({TensorArg(x), TensorArg(cos), TensorArg(sin)}, x,
              SaturatedProduct({x->numel, 2}));
  return true;
}

bool PrepareAttention(const OpFunction& fn, const ParsedArgs& args,
                      CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* q = f.Take(args.values[0], "query", false);
  if (q == nullptr || !CheckFloat(op, *q)) return false;
  TensorRef* k = TakeLike(op, "key", args.values[1], f, *q);
  if (k == nullptr) return false;
  TensorRef* v = TakeLike(op, "value", args.values[2], f, *q);
  if (v == nullptr) return false;
  const tf_tensor& qv = q->view;
  const tf_tensor& kv = k->view;
  const tf_tensor& vv = v->view;
  if (qv.ndim < 2 || kv.ndim < 2 || vv.ndim < 2) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}(): expected query, key and value of at least 2 dims "
                    "([..., L, E], [..., S, E], [..., S, Ev]), got shapes {}, "
                    "{} and {}",
                    op, ShapeText(qv.ndim, qv.shape),
                    ShapeText(kv.ndim, kv.shape),
                    ShapeText(vv.ndim, vv.shape)));
  }
  const int64_t L = qv.shape[qv.ndim - 2], E = qv.shape[qv.ndim - 1];
  const int64_t S = kv.shape[kv.ndim - 2];
  const int64_t Ev = vv.shape[vv.ndim - 1];
  if (kv.shape[kv.ndim - 1] != E || vv.shape[vv.ndim - 2] != S) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}(): expected key [..., S, E] with query's E = {} and "
                    "value [..., S, Ev] with key's S, got query {}, key {} "
                    "and value {}",
                    op, E, ShapeText(qv.ndim, qv.shape),
                    ShapeText(kv.ndim, kv.shape),
                    ShapeText(vv.ndim, vv.shape)));
  }
  bool is_causal = false, enable_gqa = false, lower_right = false;
  if (!BoolAttr(fn, args, 4, q->dtype, &is_causal) ||
      !BoolAttr(fn, args, 6, q->dtype, &enable_gqa) ||
      !BoolAttr(fn, args, 7, q->dtype, &lower_right)) {
    return false;
  }
  tf_arg scale_arg;
  if (!DeclaredAttr(op, *fn.params[5], args.values[5], q->dtype, &scale_arg)) {
    return false;
  }
  // With a head dim E of 0 every score is an empty dot product, 0, which
  // torch leaves unscaled (it scales q and k, not the scores): softmax then
  // averages v. The kernel gets scale 1, not the default's 1 / sqrt(0) = inf
  // or a NaN, whose products with 0 would make every score NaN.
  const double scale = E == 0 ? 1.0
                       : scale_arg.kind == TF_ARG_FLOAT
                           ? scale_arg.value.f
                           : 1.0 / std::sqrt(static_cast<double>(E));
  if (lower_right && !is_causal) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): lower_right=True aligns the causal "
                                  "mask, so it needs is_causal=True",
                                  op));
  }
  PyObject* mask_obj = args.values[3];
  const bool has_mask = mask_obj != nullptr && mask_obj != Py_None;
  if (has_mask && is_causal) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): expected either attn_mask or "
                                  "is_causal=True, got both (torch refuses "
                                  "an explicit attn_mask with is_causal)",
                                  op));
  }

  // Every tensor at one rank of at least 3 ([..., H, rows, cols]); the batch
  // dims (and the heads, without GQA) broadcast to out's.
  const int ndim = std::max({3, qv.ndim, kv.ndim, vv.ndim});
  if (ndim > kMaxRank) {
    return RaiseError(PyExc_ValueError, fmt::format("{}(): too many dims", op));
  }
  const int heads = ndim - 3;
  auto dim_of = [&](const tf_tensor& t, int d) -> int64_t {
    const int src = d - (ndim - t.ndim);
    return src < 0 ? 1 : t.shape[src];
  };
  int64_t out_shape[kMaxRank];
  const int64_t hq = dim_of(qv, heads);
  const int64_t hk = dim_of(kv, heads), hv = dim_of(vv, heads);
  bool fits = true;
  for (int d = 0; d < ndim - 2; ++d) {
    if (d == heads && enable_gqa) continue;
    int64_t size = 1;
    for (const tf_tensor* t : {&qv, &kv, &vv}) {
      const int64_t s = dim_of(*t, d);
      if (s == 1) continue;
      if (size != 1 && size != s) fits = false;
      size = s;
    }
    out_shape[d] = size;
  }
  if (!fits) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}(): expected query, key and value whose batch{} dims "
                    "broadcast, got shapes {}, {} and {}",
                    op, enable_gqa ? "" : " and head",
                    ShapeText(qv.ndim, qv.shape), ShapeText(kv.ndim, kv.shape),
                    ShapeText(vv.ndim, vv.shape)));
  }
  if (enable_gqa) {
    // torch's GQA: key and value share Hkv heads, and Hq is a multiple.
    if (hk != hv || hk == 0 || hq % hk != 0) {
      return RaiseError(
          PyExc_ValueError,
          fmt::format("{}(): enable_gqa expects key and value with the same "
                      "number of heads Hkv that divides query's Hq, got Hq = "
                      "{}, key's {} and value's {}",
                      op, hq, hk, hv));
    }
    out_shape[heads] = hq;
  }
  out_shape[ndim - 2] = L;
  out_shape[ndim - 1] = Ev;
  const int out_ndim = std::max({qv.ndim, kv.ndim, vv.ndim});

  // The shapes each input is presented at: out's batch dims, its own heads
  // under GQA, its own last two.
  auto target = [&](const tf_tensor& t, int64_t* shape) {
    std::copy(out_shape, out_shape + ndim - 2, shape);
    if (enable_gqa) shape[heads] = dim_of(t, heads);
    shape[ndim - 2] = t.shape[t.ndim - 2];
    shape[ndim - 1] = t.shape[t.ndim - 1];
  };
  int64_t qs[kMaxRank], ks[kMaxRank], vs[kMaxRank], ms[kMaxRank];
  target(qv, qs);
  target(kv, ks);
  target(vv, vs);
  std::copy(out_shape, out_shape + ndim - 2, ms);
  ms[ndim - 2] = L;
  ms[ndim - 1] = S;

  TensorRef* mask = nullptr;
  if (has_mask) {
    mask = f.Take(mask_obj, "attn_mask", false);
    if (mask == nullptr || !CheckSameDevice(op, "attn_mask", *mask, *q)) {
      return false;
    }
    if (mask->dtype != kBool && mask->dtype != q->dtype) {
      return RaiseError(
          PyExc_TypeError,
          fmt::format("{}(): expected attn_mask of dtype bool (True: attend) "
                      "or query's dtype {} (added to the scores), got {}",
                      op, Dtype(q->dtype).name, Dtype(mask->dtype).name));
    }
    if (!BroadcastsTo(mask->view, ndim, ms)) {
      return RaiseError(
          PyExc_ValueError,
          fmt::format("{}(): expected attn_mask whose shape broadcasts to the "
                      "scores' {}, got {}",
                      op, ShapeText(out_ndim, ms + (ndim - out_ndim)),
                      ShapeText(mask->view.ndim, mask->view.shape)));
    }
  }
  if (!TakeOut(op, args, f, *q, q->dtype, out_ndim,
               out_shape + (ndim - out_ndim)) ||
      !CheckNoOverlap(op, "query", *q, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "key", *k, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "value", *v, *f.out_ref(), false) ||
      (mask != nullptr &&
       !CheckNoOverlap(op, "attn_mask", *mask, *f.out_ref(), false)) ||
      !BroadcastTo(op, f, q, ndim, qs) || !BroadcastTo(op, f, k, ndim, ks) ||
      !BroadcastTo(op, f, v, ndim, vs) ||
      (mask != nullptr && !BroadcastTo(op, f, mask, ndim, ms)) ||
      !OutputAtRank(op, f, ndim)) {
    return false;
  }
  f.AddAttr() = IntArg(!is_causal ? 0 : lower_right ? 2 : 1);
  f.AddAttr() = FloatArg(scale);
  // Scores touched: every query row against every key, twice (q.k and p.v).
  int64_t rows = 1;
  for (int d = 0; d < ndim - 1; ++d)
    rows = SaturatedProduct({rows, out_shape[d]});
  f.SetInputs({TensorArg(q), TensorArg(k), TensorArg(v),
               mask != nullptr ? TensorArg(mask) : NoneArg()},
              q, SaturatedProduct({rows, S, SaturatedSum(E, Ev)}));
  return true;
}

}  // namespace torchferry
