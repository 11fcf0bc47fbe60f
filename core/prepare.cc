#include "core/prepare.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "core/checks.h"
#include "core/dispatch.h"
#include "core/number_tensor.h"
#include "core/op_functions.h"
#include "core/out_alloc.h"
#include "core/prepare_attention.h"
#include "core/prepare_linear.h"
#include "core/prepare_parts.h"
#include "core/py_errors.h"

namespace torchferry {

// --- pieces shared by the ops (core/prepare_parts.h) ----------------------

tf_arg FloatArg(double value) {
  tf_arg a{};
  a.kind = TF_ARG_FLOAT;
  a.value.f = value;
  return a;
}

tf_arg NoneArg() {
  tf_arg a{};
  a.kind = TF_ARG_NONE;
  return a;
}

// A Python number as the attribute a kernel of `dtype` expects: float for
// float dtypes, int for integer ones (a float bound on an int tensor would
// need type promotion, which torchferry does not do).
bool ScalarArg(const char* op, const char* what, PyObject* value,
               DtypeIndex dtype, tf_arg* arg) {
  *arg = tf_arg{};
  const bool is_number = PyFloat_Check(value) || PyLong_Check(value);
  if (!is_number) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): expected {} to be a number, got {}",
                                  op, what, Py_TYPE(value)->tp_name));
  }
  if (Dtype(dtype).is_float) {
    arg->kind = TF_ARG_FLOAT;
    arg->value.f = PyFloat_AsDouble(value);
    return !PyErr_Occurred();
  }
  if (!PyLong_Check(value)) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): {} is a float but input has integer "
                                  "dtype {}; pass an int",
                                  op, what, Dtype(dtype).name));
  }
  arg->kind = TF_ARG_INT;
  return CheckedInt(op, what, value, dtype, &arg->value.i);
}

// A Scalar argument left out: its schema default, typed as ScalarArg would.
bool DefaultScalarArg(const char* op, const SchemaArg& a, DtypeIndex dtype,
                      tf_arg* arg) {
  *arg = tf_arg{};
  const SchemaDefault& d = a.default_value;
  if (Dtype(dtype).is_float) {
    arg->kind = TF_ARG_FLOAT;
    arg->value.f =
        d.kind == SchemaDefault::kFloat ? d.f : static_cast<double>(d.i);
    return true;
  }
  if (d.kind != SchemaDefault::kInt) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): {} defaults to a float but input "
                                  "has integer dtype {}; pass an int",
                                  op, a.name, Dtype(dtype).name));
  }
  arg->kind = TF_ARG_INT;
  arg->value.i = d.i;
  return true;
}

bool IntAttr(const char* op, const char* what, PyObject* value,
             int64_t default_value, int64_t* result) {
  if (value == nullptr) {
    *result = default_value;
    return true;
  }
  if (!PyLong_Check(value)) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): expected {} to be an int, got {}", op,
                                  what, Py_TYPE(value)->tp_name));
  }
  *result = PyLong_AsLongLong(value);
  return !PyErr_Occurred();
}

bool WrapDim(const char* op, int64_t dim, int64_t rank, int64_t* wrapped) {
  int64_t lo = -rank, hi = rank - 1;
  if (rank == 0) lo = -1, hi = 0;
  if (dim < lo || dim > hi) {
    return RaiseError(PyExc_IndexError,
                      fmt::format("{}(): dimension out of range (expected to "
                                  "be in range of [{}, {}], but got {})",
                                  op, lo, hi, dim));
  }
  *wrapped = dim < 0 ? dim + std::max<int64_t>(rank, 1) : dim;
  return true;
}

bool TakeOutput(const char* op, const char* what, PyObject* out,
                CallFrame& frame, int slot, const TensorRef& like,
                DtypeIndex dtype, int ndim, const int64_t* shape) {
  TensorRef* ref = frame.Take(out, what, /*writable=*/true);
  if (ref == nullptr || !CheckSameDevice(op, what, *ref, like)) return false;
  if (dtype != kNoDtype && ref->dtype != dtype) {
    return RaiseError(
        PyExc_TypeError,
        fmt::format("{}(): expected {} to have dtype {}, got {}", op, what,
                    Dtype(dtype).name, Dtype(ref->dtype).name));
  }
  if (!CheckShape(op, what, *ref, ndim, shape) ||
      !CheckWritable(op, *ref, what)) {
    return false;
  }
  if (ref->is_torch() && !Bridge::Get().versions().CheckWritable(
                             op, what, ref->object, ref->handle())) {
    return false;
  }
  frame.written[slot] = ref;
  frame.outputs[slot] = ref->view;
  frame.num_outputs = std::max(frame.num_outputs, slot + 1);
  return true;
}

