// The row rules: rms_norm, add_rms_norm (residual += input, then its norm)
// and softmax, each over the last dim.
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

namespace {

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

}  // namespace

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
  f.AddAttr() = FloatArg(eps);
  f.SetInputs({TensorArg(x), TensorArg(w)}, x, SaturatedProduct({x->numel, 2}));
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
      !CheckShape(op, "residual", *r, ndim, x->view.shape)) {
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
  f.SetOutput(1, r);
  f.AddAttr() = FloatArg(eps);
  f.SetInputs({TensorArg(x), TensorArg(w)}, x, SaturatedProduct({x->numel, 3}));
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
  f.AddAttr() = IntArg(dim);
  f.SetInputs({TensorArg(x)}, x, SaturatedProduct({x->numel, 3}));
  return true;
}

}  // namespace torchferry
