/*
 * Plugins that declare ops (ABI 1.1), built by
 * tests/python/test_declared_ops.py once per variant: `cc -DFLAW=<n>
 * -DNAME=<stem>`. FLAW 0 is a correct plugin whose infer functions misbehave at
 * call time in the ways a host must survive; every other FLAW breaks one rule
 * of ABI.md "Declared ops", so that the loader must skip the plugin with that
 * rule's reason and no other.
 */
#include <stddef.h>
#include <stdint.h>

#include "abi/torchferry.h"

#ifndef FLAW
#define FLAW 0
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

/* The variants: macros, not an enum, because #if compares them. */
#define GOOD 0
#define SCHEMA_SYNTAX 1
#define SCHEMA_DEFAULT 2
#define NAME_MISMATCH 3
#define NO_NAMESPACE 4
#define NULL_INFER 5
#define NULL_SCHEMA 6
#define DUPLICATE 7
#define SMALL_DECL 8
#define PLUGIN_V1_0_SIZE 9
#define NULL_OPS 10
#define UNDECLARED_KERNEL 11
#define FIRST_NOT_TENSOR 12
#define TAKEN_NAMESPACE 13
#define TENSOR_LIST 14
#define CONFLICT 15
#define OUT_WITH_TWO_RETURNS 16
#define SAME_SCHEMA 17 /* correct: a second plugin serving decl::twice */
#define OUT_NOT_OUT 18
#define TOO_MANY_WRITES 19
#define OPTIONAL_IN_PLACE 20
/* Names Python cannot reach, or that break what every object has. */
#define NS_NAME 21
#define NS_SPEC 22
#define NS_BUILTINS 23
#define NS_ALL 24
#define OP_CLASS 25
#define OP_KEYWORD 26
#define NS_KEYWORD 27
#define ARG_KEYWORD 28
#define DOC_NOT_UTF8 29
#define DOC_LONG 30 /* correct: a doc past the limit, cut inside a character */
#define SHADOWING_NAMES 31 /* correct: arguments named as host internals */
#define MANY 32 /* correct: ops with as many tensors as a schema allows */
#define TOO_MANY_ARGS 33
#define TOO_MANY_OPS 34 /* num_ops past TF_MAX_DECLARED_OPS */

#if FLAW != MANY
/* out = scale * x (+ 1 for the SAME_SCHEMA plugin, to tell them apart). */
static tf_status twice(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  const float scale = (float)call->attrs[0].value.f;
  const float bias = FLAW == SAME_SCHEMA ? 1.0f : 0.0f;
  int64_t n = 1;
  int64_t i;
  int32_t d;
  if (!(x->flags & TF_TENSOR_CONTIGUOUS) ||
      !(out->flags & TF_TENSOR_CONTIGUOUS)) {
    return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                 "contiguous tensors only");
  }
  for (d = 0; d < x->ndim; ++d) n *= x->shape[d];
  for (i = 0; i < n; ++i) {
    ((float*)out->data)[i] = scale * ((const float*)x->data)[i] + bias;
  }
  return TF_OK;
}
#endif

static tf_status same_as_x(const tf_call* call, tf_tensor_spec* specs,
                           int32_t num_specs) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  int32_t d;
  if (num_specs != 1 || call->outputs != NULL) {
    return call->host->set_error(call->error_sink, TF_ERROR_INTERNAL,
                                 "expected one spec and no outputs yet");
  }
  specs[0].dtype = x->dtype;
  specs[0].ndim = x->ndim;
  for (d = 0; d < x->ndim; ++d) specs[0].shape[d] = x->shape[d];
  return TF_OK;
}