namespace {

// A new output like `like` (a torch tensor, or the fuzzer's placeholder).
PyObject* AllocateLike(const char* op, CallFrame& frame, const TensorRef& like,
                       DtypeIndex dtype, int ndim, const int64_t* shape) {
  if (!CheckResultFits(op, dtype, ndim, shape)) return nullptr;
  frame.NotePython();  // torch.empty (modes, hooks) or the gc may run
  return frame.source() != nullptr
             ? frame.source()->Allocate(like, dtype, ndim, shape)
             : AllocateOut(op, like, dtype, ndim, shape);
}

}  // namespace

bool TakeOut(const char* op, const ParsedArgs& args, CallFrame& frame,
             const TensorRef& like, DtypeIndex dtype, int ndim,
             const int64_t* shape) {
  PyObject* out = args.out;
  if (!CheckResultFits(op, dtype, ndim, shape)) return false;
  if (out == nullptr || out == Py_None) {
    out = AllocateLike(op, frame, like, dtype, ndim, shape);
    if (out == nullptr) return false;
    frame.owned_result = out;
  }
  if (!TakeOutput(op, "out", out, frame, 0, like, dtype, ndim, shape)) {
    return false;
  }
  frame.result = out;
  return true;
}

void SetTensorInputs(CallFrame& f, std::initializer_list<TensorRef*> inputs,
                     int64_t work) {
  int i = 0;
  for (TensorRef* r : inputs) SetTensorArg(&f.inputs[i++], r);
  f.num_inputs = i;
  f.dispatch_ref = *inputs.begin();
  f.work = work;
}

TensorRef* TakeLike(const char* op, const char* what, PyObject* obj,
                    CallFrame& frame, const TensorRef& first) {
  TensorRef* ref = frame.Take(obj, what, /*writable=*/false);
  if (ref == nullptr || !CheckSameDevice(op, what, *ref, first) ||
      !CheckSameDtype(op, what, *ref, first)) {
    return nullptr;
  }
  return ref;
}

bool TakeTensorList(const char* op, PyObject* seq, CallFrame& f,
                    TensorRef** first, int64_t* count) {
  if (!PyList_Check(seq) && !PyTuple_Check(seq)) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): expected tensors to be a list or "
                                  "tuple of tensors, got {}",
                                  op, Py_TYPE(seq)->tp_name));
  }
  if (f.keep_alive != nullptr) {
    seq = f.keep_alive;  // the second pass walks the first one's snapshot
  } else if (PyList_Check(seq)) {
    // Bridging an item may run Python (__dlpack__) that mutates the list;
    // walk a snapshot that the frame keeps alive. Taken before any tensor
    // is read, so the gc this allocation may trigger harms nothing.
    seq = PyList_AsTuple(seq);
    if (seq == nullptr) return false;
    f.keep_alive = seq;
  }
  const Py_ssize_t n = PyTuple_GET_SIZE(seq);
  if (n == 0) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}(): expected a non-empty list of tensors", op));
  }
  if (n > (1 << 20)) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): too many tensors", op));
  }
  f.Reserve(static_cast<int>(n) + 1);  // and out
  PyObject** items = &PyTuple_GET_ITEM(seq, 0);
  *first = f.Take(items[0], "tensors[0]", false);
  if (*first == nullptr) return false;
  tf_tensor* views = f.list_items();
  views[0] = (*first)->view;
  for (Py_ssize_t i = 1; i < n; ++i) {
    std::string what = fmt::format("tensors[{}]", i);
    TensorRef* r = TakeLike(op, what.c_str(), items[i], f, **first);
    if (r == nullptr) return false;
    views[i] = r->view;
  }
  *count = n;
  return true;
}

tf_arg TensorListArg(const tf_tensor* items, int64_t count) {
  tf_arg a{};
  a.kind = TF_ARG_TENSOR_LIST;
  a.value.list.items = items;
  a.value.list.count = count;
  return a;
}

namespace {

// --- the ops ---------------------------------------------------------------

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
  SetTensorInputs(f, {x}, x->numel);
  return true;
}

