// The pieces every preparation rule is built from (core/prepare.cc defines
// them), shared so that a rule may live in a file of its own
// (core/prepare_<topic>.cc) without copying them.
#pragma once

#include <Python.h>

#include <cstdint>
#include <initializer_list>

#include "core/call_frame.h"
#include "core/dtypes.h"
#include "core/py_args.h"
#include "loader/op_schema.h"

namespace torchferry {

tf_arg TensorArg(const TensorRef* ref);
tf_arg IntArg(int64_t value);
tf_arg FloatArg(double value);
tf_arg NoneArg();

// A Python number as the attribute a kernel of `dtype` expects: float for
// float dtypes, int for integer ones.
bool ScalarArg(const char* op, const char* what, PyObject* value,
               DtypeIndex dtype, tf_arg* arg);
// A Scalar argument left out: its schema default, typed as ScalarArg would.
bool DefaultScalarArg(const char* op, const SchemaArg& a, DtypeIndex dtype,
                      tf_arg* arg);
// An int argument, or `default_value` when absent (nullptr).
bool IntAttr(const char* op, const char* what, PyObject* value,
             int64_t default_value, int64_t* result);
// A non-tensor argument as its schema type asks: int, float, bool, or a
// Scalar typed by `dtype`; its default when absent (nullptr), None where the
// schema allows it.
bool DeclaredAttr(const char* op, const SchemaArg& a, PyObject* value,
                  DtypeIndex dtype, tf_arg* arg);
// Wraps a dim into [0, rank), torch-style.
bool WrapDim(const char* op, int64_t dim, int64_t rank, int64_t* wrapped);

// Bridges out= (or allocates it like `like` when absent) and checks its
// device, dtype (unless kNoDtype) and shape; sets the frame's output.
bool TakeOut(const char* op, const ParsedArgs& args, CallFrame& frame,
             const TensorRef& like, DtypeIndex dtype, int ndim,
             const int64_t* shape);
// The call's tensor inputs, in the op's order; the first keys the kernel
// lookup. `work` (elements touched) decides whether the GIL is released.
void SetTensorInputs(CallFrame& f, std::initializer_list<TensorRef*> inputs,
                     int64_t work);
// An input tensor that must share the first input's device and dtype.
TensorRef* TakeLike(const char* op, const char* what, PyObject* obj,
                    CallFrame& frame, const TensorRef& first);

}  // namespace torchferry