#if FLAW == GOOD
static int64_t numel(const tf_tensor* t) {
  int64_t n = 1;
  int32_t d;
  for (d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}
static int contiguous(const tf_call* call) {
  int32_t i;
  for (i = 0; i < call->num_inputs; ++i) {
    if (!(call->inputs[i].value.tensor->flags & TF_TENSOR_CONTIGUOUS)) return 0;
  }
  for (i = 0; i < call->num_outputs; ++i) {
    if (!(call->outputs[i].flags & TF_TENSOR_CONTIGUOUS)) return 0;
  }
  return 1;
}

/* decl::scaled_and_sum: outputs[0] = scale * x, outputs[1] = sum(x) (0-dim):
   two returns of different shapes. */
static tf_status scaled_and_sum(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const float scale = (float)call->attrs[0].value.f;
  const float* xs = (const float*)x->data;
  float sum = 0;
  int64_t i;
  if (call->num_outputs != 2 || !contiguous(call)) {
    return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                 "two contiguous outputs only");
  }
  for (i = 0; i < numel(x); ++i) {
    ((float*)call->outputs[0].data)[i] = scale * xs[i];
    sum += xs[i];
  }
  *(float*)call->outputs[1].data = sum;
  return TF_OK;
}
static tf_status infer_scaled_and_sum(const tf_call* call,
                                      tf_tensor_spec* specs,
                                      int32_t num_specs) {
  if (num_specs != 2) {
    return call->host->set_error(call->error_sink, TF_ERROR_INTERNAL,
                                 "expected two specs");
  }
  same_as_x(call, specs, 1); /* specs[0] */
  specs[1].dtype = specs[0].dtype;
  specs[1].ndim = 0;
  return TF_OK;
}

/* decl::accumulate: acc += scale * x, in place; returns nothing. acc is
   inputs[1] (read) and outputs[0] (written). */
static tf_status accumulate(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const float scale = (float)call->attrs[0].value.f;
  int64_t i;
  if (call->num_outputs != 1 || !contiguous(call) ||
      call->outputs[0].data != call->inputs[1].value.tensor->data) {
    return call->host->set_error(call->error_sink, TF_ERROR_INTERNAL,
                                 "expected acc as inputs[1] and outputs[0]");
  }
  for (i = 0; i < numel(x); ++i) {
    ((float*)call->outputs[0].data)[i] += scale * ((const float*)x->data)[i];
  }
  return TF_OK;
}
/* Also decl::accumulate_twice's: x and acc must agree; its one return is
   x's shape. */
static tf_status infer_same_shapes(const tf_call* call, tf_tensor_spec* specs,
                                   int32_t num_specs) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* acc = call->inputs[1].value.tensor;
  int32_t d;
  int same = x->ndim == acc->ndim && x->dtype.code == acc->dtype.code &&
             x->dtype.bits == acc->dtype.bits;
  for (d = 0; same && d < x->ndim; ++d) same = x->shape[d] == acc->shape[d];
  if (!same) {
    return call->host->set_error(call->error_sink, TF_ERROR_INVALID_ARGUMENT,
                                 "x and acc differ in shape or dtype");
  }
  return num_specs == 0 ? TF_OK : same_as_x(call, specs, num_specs);
}

/* decl::accumulate_twice: acc += x, then outputs[0] = 2 * acc. The return
   comes first in outputs, the argument written in place after it. */
static tf_status accumulate_twice(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  float* acc = (float*)call->outputs[1].data;
  int64_t i;
  if (call->num_outputs != 2 || !contiguous(call) ||
      call->outputs[1].data != call->inputs[1].value.tensor->data) {
    return call->host->set_error(call->error_sink, TF_ERROR_INTERNAL,
                                 "expected acc as inputs[1] and outputs[1]");
  }
  for (i = 0; i < numel(x); ++i) {
    acc[i] += ((const float*)x->data)[i];
    ((float*)call->outputs[0].data)[i] = 2 * acc[i];
  }
  return TF_OK;
}