bool PrepareBroadcast(const OpFunction& fn, const ParsedArgs& args,
                      CallFrame& f) {
  const char* op = fn.name.c_str();
  const bool exact_alias_ok = fn.entry->alias == AliasRule::kExact;
  TensorRef* x = f.Take(args.values[0], "input", false);
  TensorRef* y = nullptr;
  // float16/bfloat16 and a Python number: torch applies the number in
  // float32, unrounded, so it travels in add's float alpha rather than as a
  // float16 tensor (core/number_tensor.h). add(x, s, alpha) runs as add(x, 1,
  // alpha * s), the product in float32 as torch forms it; mul(x, s) runs
  // add's kernel as add(-0.0, x, alpha=s): -0.0 + v is v for every v, signed
  // zeros, infinities and NaN included, so the result is x * s rounded once.
  const bool fold = x != nullptr && IsPythonNumber(args.values[1]) &&
                    AppliedInFloat32(x->dtype);
  static constexpr OpId kMul = OpOf("mul"), kAdd = OpOf("add");
  const bool is_mul = fn.id == kMul;
  float folded = 0;
  if (fold) {
    if (!NumberAsFloat32(op, "other", args.values[1], *x, &folded)) {
      return false;
    }
    y = f.number_ref();
    FloatAsTensor(is_mul ? -0.0 : 1.0, *x, f.number_bits(), y);
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
  if (y == nullptr || !BroadcastShapes(op, *x, *y, &ndim, shape) ||
      !TakeOut(op, args, f, *x, x->dtype, ndim, shape) ||
      !BroadcastTo(op, f, x, ndim, shape) ||
      !BroadcastTo(op, f, y, ndim, shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(), exact_alias_ok) ||
      !CheckNoOverlap(op, "other", *y, *f.out_ref(), exact_alias_ok)) {
    return false;
  }
  // Scalar attributes (add's alpha) follow the tensors, typed by x's dtype.
  for (int i = 2; i < fn.signature.num_params; ++i) {
    const SchemaArg& a = fn.schema.args[i];
    const bool ok =
        args.values[i] != nullptr
            ? ScalarArg(op, a.name.c_str(), args.values[i], x->dtype,
                        &f.attrs[f.num_attrs])
            : DefaultScalarArg(op, a, x->dtype, &f.attrs[f.num_attrs]);
    if (!ok) return false;
    ++f.num_attrs;
  }
  if (fold && is_mul) {
    f.attrs[f.num_attrs++] = FloatArg(folded);
    SetTensorInputs(f, {y, x}, SaturatedProduct({f.out_ref()->numel, 2}));
    f.kernel_op = static_cast<int>(kAdd);
    return true;
  }
  if (fold) {  // alpha is a float attribute for every float dtype
    f.attrs[0].value.f =
        static_cast<double>(static_cast<float>(f.attrs[0].value.f) * folded);
  }
  SetTensorInputs(f, {x, y}, SaturatedProduct({f.out_ref()->numel, 2}));
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
  int ndim = x->view.ndim;
  int64_t shape[kMaxRank];
  std::copy(x->view.shape, x->view.shape + ndim, shape);
  for (int i = 0; i < 2; ++i) {
    PyObject* b = bounds[i];
    if (b == nullptr || b == Py_None) {
      f.inputs[1 + i] = NoneArg();
    } else if (PyFloat_Check(b) || PyLong_Check(b)) {
      if (!ScalarArg(op, names[i], b, x->dtype, &f.inputs[1 + i])) {
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
    SetTensorArg(&f.inputs[1 + i], r);
  }
  SetTensorArg(&f.inputs[0], x);
  f.num_inputs = 3;
  f.dispatch_ref = x;
  f.work = SaturatedProduct({f.out_ref()->numel, 2});
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
  f.inputs[0] = TensorListArg(views, count);
  f.num_inputs = 1;
  f.attrs[f.num_attrs++] = IntArg(dim);
  f.dispatch_ref = first;
  f.work = f.out_ref()->numel;
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
  SetTensorInputs(f, {x}, x->numel);
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
  SetTensorInputs(f, {x}, x->numel);
  return true;
}

// The float argument `index` (eps), or its schema default when absent.
bool EpsAttr(const OpFunction& fn, const ParsedArgs& args, int index,
             CallFrame& f, double* eps) {
  *eps = fn.schema.args[index].default_value.f;
  PyObject* e = args.values[index];
  if (e == nullptr || e == Py_None) return true;
  if (!PyFloat_Check(e) && !PyLong_Check(e)) f.NotePython();  // __float__
  *eps = PyFloat_AsDouble(e);
  if (PyErr_Occurred()) {
    const bool too_large = PyErr_ExceptionMatches(PyExc_OverflowError);
    PyErr_Clear();
    if (too_large) {  // an int past float64's range, e.g. 2**2000
      return RaiseError(PyExc_OverflowError,
                        fmt::format("{}(): expected eps to be a float, got an "
                                    "int too large to convert to one",
                                    fn.name));
    }
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): expected eps to be a float, got {}",
                                  fn.name, Py_TYPE(e)->tp_name));
  }
  return true;
}

