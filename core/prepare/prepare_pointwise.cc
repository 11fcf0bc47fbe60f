// The elementwise rules: one shape in and out (abs, silu, ...), operands
// broadcast (add, mul, ...), clamp's bounds, cast, and silu_and_mul (the last
// dim halved).
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/number_tensor.h"
#include "core/prepare/op_description.h"
#include "core/prepare/out_alloc.h"
#include "core/prepare/prepare_parts.h"

namespace torchferry {

bool PrepareSameShape(const OpFunction& fn, const ParsedArgs& args,
                      CallFrame& f) {
  const char* op = fn.name.c_str();
  const bool float_only = fn.entry->dtypes.FloatOnly();
  TensorRef* x = f.Take(args.values[0], "input", false);
  if (x == nullptr || (float_only && !CheckFloat(op, *x)) ||
      !TakeOut(op, args, f, *x, x->dtype, x->view.ndim, x->view.shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(),
                      fn.entry->alias == AliasRule::kExact)) {
    return false;
  }
  f.SetInputs({TensorArg(x)}, x, x->numel);
  return true;
}

bool PrepareBroadcast(const OpFunction& fn, const ParsedArgs& args,
                      CallFrame& f) {
  const char* op = fn.name.c_str();
  const bool exact_alias_ok = fn.entry->alias == AliasRule::kExact;
  TensorRef* x = f.Take(args.values[0], "input", false);
  TensorRef* y = nullptr;
  // mul on float16/bfloat16 by a Python number: torch applies the number in
  // float32, unrounded, so it travels in add's float alpha rather than as a
  // float16 tensor (core/prepare/number_tensor.h): mul(x, s) runs add's
  // kernel as add(-0.0, x, alpha=s): -0.0 + v is v for every v, signed
  // zeros, infinities and NaN included, so the result is x * s rounded once.
  // add's own number is rounded to the dtype, as torch rounds it.
  static constexpr OpId kMul = OpOf("mul"), kAdd = OpOf("add");
  const bool is_mul = fn.id == kMul;
  const bool fold = is_mul && x != nullptr && IsPythonNumber(args.values[1]) &&
                    AppliedInFloat32(x->dtype);
  float folded = 0;
  if (fold) {
    if (!NumberAsFloat32(op, "other", args.values[1], *x, &folded)) {
      return false;
    }
    y = f.number_ref();
    FloatAsTensor(-0.0, *x, f.number_bits(), y);
  } else if (x != nullptr && IsPythonNumber(args.values[1])) {
    // mul(x, 0.5): a 0-dim tensor of x's dtype, broadcast like any other.
    y = f.number_ref();
    if (!NumberAsTensor(op, "other", args.values[1], *x, f.number_bits(), y)) {
      return false;
    }
  } else if (x != nullptr) {
    y = TakeLike(op, "other", args.values[1], f, *x);
  }
  int ndim;
  int64_t shape[kMaxRank];
  static constexpr const char* kNames[2] = {"input", "other"};
  const TensorRef* operands[2] = {x, y};
  if (y == nullptr || !BroadcastShapes(op, *x, *y, &ndim, shape) ||
      !TakeOut(op, args, f, *x, x->dtype, ndim, shape) ||
      !BroadcastTo(op, f, x, ndim, shape) ||
      !BroadcastTo(op, f, y, ndim, shape) ||
      !CheckNoOverlap(op, 2, kNames, operands, *f.out_ref(), exact_alias_ok)) {
    return false;
  }
  // add's alpha follows the tensors, checked into x's dtype as torch does.
  for (int i = 2; i < fn.signature.num_params; ++i) {
    const SchemaArg& a = fn.schema.args[i];
    tf_arg& attr = f.AddAttr();
    const bool ok = args.values[i] != nullptr
                        ? AlphaArg(op, args.values[i], x->dtype, &attr)
                        : DefaultScalarArg(op, a, x->dtype, &attr);
    if (!ok) return false;
  }
  if (fold) {
    f.AddAttr() = FloatArg(folded);
    f.SetInputs({TensorArg(y), TensorArg(x)}, y,
                SaturatedProduct({f.out_ref()->numel, 2}));
    f.set_kernel_op(static_cast<int>(kAdd));
    return true;
  }
  f.SetInputs({TensorArg(x), TensorArg(y)}, x,
              SaturatedProduct({f.out_ref()->numel, 2}));
  return true;
}

bool PrepareClamp(const OpFunction& fn, const ParsedArgs& args, CallFrame& f) {
  const char* op = fn.name.c_str();
  PyObject* bounds[2] = {args.values[1], args.values[2]};
  const char* names[2] = {"min", "max"};
  if ((bounds[0] == nullptr || bounds[0] == Py_None) &&
      (bounds[1] == nullptr || bounds[1] == Py_None)) {
    return RaiseError(PyExc_ValueError,
                      "clamp(): at least one of 'min' or 'max' must not be "
                      "None");
  }
  TensorRef* x = f.Take(args.values[0], "input", false);
  if (x == nullptr) return false;
  TensorRef* bound_refs[2] = {nullptr, nullptr};
  tf_arg bound_args[2] = {NoneArg(), NoneArg()};
  int ndim = x->view.ndim;
  int64_t shape[kMaxRank];
  std::copy(x->view.shape, x->view.shape + ndim, shape);
  for (int i = 0; i < 2; ++i) {
    PyObject* b = bounds[i];
    if (b == nullptr || b == Py_None) {
      bound_args[i] = NoneArg();
    } else if (PyFloat_Check(b) || PyLong_Check(b)) {
      if (!BoundArg(op, names[i], b, x->dtype, &bound_args[i])) {
        return false;
      }
    } else {
      TensorRef* r = TakeLike(op, names[i], b, f, *x);
      if (r == nullptr) return false;
      // Broadcast against what we have so far; a TensorRef stands in for
      // the running shape.
      TensorRef running = *x;
      running.view.ndim = ndim;
      running.view.shape = shape;
      int64_t next[kMaxRank];
      int next_ndim;
      if (!BroadcastShapes(op, running, *r, &next_ndim, next)) return false;
      std::copy(next, next + next_ndim, shape);
      ndim = next_ndim;
      bound_refs[i] = r;
    }
  }
  if (!TakeOut(op, args, f, *x, x->dtype, ndim, shape) ||
      !BroadcastTo(op, f, x, ndim, shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(), true)) {
    return false;
  }
  for (int i = 0; i < 2; ++i) {
    TensorRef* r = bound_refs[i];
    if (r == nullptr) continue;
    if (!BroadcastTo(op, f, r, ndim, shape) ||
        !CheckNoOverlap(op, names[i], *r, *f.out_ref(), true)) {
      return false;
    }
    bound_args[i] = TensorArg(r);
  }
  f.SetInputs({TensorArg(x), bound_args[0], bound_args[1]}, x,
              SaturatedProduct({f.out_ref()->numel, 2}));
  return true;
}

bool PrepareCast(const OpFunction& fn, const ParsedArgs& args, CallFrame& f) {
  const char* op = fn.name.c_str();
  if (args.out == nullptr || args.out == Py_None) {
    return RaiseError(PyExc_TypeError,
                      "cast() missing required argument 'out': the target "
                      "dtype is out's dtype");
  }
  TensorRef* x = f.Take(args.values[0], "input", false);
  // kNoDtype: out may have any dtype; it is the cast's target.
  if (x == nullptr ||
      !TakeOut(op, args, f, *x, kNoDtype, x->view.ndim, x->view.shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(), false)) {
    return false;
  }
  f.SetInputs({TensorArg(x)}, x, x->numel);
  return true;
}

bool PrepareSiluAndMul(const OpFunction& fn, const ParsedArgs& args,
                       CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* x = f.Take(args.values[0], "input", false);
  if (x == nullptr || !CheckFloat(op, *x)) return false;
  const int ndim = x->view.ndim;
  if (ndim < 1 || ndim > kMaxRank || x->view.shape[ndim - 1] % 2 != 0) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("silu_and_mul(): expected input with at least one dim "
                    "and an even last dim, got shape {}",
                    ShapeText(ndim, x->view.shape)));
  }
  int64_t shape[kMaxRank];
  std::copy(x->view.shape, x->view.shape + ndim, shape);
  shape[ndim - 1] /= 2;
  if (!TakeOut(op, args, f, *x, x->dtype, ndim, shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(), false)) {
    return false;
  }
  f.SetInputs({TensorArg(x)}, x, x->numel);
  return true;
}

}  // namespace torchferry