/* The infer functions of the ops that misbehave at call time. */
static tf_status infer_fails(const tf_call* call, tf_tensor_spec* specs,
                             int32_t num_specs) {
  (void)specs;
  (void)num_specs;
  return call->host->set_error(call->error_sink, TF_ERROR_INVALID_ARGUMENT,
                               "x must be square");
}
static tf_status infer_silent(const tf_call* call, tf_tensor_spec* specs,
                              int32_t num_specs) {
  (void)call;
  (void)specs;
  (void)num_specs;
  return TF_ERROR_UNSUPPORTED; /* and no message */
}
static tf_status infer_negative(const tf_call* call, tf_tensor_spec* specs,
                                int32_t num_specs) {
  tf_status s = same_as_x(call, specs, num_specs);
  specs[0].shape[0] = -3;
  return s;
}
static tf_status infer_huge(const tf_call* call, tf_tensor_spec* specs,
                            int32_t num_specs) {
  (void)call;
  (void)num_specs;
  specs[0].dtype.code = TF_DTYPE_FLOAT;
  specs[0].dtype.bits = 32;
  specs[0].dtype.lanes = 1;
  specs[0].ndim = 3;
  specs[0].shape[0] = INT64_C(1) << 40;
  specs[0].shape[1] = INT64_C(1) << 40;
  specs[0].shape[2] = 8;
  return TF_OK;
}
static tf_status infer_rank(const tf_call* call, tf_tensor_spec* specs,
                            int32_t num_specs) {
  tf_status s = same_as_x(call, specs, num_specs);
  specs[0].ndim = TF_MAX_NDIM + 1;
  return s;
}
static tf_status infer_dtype(const tf_call* call, tf_tensor_spec* specs,
                             int32_t num_specs) {
  tf_status s = same_as_x(call, specs, num_specs);
  specs[0].dtype.code = 9;
  return s;
}
static tf_status infer_wrong_shape(const tf_call* call, tf_tensor_spec* specs,
                                   int32_t num_specs) {
  tf_status s = same_as_x(call, specs, num_specs);
  specs[0].ndim = 1;
  specs[0].shape[0] = 5; /* the kernel would write x's numel: caught by the
                            host's out= check when the user passes one */
  return s;
}
#endif

#if FLAW == MANY
/* Every output (returns, then arguments written in place) gets (o + 1) times
   the sum of every input, element by element: each input's element is read
   before any output's is written, so the in-place ones may alias inputs. */
static tf_status sum_all(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  int64_t n = 1;
  int64_t e;
  int32_t i, d;
  for (d = 0; d < x->ndim; ++d) n *= x->shape[d];
  for (i = 0; i < call->num_inputs; ++i) {
    if (!(call->inputs[i].value.tensor->flags & TF_TENSOR_CONTIGUOUS)) {
      return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                   "contiguous tensors only");
    }
  }
  for (i = 0; i < call->num_outputs; ++i) {
    if (!(call->outputs[i].flags & TF_TENSOR_CONTIGUOUS)) {
      return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                   "contiguous tensors only");
    }
  }
  for (e = 0; e < n; ++e) {
    float sum = 0;
    for (i = 0; i < call->num_inputs; ++i) {
      sum += ((const float*)call->inputs[i].value.tensor->data)[e];
    }
    for (i = 0; i < call->num_outputs; ++i) {
      ((float*)call->outputs[i].data)[e] = (float)(i + 1) * sum;
    }
  }
  return TF_OK;
}
static tf_status all_like_x(const tf_call* call, tf_tensor_spec* specs,
                            int32_t num_specs) {
  int32_t i;
  if (num_specs < 1) return TF_OK;
  for (i = 0; i < num_specs; ++i) {
    tf_status s = same_as_x(call, specs + i, 1);
    if (s != TF_OK) return s;
  }
  return TF_OK;
}
#endif

#if FLAW == DOC_NOT_UTF8
#define DOC "caf\xe9, Latin-1"
#elif FLAW == DOC_LONG
/* 1022 ASCII bytes, then a 2-byte character across the host's 1023-byte
   limit: filled in by the entry function. */
static char long_doc[1100];
#define DOC long_doc
#else
#define DOC "a test op"
#endif
#define DECL(name, schema, infer) \
  { sizeof(tf_op_decl), name, schema, infer, DOC }
#define KERNEL(op, fn) \
  { sizeof(tf_kernel), op, TF_DEVICE_CPU, {TF_DTYPE_FLOAT, 32, 1}, fn, NULL }