// The input of a row norm: a float tensor of at least one dim, whose last
// dim is the row.
TensorRef* TakeRowsInput(const char* op, PyObject* value, CallFrame& f) {
  TensorRef* x = f.Take(value, "input", false);
  if (x == nullptr || !CheckFloat(op, *x)) return nullptr;
  if (x->view.ndim < 1) {
    RaiseError(PyExc_ValueError,
               fmt::format("{}(): expected input with at least one dim, got "
                           "a 0-dim tensor",
                           op));
    return nullptr;
  }
  return x;
}

// A row norm's weight: one value per element of x's rows.
TensorRef* TakeRowWeight(const char* op, PyObject* value, CallFrame& f,
                         const TensorRef& x) {
  TensorRef* w = TakeLike(op, "weight", value, f, x);
  const int64_t last = x.view.shape[x.view.ndim - 1];
  if (w == nullptr || !CheckShape(op, "weight", *w, 1, &last)) return nullptr;
  return w;
}

bool PrepareRmsNorm(const OpFunction& fn, const ParsedArgs& args,
                    CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* x = TakeRowsInput(op, args.values[0], f);
  if (x == nullptr) return false;
  const int ndim = x->view.ndim;
  TensorRef* w = TakeRowWeight(op, args.values[1], f, *x);
  if (w == nullptr) return false;
  double eps;
  if (!EpsAttr(fn, args, 2, f, &eps)) return false;
  if (!TakeOut(op, args, f, *x, x->dtype, ndim, x->view.shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "weight", *w, *f.out_ref(), false)) {
    return false;
  }
  f.attrs[f.num_attrs++] = FloatArg(eps);
  SetTensorInputs(f, {x, w}, SaturatedProduct({x->numel, 2}));
  return true;
}

// residual += input, in place, then rms_norm of residual into out. The
// kernel gets residual as its second output, read and written; none of the
// four tensors may overlap another (a residual that aliased input would be
// doubled, not summed).
bool PrepareAddRmsNorm(const OpFunction& fn, const ParsedArgs& args,
                       CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* x = TakeRowsInput(op, args.values[0], f);
  if (x == nullptr) return false;
  const int ndim = x->view.ndim;
  TensorRef* r = f.Take(args.values[1], "residual", /*writable=*/true);
  if (r == nullptr || !CheckSameDevice(op, "residual", *r, *x) ||
      !CheckSameDtype(op, "residual", *r, *x) ||
      !CheckShape(op, "residual", *r, ndim, x->view.shape) ||
      !CheckWritable(op, *r, "residual")) {
    return false;
  }
  if (r->is_torch() && !Bridge::Get().versions().CheckWritable(
                           op, "residual", r->object, r->handle())) {
    return false;
  }
  TensorRef* w = TakeRowWeight(op, args.values[2], f, *x);
  if (w == nullptr) return false;
  double eps;
  if (!EpsAttr(fn, args, 3, f, &eps) ||
      !TakeOut(op, args, f, *x, x->dtype, ndim, x->view.shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "weight", *w, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "residual", *r, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "input", *x, *r, false, "residual") ||
      !CheckNoOverlap(op, "weight", *w, *r, false, "residual")) {
    return false;
  }
  f.written[1] = r;
  f.outputs[1] = r->view;
  f.num_outputs = 2;
  f.attrs[f.num_attrs++] = FloatArg(eps);
  SetTensorInputs(f, {x, w}, SaturatedProduct({x->numel, 3}));
  return true;
}

