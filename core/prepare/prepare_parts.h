// The pieces every preparation rule is built from, shared so that each rule
// (PrepareFor names them) may live in a file of its own without copying them.
#pragma once

#include <Python.h>

#include <cstdint>
#include <initializer_list>

#include "core/bridge/dtypes.h"
#include "core/prepare/call_frame.h"
#include "core/prepare/op_description.h"
#include "loader/op_schema.h"

namespace torchferry {

// Field by field, not a zeroed temporary copied whole: GCC builds that on
// the stack with stores of one width and copies it with loads of another,
// which the CPU cannot forward (two stalls per tensor argument).
inline void SetTensorArg(tf_arg* a, const TensorRef* ref) {
  a->kind = TF_ARG_TENSOR;
  a->reserved = 0;
  a->value.list.items = nullptr;
  a->value.list.count = 0;
  a->value.tensor = &ref->view;
}
inline tf_arg TensorArg(const TensorRef* ref) {
  tf_arg a;
  SetTensorArg(&a, ref);
  return a;
}
inline tf_arg IntArg(int64_t value) {
  tf_arg a{};
  a.kind = TF_ARG_INT;
  a.value.i = value;
  return a;
}
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

// Bridges the output `out` (`what` names it in errors) and checks its device
// (`like`'s), dtype (unless kNoDtype), shape and that it is writable; it
// becomes the frame's outputs[slot].
bool TakeOutput(const char* op, const char* what, PyObject* out,
                CallFrame& frame, int slot, const TensorRef& like,
                DtypeIndex dtype, int ndim, const int64_t* shape);
// A new output like `like` (a torch tensor, or the fuzzer's placeholder), as
// a new reference; nullptr with a Python exception.
PyObject* AllocateLike(const char* op, CallFrame& frame, const TensorRef& like,
                       DtypeIndex dtype, int ndim, const int64_t* shape);
// out= as TakeOutput's outputs[0], allocated like `like` when absent; it is
// what the call returns.
bool TakeOut(const char* op, const ParsedArgs& args, CallFrame& frame,
             const TensorRef& like, DtypeIndex dtype, int ndim,
             const int64_t* shape);
// The product of `factors` (sizes, strides, element counts), or INT64_MAX
// where it would wrap: stride-0 views (expand) have sizes up to 2**63 - 1,
// whose products the work estimates and stride arithmetic must not wrap.
inline int64_t SaturatedProduct(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t f : factors) {
    if (__builtin_mul_overflow(product, f, &product)) return INT64_MAX;
  }
  return product;
}
// a + b, or INT64_MAX where it would wrap.
inline int64_t SaturatedSum(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? INT64_MAX : sum;
}

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
// The rules, for PrepareFor (core/prepare/prepare.cc), by the file they live
// in. Linear's and attention's have headers of their own.
#define TF_PREPARE_RULE(name) \
  bool name(const OpFunction& fn, const ParsedArgs& args, CallFrame& f)
// core/prepare/prepare_pointwise.cc
TF_PREPARE_RULE(PrepareSameShape);
TF_PREPARE_RULE(PrepareBroadcast);
TF_PREPARE_RULE(PrepareClamp);
TF_PREPARE_RULE(PrepareCast);
TF_PREPARE_RULE(PrepareSiluAndMul);
// core/prepare/prepare_rows.cc
TF_PREPARE_RULE(PrepareRmsNorm);
TF_PREPARE_RULE(PrepareAddRmsNorm);
TF_PREPARE_RULE(PrepareSoftmax);
// core/prepare/prepare_cat.cc
TF_PREPARE_RULE(PrepareCat);
TF_PREPARE_RULE(PrepareStack);
// core/prepare/prepare_embedding.cc, prepare_matmul.cc, prepare_declared.cc
TF_PREPARE_RULE(PrepareEmbedding);
TF_PREPARE_RULE(PrepareMatmul);
TF_PREPARE_RULE(PrepareDeclared);
#undef TF_PREPARE_RULE

}  // namespace torchferry