#if FLAW == GOOD
static const tf_op_decl ops[] = {
    DECL("decl::twice", "decl::twice(Tensor x, *, float scale=2.0) -> Tensor",
         same_as_x),
    DECL("decl::infer_fails", "decl::infer_fails(Tensor x) -> Tensor",
         infer_fails),
    DECL("decl::infer_silent", "decl::infer_silent(Tensor x) -> Tensor",
         infer_silent),
    DECL("decl::negative", "decl::negative(Tensor x) -> Tensor",
         infer_negative),
    DECL("decl::huge", "decl::huge(Tensor x) -> Tensor", infer_huge),
    DECL("decl::rank", "decl::rank(Tensor x) -> Tensor", infer_rank),
    DECL("decl::bad_dtype", "decl::bad_dtype(Tensor x) -> Tensor", infer_dtype),
    DECL("decl::wrong_shape", "decl::wrong_shape(Tensor x) -> Tensor",
         infer_wrong_shape),
    DECL("decl::scaled_and_sum",
         "decl::scaled_and_sum(Tensor x, *, float scale=2.0) -> "
         "(Tensor scaled, Tensor sum)",
         infer_scaled_and_sum),
    DECL("decl::accumulate",
         "decl::accumulate(Tensor x, Tensor(a!) acc, *, float scale=1.0) -> ()",
         infer_same_shapes),
    DECL("decl::accumulate_twice",
         "decl::accumulate_twice(Tensor x, Tensor(a!) acc) -> Tensor",
         infer_same_shapes),
    /* Argument names that the host's own Python code might use. */
    DECL("decl::shadow",
         "decl::shadow(Tensor x, *, float _call=2.0, float _op=0.0) -> Tensor",
         same_as_x),
};
static const tf_kernel kernels[] = {
    KERNEL("decl::twice", twice),
    KERNEL("decl::infer_fails", twice),
    KERNEL("decl::infer_silent", twice),
    KERNEL("decl::negative", twice),
    KERNEL("decl::huge", twice),
    KERNEL("decl::rank", twice),
    KERNEL("decl::bad_dtype", twice),
    KERNEL("decl::wrong_shape", twice),
    KERNEL("decl::scaled_and_sum", scaled_and_sum),
    KERNEL("decl::accumulate", accumulate),
    KERNEL("decl::accumulate_twice", accumulate_twice),
    KERNEL("decl::shadow", twice), /* scale is attrs[0]: _call */
};
#elif FLAW == SHADOWING_NAMES
/* shadow::mix: out = _call * x + _op + 10 * _tf_call + 100 * _tf_op, so that
   each argument's value shows in the result. */
static tf_status mix(const tf_call* call) {
  const tf_tensor* x = call->inputs[0].value.tensor;
  const tf_tensor* out = &call->outputs[0];
  const float add =
      (float)(call->attrs[1].value.f + 10 * call->attrs[2].value.f +
              100 * call->attrs[3].value.f);
  const float scale = (float)call->attrs[0].value.f;
  int64_t n = 1;
  int64_t i;
  int32_t d;
  if (!(x->flags & TF_TENSOR_CONTIGUOUS) ||
      !(out->flags & TF_TENSOR_CONTIGUOUS)) {
    return call->host->set_error(call->error_sink, TF_ERROR_UNSUPPORTED,
                                 "contiguous tensors only");
  }
  for (d = 0; d < x->ndim; ++d) n *= x->shape[d];
  for (i = 0; i < n; ++i) {
    ((float*)out->data)[i] = scale * ((const float*)x->data)[i] + add;
  }
  return TF_OK;
}
static const tf_op_decl ops[] = {
    DECL("shadow::mix",
         "shadow::mix(Tensor x, float _call, *, float _op=1.0, "
         "float _tf_call=0.0, float _tf_op=0.0) -> Tensor",
         same_as_x),
    DECL("shadow::scale", "shadow::scale(Tensor x, *, float _op=2.0) -> Tensor",
         same_as_x),
};
static const tf_kernel kernels[] = {KERNEL("shadow::mix", mix),
                                    KERNEL("shadow::scale", twice)};
#elif FLAW == MANY
/* The tensors a0 to a11, and a12 to a15. */
#define A0_11                                                          \
  "Tensor a0, Tensor a1, Tensor a2, Tensor a3, Tensor a4, Tensor a5, " \
  "Tensor a6, Tensor a7, Tensor a8, Tensor a9, Tensor a10, Tensor a11, "