bool PrepareSoftmax(const OpFunction& fn, const ParsedArgs& args,
                    CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* x = f.Take(args.values[0], "input", false);
  if (x == nullptr || !CheckFloat(op, *x)) return false;
  int64_t dim;
  if (!IntAttr(op, "dim", args.values[1], fn.schema.args[1].default_value.i,
               &dim) ||
      !WrapDim(op, dim, x->view.ndim, &dim) ||
      !TakeOut(op, args, f, *x, x->dtype, x->view.ndim, x->view.shape) ||
      !CheckNoOverlap(op, "input", *x, *f.out_ref(), false)) {
    return false;
  }
  if (x->view.ndim == 0) {  // the ABI promises ndim >= 1: present as [1]
    static int64_t one[1] = {1};
    x->view.ndim = 1;
    x->view.shape = one;
    x->view.strides = one;
    f.output().ndim = 1;
    f.output().shape = one;
    f.output().strides = one;
  }
  f.attrs[f.num_attrs++] = IntArg(dim);
  SetTensorInputs(f, {x}, SaturatedProduct({x->numel, 3}));
  return true;
}

// --- ops a plugin declares (ABI 1.1) ---------------------------------------

}  // namespace

// A non-tensor argument as its schema type asks: int, float, bool, or a
// Scalar typed by the first tensor's dtype; None where the schema allows it.
bool DeclaredAttr(const char* op, const SchemaArg& a, PyObject* value,
                  DtypeIndex dtype, tf_arg* arg) {
  *arg = tf_arg{};
  if (value == nullptr) {  // absent: the schema's default
    const SchemaDefault& d = a.default_value;
    if (d.kind == SchemaDefault::kNone) return true;  // TF_ARG_NONE
    switch (a.type) {
      case ArgType::kInt:
        *arg = IntArg(d.i);
        return true;
      case ArgType::kFloat:
        *arg = FloatArg(
            d.kind == SchemaDefault::kFloat ? d.f : static_cast<double>(d.i));
        return true;
      case ArgType::kBool:
        arg->kind = TF_ARG_BOOL;
        arg->value.i = d.i;
        return true;
      default:
        return DefaultScalarArg(op, a, dtype, arg);
    }
  }
  if (value == Py_None && a.optional) return true;
  const char* expected = nullptr;
  switch (a.type) {
    case ArgType::kInt:
      if (PyLong_Check(value) && !PyBool_Check(value)) {
        int64_t v;
        if (!IntAttr(op, a.name.c_str(), value, 0, &v)) return false;
        *arg = IntArg(v);
        return true;
      }
      expected = "an int";
      break;
    case ArgType::kFloat:
      if ((PyFloat_Check(value) || PyLong_Check(value)) &&
          !PyBool_Check(value)) {
        *arg = FloatArg(PyFloat_AsDouble(value));
        return !PyErr_Occurred();
      }
      expected = "a float";
      break;
    case ArgType::kBool:
      if (PyBool_Check(value)) {
        arg->kind = TF_ARG_BOOL;
        arg->value.i = value == Py_True;
        return true;
      }
      expected = "a bool";
      break;
    default:
      return ScalarArg(op, a.name.c_str(), value, dtype, arg);
  }
  return RaiseError(
      PyExc_TypeError,
      fmt::format("{}(): expected {} to be {}{}, got {}", op, a.name, expected,
                  a.optional ? " or None" : "", Py_TYPE(value)->tp_name));
}

