// The pieces the preparation rules share (prepare_parts.h): typed
// attributes, dims, outputs taken or allocated, tensor lists.
#include "core/prepare/prepare_parts.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/number_tensor.h"
#include "core/prepare/op_description.h"
#include "core/prepare/out_alloc.h"

namespace torchferry {

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
  if (!CheckShape(op, what, *ref, ndim, shape)) return false;
  frame.SetOutput(slot, ref);
  return true;
}

PyObject* AllocateLike(const char* op, CallFrame& frame, const TensorRef& like,
                       DtypeIndex dtype, int ndim, const int64_t* shape) {
  if (!CheckResultFits(op, dtype, ndim, shape)) return nullptr;
  frame.NotePython();  // torch.empty (modes, hooks) or the gc may run
  return frame.source() != nullptr
             ? frame.source()->Allocate(like, dtype, ndim, shape)
             : AllocateOut(op, like, dtype, ndim, shape);
}

bool TakeOut(const char* op, const ParsedArgs& args, CallFrame& frame,
             const TensorRef& like, DtypeIndex dtype, int ndim,
             const int64_t* shape) {
  PyObject* out = args.out;
  if (out == nullptr || out == Py_None) {
    out = AllocateLike(op, frame, like, dtype, ndim, shape);  // checks fit
    if (out == nullptr) return false;
    frame.set_owned_result(out);
  } else if (!CheckResultFits(op, dtype, ndim, shape)) {
    return false;
  }
  if (!TakeOutput(op, "out", out, frame, 0, like, dtype, ndim, shape)) {
    return false;
  }
  frame.set_result(out);
  return true;
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
  if (f.keep_alive() != nullptr) {
    seq = f.keep_alive();  // the second pass walks the first one's snapshot
  } else if (PyList_Check(seq)) {
    // Bridging an item may run Python (__dlpack__) that mutates the list;
    // walk a snapshot that the frame keeps alive. Taken before any tensor
    // is read, so the gc this allocation may trigger harms nothing.
    seq = PyList_AsTuple(seq);
    if (seq == nullptr) return false;
    f.set_keep_alive(seq);
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
      // torch takes any Python number for a float, a bool as 0 or 1 too
      // (rms_norm(..., eps=True), attention's scale=True), and keeps it as
      // a double: never rounded to the tensor's dtype.
      if (PyFloat_Check(value) || PyLong_Check(value)) {
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

}  // namespace torchferry
