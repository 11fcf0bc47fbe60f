// The pieces the preparation rules share (core/prepare.cc and the
// core/prepare_<topic>.cc files): bridging inputs and out=, typed
// attributes, and the tf_call arguments that point at them.
#pragma once

#include <Python.h>

#include <cstdint>
#include <initializer_list>

#include "core/call_frame.h"
#include "core/py_args.h"

namespace torchferry {

inline tf_arg TensorArg(const TensorRef* ref) {
  tf_arg a{};
  a.kind = TF_ARG_TENSOR;
  a.value.tensor = &ref->view;
  return a;
}

inline tf_arg IntArg(int64_t value) {
  tf_arg a{};
  a.kind = TF_ARG_INT;
  a.value.i = value;
  return a;
}

// An int argument, `default_value` when absent.
bool IntAttr(const char* op, const char* what, PyObject* value,
             int64_t default_value, int64_t* result);

// Wraps a dim into [0, rank), torch-style.
bool WrapDim(const char* op, int64_t dim, int64_t rank, int64_t* wrapped);

// Bridges out= (or allocates it like `like` when absent) and checks its
// device, dtype (unless kNoDtype) and shape.
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

// Bridges a Tensor[] argument (a list or tuple, count >= 1): every item
// shares the first's device and dtype. Their views land in
// frame.list_items()[0 .. *count); the first item's ref in *first.
bool TakeTensorList(const char* op, PyObject* seq, CallFrame& f,
                    TensorRef** first, int64_t* count);

// The list argument of a Tensor[] op's kernel.
tf_arg TensorListArg(const tf_tensor* items, int64_t count);

struct OpFunction;

// Rules that live in files of their own, for PrepareFor (core/prepare.cc).
bool PrepareEmbedding(const OpFunction& fn, const ParsedArgs& args,
                      CallFrame& f);  // core/prepare_embedding.cc
bool PrepareCat(const OpFunction& fn, const ParsedArgs& args,
                CallFrame& f);  // core/prepare_cat.cc

}  // namespace torchferry