namespace {

// Checks one spec a plugin's infer gave: a dtype of ABI.md, a rank up to
// TF_MAX_NDIM and sizes whose tensor a device could hold. `what` is "" or
// "output 1 ", for messages.
bool CheckSpec(const KernelEntry& kernel, const char* op, const char* what,
               const tf_tensor_spec& spec, DtypeIndex* dtype) {
  auto who = [&] { return fmt::format("{}: {}()", kernel.plugin->name, op); };
  *dtype = DtypeFromDlpack(spec.dtype.code, spec.dtype.bits, spec.dtype.lanes);
  if (*dtype == kNoDtype) {
    return RaiseError(PyExc_RuntimeError,
                      fmt::format("{}: infer gave {}an unknown dtype (code "
                                  "{}, bits {}, lanes {}); expected a dtype "
                                  "from ABI.md",
                                  who(), what, spec.dtype.code, spec.dtype.bits,
                                  spec.dtype.lanes));
  }
  if (spec.ndim < 0 || spec.ndim > TF_MAX_NDIM) {
    return RaiseError(PyExc_RuntimeError,
                      fmt::format("{}: infer gave {}ndim {}; expected 0 to {}",
                                  who(), what, spec.ndim, TF_MAX_NDIM));
  }
  // A tensor's bytes must fit an allocation; 2**48 is far past any device.
  uint64_t bytes = static_cast<uint64_t>(Dtype(*dtype).itemsize);
  for (int d = 0; d < spec.ndim; ++d) {
    const int64_t size = spec.shape[d];
    if (size < 0 ||
        __builtin_mul_overflow(bytes, static_cast<uint64_t>(size), &bytes) ||
        bytes > (uint64_t{1} << 48)) {
      return RaiseError(
          PyExc_RuntimeError,
          fmt::format("{}: infer gave {}shape {}; expected sizes >= 0 whose "
                      "tensor fits in 2**48 bytes",
                      who(), what, ShapeText(spec.ndim, spec.shape)));
    }
  }
  return true;
}

// Calls the plugin's infer and checks what it gave: each return's dtype and
// shape, from which out= is checked or allocated. Nothing is allocated when
// infer fails or gives something no tensor can be.
bool InferOutputs(const OpFunction& fn, const KernelEntry& kernel, CallFrame& f,
                  int num_specs, tf_tensor_spec* specs, DtypeIndex* dtypes) {
  const char* op = fn.name.c_str();
  ErrorSink sink;
  const tf_call call = f.MakeCall(kernel.kernel_data, nullptr, &sink,
                                  /*with_outputs=*/false);
  for (int i = 0; i < num_specs; ++i) {
    specs[i] = tf_tensor_spec{};
    specs[i].ndim = -1;
  }
  const tf_status status = kernel.infer(&call, specs, num_specs);
  if (status != TF_OK) {
    return RaiseError(ExceptionFor(status),
                      fmt::format("{}: {}(): {}", kernel.plugin->name, op,
                                  sink.message.empty()
                                      ? fmt::format("infer failed with status "
                                                    "{} and no message",
                                                    status)
                                      : sink.message));
  }
  static constexpr const char* kWhat[kMaxSchemaReturns] = {
      "output 0 ", "output 1 ", "output 2 ", "output 3 "};
  for (int i = 0; i < num_specs; ++i) {
    const char* what = num_specs == 1 ? "" : kWhat[i];
    if (!CheckSpec(kernel, op, what, specs[i], &dtypes[i])) return false;
  }
  return true;
}

// How messages name the returns of an op with several.
constexpr const char* kOutNames[kMaxSchemaReturns] = {"out[0]", "out[1]",
                                                      "out[2]", "out[3]"};

// The outputs of an op with several returns: out= is None (each is
// allocated, and the tuple of them kept for a second pass) or a tuple or
// list of that many tensors.
bool TakeOuts(const char* op, const ParsedArgs& args, CallFrame& f,
              const TensorRef& like, int n, const tf_tensor_spec* specs,
              const DtypeIndex* dtypes) {
  PyObject* out = args.out;
  if (out == nullptr || out == Py_None) {
    f.NotePython();  // PyTuple_New may run the gc, and its callbacks
    PyObject* made = PyTuple_New(n);
    if (made == nullptr) return false;
    f.owned_result = made;
    for (int i = 0; i < n; ++i) {
      PyObject* t =
          AllocateLike(op, f, like, dtypes[i], specs[i].ndim, specs[i].shape);
      if (t == nullptr) return false;
      PyTuple_SET_ITEM(made, i, t);
    }
    out = made;
  } else if (PyList_Check(out)) {
    // A list may change while the kernel runs without the GIL: the call
    // keeps a tuple of its items (made once; a second pass reuses it).
    if (f.keep_alive == nullptr) {
      f.NotePython();
      f.keep_alive = PyList_AsTuple(out);
      if (f.keep_alive == nullptr) return false;
    }
    out = f.keep_alive;
  }
  if (!PyTuple_Check(out) || PyTuple_GET_SIZE(out) != n) {
    return RaiseError(
        PyExc_TypeError,
        fmt::format("{}(): expected out to be a tuple of {} tensors, got {}",
                    op, n,
                    PyTuple_Check(out)
                        ? fmt::format("a tuple of {}", PyTuple_GET_SIZE(out))
                        : std::string(Py_TYPE(out)->tp_name)));
  }
  for (int i = 0; i < n; ++i) {
    if (!TakeOutput(op, kOutNames[i], PyTuple_GET_ITEM(out, i), f, i, like,
                    dtypes[i], specs[i].ndim, specs[i].shape)) {
      return false;
    }
  }
  f.num_returned = n;
  return true;
}

// What a kernel of a declared op gets: every tensor argument in `inputs` in
// the schema's order, the other arguments in `attrs`, and in `outputs` the
// returns in order, then the arguments written in place (Tensor(a!) before
// '*') in the schema's order. No written tensor overlaps another tensor of
// the call.
bool PrepareDeclared(const OpFunction& fn, const ParsedArgs& args,
                     CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* first = nullptr;
  TensorRef* tensors[kMaxParams];
  const char* names[kMaxParams];
  TensorRef* in_place[kMaxParams];
  const char* in_place_names[kMaxParams];
  int num_tensors = 0, num_in_place = 0;
  // Every tensor argument and every return is a tensor of the frame; a
  // schema may have more of them than the frame holds inline.
  f.Reserve(fn.num_tensors);
  // Tensors first, in the schema's order: the first keys the kernel.
  for (int i = 0; i < fn.signature.num_params; ++i) {
    const SchemaArg& a = *fn.params[i];
    if (a.type != ArgType::kTensor) continue;
    PyObject* value = args.values[i];
    if (value == nullptr || value == Py_None) {
      if (!a.optional) {
        return RaiseError(PyExc_TypeError,
                          fmt::format("{}(): expected {} to be a tensor, got "
                                      "None",
                                      op, a.name));
      }
      f.inputs[f.num_inputs++] = NoneArg();
      continue;
    }
    const char* name = a.name.c_str();
    TensorRef* r = f.Take(value, name, a.in_place());
    if (r == nullptr) return false;
    if (first != nullptr && !CheckSameDevice(op, name, *r, *first)) {
      return false;
    }
    if (a.in_place()) {
      if (!CheckWritable(op, *r, name) ||
          (r->is_torch() && !Bridge::Get().versions().CheckWritable(
                                op, name, r->object, r->handle()))) {
        return false;
      }
      in_place_names[num_in_place] = name;
      in_place[num_in_place++] = r;
    }
    if (first == nullptr) first = r;
    names[num_tensors] = name;
    tensors[num_tensors++] = r;
    SetTensorArg(&f.inputs[f.num_inputs++], r);
  }
  for (int i = 0; i < fn.signature.num_params; ++i) {
    const SchemaArg& a = *fn.params[i];
    if (a.type == ArgType::kTensor) continue;
    if (!DeclaredAttr(op, a, args.values[i], first->dtype,
                      &f.attrs[f.num_attrs])) {
      return false;
    }
    ++f.num_attrs;
  }
  f.dispatch_ref = first;
  const KernelEntry* kernel =
      Dispatcher::Get().Find(fn.id, first->view.device, first->dtype);
  if (kernel == nullptr || kernel->infer == nullptr) {
    return true;  // Run() says that no plugin serves this key
  }
  const int num_specs = static_cast<int>(fn.schema.returns.size());
  tf_tensor_spec specs[kMaxSchemaReturns];
  DtypeIndex dtypes[kMaxSchemaReturns];
  if (!InferOutputs(fn, *kernel, f, num_specs, specs, dtypes)) return false;
  int64_t work = 0;
  for (int t = 0; t < num_tensors; ++t)
    work = SaturatedSum(work, tensors[t]->numel);
  f.work = work;
  if (num_specs == 1) {
    if (fn.has_out_arg && (args.out == nullptr || args.out == Py_None)) {
      return RaiseError(
          PyExc_TypeError,
          fmt::format("{}() missing required argument 'out'", op));
    }
    if (!TakeOut(op, args, f, *first, dtypes[0], specs[0].ndim,
                 specs[0].shape)) {
      return false;
    }
  } else if (num_specs > 1 &&
             !TakeOuts(op, args, f, *first, num_specs, specs, dtypes)) {
    return false;
  } else if (num_specs == 0 && args.out != nullptr && args.out != Py_None) {
    return RaiseError(
        PyExc_TypeError,
        fmt::format("{}(): returns nothing, so it takes no out=", op));
  }
  // Returns against inputs and one another, then what is written in place
  // against every other tensor.
  for (int o = 0; o < num_specs; ++o) {
    const TensorRef& out = *f.written[o];
    const char* out_name = num_specs == 1 ? "out" : kOutNames[o];
    for (int t = 0; t < num_tensors; ++t) {
      if (!CheckNoOverlap(op, names[t], *tensors[t], out, false, out_name)) {
        return false;
      }
    }
    for (int p = 0; p < o; ++p) {
      if (!CheckNoOverlap(op, kOutNames[p], *f.written[p], out, false,
                          out_name)) {
        return false;
      }
    }
    f.work = SaturatedSum(f.work, out.numel);
  }
  for (int w = 0; w < num_in_place; ++w) {
    for (int t = 0; t < num_tensors; ++t) {
      if (tensors[t] == in_place[w]) continue;
      if (!CheckNoOverlap(op, names[t], *tensors[t], *in_place[w], false,
                          in_place_names[w])) {
        return false;
      }
    }
    f.written[num_specs + w] = in_place[w];
    f.outputs[num_specs + w] = in_place[w]->view;
    f.work = SaturatedSum(f.work, in_place[w]->numel);
  }
  f.num_outputs = num_specs + num_in_place;
  return true;
}

}  // namespace