#define A12_15 "Tensor a12, Tensor a13, Tensor a14, Tensor a15"
static const tf_op_decl ops[] = {
    DECL("many::f13", "many::f13(" A0_11 "Tensor a12) -> Tensor", all_like_x),
    DECL("many::f16", "many::f16(" A0_11 A12_15 ") -> Tensor", all_like_x),
    DECL("many::f15_out",
         "many::f15_out(" A0_11
         "Tensor a12, Tensor a13, Tensor a14, *, Tensor(a!) out) -> "
         "Tensor(a!)",
         all_like_x),
    DECL("many::f16x4",
         "many::f16x4(" A0_11 A12_15 ") -> (Tensor, Tensor, Tensor, Tensor)",
         all_like_x),
    DECL("many::f12w4x4",
         "many::f12w4x4(" A0_11
         "Tensor(a!) w0, Tensor(b!) w1, Tensor(c!) w2, Tensor(d!) w3) "
         "-> (Tensor, Tensor, Tensor, Tensor)",
         all_like_x),
};
static const tf_kernel kernels[] = {
    KERNEL("many::f13", sum_all),     KERNEL("many::f16", sum_all),
    KERNEL("many::f15_out", sum_all), KERNEL("many::f16x4", sum_all),
    KERNEL("many::f12w4x4", sum_all),
};
#elif FLAW == DOC_LONG
static const tf_op_decl ops[] = {
    DECL("dlong::f", "dlong::f(Tensor x) -> Tensor", same_as_x),
};
static const tf_kernel kernels[] = {KERNEL("dlong::f", twice)};
#elif FLAW == SAME_SCHEMA || FLAW == CONFLICT
static const tf_op_decl ops[] = {
    DECL("decl::twice",
         FLAW == CONFLICT ? "decl::twice(Tensor x, *, float scale) -> Tensor"
                          : "decl::twice(Tensor x, *, float scale=2.0) -> "
                            "Tensor",
         same_as_x),
};
static const tf_kernel kernels[] = {KERNEL("decl::twice", twice)};
#else
/* One declaration (two for DUPLICATE) that breaks the rule FLAW names. */
static const tf_op_decl ops[] = {
#if FLAW == SCHEMA_SYNTAX
    DECL("dbad::f", "dbad::f(Tensr x) -> Tensor", same_as_x),
#elif FLAW == SCHEMA_DEFAULT
    DECL("dbad::f", "dbad::f(Tensor x, int k=1.5) -> Tensor", same_as_x),
#elif FLAW == NAME_MISMATCH
    DECL("dbad::f", "dbad::g(Tensor x) -> Tensor", same_as_x),
#elif FLAW == NO_NAMESPACE
    DECL("f", "f(Tensor x) -> Tensor", same_as_x),
#elif FLAW == NULL_INFER
    DECL("dbad::f", "dbad::f(Tensor x) -> Tensor", NULL),
    DECL("dbad::g", "dbad::g(Tensor x) -> Tensor", same_as_x),
#elif FLAW == NULL_SCHEMA
    DECL("dbad::f", NULL, same_as_x),
#elif FLAW == DUPLICATE
    DECL("dbad::f", "dbad::f(Tensor x) -> Tensor", same_as_x),
    DECL("dbad::f", "dbad::f(Tensor x) -> Tensor", same_as_x),
#elif FLAW == SMALL_DECL
    {offsetof(tf_op_decl, infer), "dbad::f", "dbad::f(Tensor x) -> Tensor",
     same_as_x, NULL},
#elif FLAW == FIRST_NOT_TENSOR
    DECL("dbad::f", "dbad::f(int k, Tensor x) -> Tensor", same_as_x),
#elif FLAW == TAKEN_NAMESPACE
    DECL("abs::f", "abs::f(Tensor x) -> Tensor", same_as_x),
#elif FLAW == TENSOR_LIST
    DECL("dbad::f", "dbad::f(Tensor x, Tensor[] ys) -> Tensor", same_as_x),
#elif FLAW == OUT_WITH_TWO_RETURNS
    DECL("dbad::f",
         "dbad::f(Tensor x, *, Tensor(a!) out) -> (Tensor(a!), Tensor)",
         same_as_x),
#elif FLAW == OUT_NOT_OUT
    DECL("dbad::f", "dbad::f(Tensor x, *, Tensor(a!) result) -> Tensor(a!)",
         same_as_x),
#elif FLAW == TOO_MANY_WRITES
    DECL("dbad::f",
         "dbad::f(Tensor x, Tensor(a!) p, Tensor(b!) q, Tensor(c!) r, "
         "Tensor(d!) s, Tensor(e!) t) -> (Tensor, Tensor, Tensor, Tensor)",
         same_as_x),
#elif FLAW == TOO_MANY_ARGS
    /* 20 tensors: past the 16 arguments a schema may have. */
    DECL("dbad::f",
         "dbad::f(Tensor a0, Tensor a1, Tensor a2, Tensor a3, Tensor a4, "
         "Tensor a5, Tensor a6, Tensor a7, Tensor a8, Tensor a9, Tensor a10, "
         "Tensor a11, Tensor a12, Tensor a13, Tensor a14, Tensor a15, "
         "Tensor a16, Tensor a17, Tensor a18, Tensor a19) -> Tensor",
         same_as_x),
#elif FLAW == OPTIONAL_IN_PLACE
    DECL("dbad::f", "dbad::f(Tensor x, Tensor(a!)? acc) -> ()", same_as_x),
#elif FLAW == NS_NAME
    DECL("__name__::f", "__name__::f(Tensor x) -> Tensor", same_as_x),
#elif FLAW == NS_SPEC
    DECL("__spec__::f", "__spec__::f(Tensor x) -> Tensor", same_as_x),
#elif FLAW == NS_BUILTINS
    DECL("__builtins__::f", "__builtins__::f(Tensor x) -> Tensor", same_as_x),
#elif FLAW == NS_ALL
    DECL("__all__::f", "__all__::f(Tensor x) -> Tensor", same_as_x),
#elif FLAW == OP_CLASS
    DECL("dbad::__class__", "dbad::__class__(Tensor x) -> Tensor", same_as_x),
#elif FLAW == OP_KEYWORD
    DECL("dbad::lambda", "dbad::lambda(Tensor x) -> Tensor", same_as_x),
#elif FLAW == NS_KEYWORD
    DECL("lambda::f", "lambda::f(Tensor x) -> Tensor", same_as_x),
#elif FLAW == ARG_KEYWORD
    DECL("dbad::f", "dbad::f(Tensor x, *, float lambda=1.0) -> Tensor",
         same_as_x),
#else
    DECL("dbad::f", "dbad::f(Tensor x) -> Tensor", same_as_x),
#endif
};
static const tf_kernel kernels[] = {
#if FLAW >= NS_NAME && FLAW <= ARG_KEYWORD
    /* The declared op's kernel, and no built-in op's. */
    KERNEL(FLAW == NS_NAME       ? "__name__::f"
           : FLAW == NS_SPEC     ? "__spec__::f"
           : FLAW == NS_BUILTINS ? "__builtins__::f"
           : FLAW == NS_ALL      ? "__all__::f"
           : FLAW == OP_CLASS    ? "dbad::__class__"
           : FLAW == OP_KEYWORD  ? "dbad::lambda"
           : FLAW == NS_KEYWORD  ? "lambda::f"
                                 : "dbad::f",
           twice),
#else
    KERNEL(FLAW == UNDECLARED_KERNEL ? "dbad::g" : "abs", twice),
#endif
};
#endif

