// cat's and stack's preparation: lists of tensors of one dtype. cat follows
// torch.cat's rules on one dtype. A 1-D tensor of size 0
// beside tensors of another rank is left out, as torch's legacy rule does;
// the kernel sees only the tensors that contribute, all of one rank.
#include <fmt/format.h>

#include <algorithm>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/op_description.h"
#include "core/prepare/prepare_parts.h"

namespace torchferry {
namespace {

bool IsLegacyEmpty(const tf_tensor& v) {
  return v.ndim == 1 && v.shape[0] == 0;
}

int64_t NumelOf(const tf_tensor& v) {
  int64_t n = 1;
  for (int d = 0; d < v.ndim; ++d) n *= v.shape[d];
  return n;
}

}  // namespace

bool PrepareCat(const OpFunction& fn, const ParsedArgs& args, CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* first;
  int64_t count;
  if (!TakeTensorList(op, args.values[0], f, &first, &count)) return false;
  tf_tensor* views = f.list_items();
  // The rank is the first tensor's that is not a legacy empty one.
  int64_t lead = 0;
  while (lead < count - 1 && IsLegacyEmpty(views[lead])) ++lead;
  const int rank = views[lead].ndim;
  for (int64_t i = 0; i < count; ++i) {
    if (views[i].ndim == 0) {
      return RaiseError(PyExc_ValueError,
                        fmt::format("{}(): zero-dimensional tensor (at "
                                    "position {}) cannot be concatenated",
                                    op, i));
    }
  }
  if (rank > kMaxRank) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): expected tensors of at most {} dims, "
                                  "got {}",
                                  op, kMaxRank, rank));
  }
  int64_t dim;
  if (!IntAttr(op, "dim", args.values[1], fn.schema.args[1].default_value.i,
               &dim) ||
      !WrapDim(op, dim, rank, &dim)) {
    return false;
  }
  // Keep the contributing tensors, in order, at the front of views.
  int64_t kept = 0;
  int64_t shape[kMaxRank];
  std::copy(views[lead].shape, views[lead].shape + rank, shape);
  shape[dim] = 0;
  for (int64_t i = 0; i < count; ++i) {
    const tf_tensor& v = views[i];
    if (rank != 1 && IsLegacyEmpty(v)) continue;
    if (v.ndim != rank) {
      return RaiseError(
          PyExc_ValueError,
          fmt::format("{}(): tensors must have the same number "
                      "of dimensions: got {} and {} (tensors[{}] "
                      "has shape {})",
                      op, rank, v.ndim, i, ShapeText(v.ndim, v.shape)));
    }
    for (int d = 0; d < rank; ++d) {
      if (d != dim && v.shape[d] != views[lead].shape[d]) {
        return RaiseError(
            PyExc_ValueError,
            fmt::format("{}(): sizes of tensors must match except in "
                        "dimension {}; expected size {} but got size {} for "
                        "tensors[{}] (shape {}) at dimension {}",
                        op, dim, views[lead].shape[d], v.shape[d], i,
                        ShapeText(v.ndim, v.shape), d));
      }
    }
    // Stride-0 views can make each size huge; their sum must not wrap.
    if (__builtin_add_overflow(shape[dim], v.shape[dim], &shape[dim])) {
      return RaiseError(
          PyExc_ValueError,
          fmt::format("{}(): the sizes along dimension {} add up past "
                      "2^63 - 1 at tensors[{}] (shape {}); expected a "
                      "result that fits in int64",
                      op, dim, i, ShapeText(v.ndim, v.shape)));
    }
    views[kept++] = v;
  }
  if (!TakeOut(op, args, f, *first, first->dtype, rank, shape)) return false;
  for (int64_t i = 0; i < kept; ++i) {
    TensorRef probe = *first;
    probe.view = views[i];
    probe.numel = NumelOf(views[i]);
    if (!CheckNoOverlap(op, "an input", probe, *f.out_ref(), false)) {
      return false;
    }
  }
  f.SetInputs({TensorListArg(views, kept)}, first, f.out_ref()->numel);
  f.AddAttr() = IntArg(dim);
  return true;
}

bool PrepareStack(const OpFunction& fn, const ParsedArgs& args, CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* first;
  int64_t count;
  if (!TakeTensorList(op, args.values[0], f, &first, &count)) return false;
  tf_tensor* views = f.list_items();
  const int rank = first->view.ndim;
  for (int64_t i = 1; i < count; ++i) {
    TensorRef probe = *first;
    probe.view = views[i];
    const std::string what = fmt::format("tensors[{}]", i);
    if (!CheckShape(op, what.c_str(), probe, rank, first->view.shape)) {
      return false;
    }
  }
  int64_t dim;
  if (!IntAttr(op, "dim", args.values[1], fn.schema.args[1].default_value.i,
               &dim) ||
      !WrapDim(op, dim, rank + 1, &dim)) {
    return false;
  }
  if (rank + 1 > kMaxRank) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): tensors of {} dims stack into {}; "
                                  "torchferry takes tensors of at most {} "
                                  "dims (TF_MAX_NDIM)",
                                  op, rank, rank + 1, kMaxRank));
  }
  int64_t shape[kMaxRank];
  for (int d = 0, s = 0; d < rank + 1; ++d) {
    shape[d] = d == dim ? count : first->view.shape[s++];
  }
  if (!TakeOut(op, args, f, *first, first->dtype, rank + 1, shape)) {
    return false;
  }
  for (int64_t i = 0; i < count; ++i) {
    // views[i] mirrors the bridged refs, which sit in the same order.
    TensorRef probe = *first;
    probe.view = views[i];
    probe.numel = first->numel;
    if (!CheckNoOverlap(op, "an input", probe, *f.out_ref(), false)) {
      return false;
    }
  }
  f.SetInputs({TensorListArg(views, count)}, first, f.out_ref()->numel);
  f.AddAttr() = IntArg(dim);
  return true;
}

}  // namespace torchferry