PrepareFn PrepareFor(Geometry geometry) {
  switch (geometry) {
    case Geometry::kSameShape:
      return &PrepareSameShape;
    case Geometry::kBroadcast:
      return &PrepareBroadcast;
    case Geometry::kClamp:
      return &PrepareClamp;
    case Geometry::kStack:
      return &PrepareStack;
    case Geometry::kCast:
      return &PrepareCast;
    case Geometry::kLastDimHalved:
      return &PrepareSiluAndMul;
    case Geometry::kRowNorm:
      return &PrepareRmsNorm;
    case Geometry::kAddRowNorm:
      return &PrepareAddRmsNorm;
    case Geometry::kSoftmax:
      return &PrepareSoftmax;
    case Geometry::kMatmul:
      return &PrepareMatmul;
    case Geometry::kEmbedding:
      return &PrepareEmbedding;
    case Geometry::kCat:
      return &PrepareCat;
    case Geometry::kDeclared:
      return &PrepareDeclared;
    case Geometry::kNoop:
      return nullptr;
    case Geometry::kRotary:
      return &PrepareRotary;
    case Geometry::kAttention:
      return &PrepareAttention;
    case Geometry::kLinear:
      return &PrepareLinear;
  }
  return nullptr;
}

namespace {

// Runs `pass` (which fills the frame) and, where Python that ran after a
// tensor was read (allocating out, exporting an argument) changed that
// tensor, rewinds and runs it once more: with out allocated and every import
// kept, the second pass runs no Python.
template <typename Pass>
bool PrepareWithoutStaleReads(const char* op, CallFrame& f, const Pass& pass) {
  if (!pass()) return false;
  if (!f.python_ran() || f.Unchanged()) return true;
  f.Rewind();
  if (!pass()) return false;
  if (!f.python_ran()) return true;
  return RaiseError(PyExc_RuntimeError,
                    fmt::format("{}(): Python code ran while the call was "
                                "prepared a second time; please report this",
                                op));
}

}  // namespace

bool PrepareCall(const OpFunction& fn, const ParsedArgs& args, CallFrame& f) {
  return PrepareWithoutStaleReads(fn.name.c_str(), f, [&] {
    ParsedArgs pass_args = args;  // the second pass takes the allocated out
    if (f.owned_result != nullptr) pass_args.out = f.owned_result;
    return fn.prepare(fn, pass_args, f);
  });
}

bool PrepareNoop(PyObject* const* args, Py_ssize_t nargs, CallFrame& f) {
  if (nargs > (1 << 20)) {
    return RaiseError(PyExc_ValueError, "noop(): too many tensors");
  }
  f.Reserve(static_cast<int>(nargs));
  return PrepareWithoutStaleReads("noop", f, [&] {
    for (Py_ssize_t i = 0; i < nargs; ++i) {
      TensorRef* r = f.Take(args[i], "tensor", false);
      if (r == nullptr) return false;
      if (i > 0 && !CheckSameDevice("noop", "tensor", *r, *f.dispatch_ref)) {
        return false;
      }
      if (i == 0) f.dispatch_ref = r;
      SetTensorArg(&f.inputs[i], r);
    }
    f.num_inputs = static_cast<int>(nargs);
    return true;
  });
}

}  // namespace torchferry