static const tf_plugin plugin = {
    FLAW == PLUGIN_V1_0_SIZE ? TF_PLUGIN_V1_0_SIZE : sizeof(tf_plugin),
    TF_ABI_VERSION_MAJOR,
    TF_ABI_VERSION_MINOR,
    STR(NAME),
    "0.0.1",
    FLAW == SAME_SCHEMA ? TF_PLUGIN_FALLBACK : TF_PLUGIN_NATIVE,
    0,
    NULL,
    NULL,
    kernels,
    sizeof(kernels) / sizeof(kernels[0]),
    FLAW == NULL_OPS ? NULL : ops,
    FLAW == NULL_OPS       ? 2
    : FLAW == TOO_MANY_OPS ? TF_MAX_DECLARED_OPS + 1
                           : sizeof(ops) / sizeof(ops[0]),
};

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_major;
  (void)host_abi_minor;
  (void)host;
#if FLAW == DOC_LONG
  {
    size_t i;
    for (i = 0; i < 1022; ++i) long_doc[i] = 'a';
    long_doc[1022] = (char)0xc3; /* e acute: 0xc3 0xa9 */
    long_doc[1023] = (char)0xa9;
    long_doc[1024] = 'z';
    long_doc[1025] = '\0';
  }
#endif
  return &plugin;
}
