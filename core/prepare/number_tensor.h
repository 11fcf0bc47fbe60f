// A Python number where an op takes a tensor (ops.mul(x, 0.5), ops.add(x, 1)):
// the number becomes a 0-dim tensor of the other operand's dtype, held in the
// call frame, which the op's broadcast then spreads with stride 0. Kernels see
// what they always see, so plugins of any minor serve it. mul on float16 and
// bfloat16 is the exception below: its number travels in add's alpha.
//
// torch's rule for the result's dtype: a Python number does not change the
// dtype of a tensor of its category or a higher one (bool < int < float), so
// mul(float16 tensor, 0.5) stays float16 and add(int32 tensor, 1) stays int32.
// A number of a higher category (add(int32 tensor, 0.5), which torch computes
// in float32; clamp(bool tensor, max=-3), which torch computes in int64)
// would need type promotion, which torchferry does not do: that is a
// TypeError saying so, for every number argument alike.
//
// How torch applies the number, measured per op and argument (loader/
// op_table.h states each in the op's contract):
// - add's and mul's `other` is torch's wrapped number, cast to the dtype
//   unchecked: an int wraps modulo 2**bits (add(int8, 1000) is add(int8,
//   -24)), a float rounds (add(float16, 70000.0) adds inf). mul on float16
//   and bfloat16 is the exception: torch keeps its number in float32.
// - add's `alpha` and clamp's bounds are checked into the dtype
//   (c10::checked_convert): an int or a finite float past the dtype's range
//   is an OverflowError; a float alpha is rounded to the dtype.
// - float arguments (rms_norm's eps, attention's scale) stay in the op-math
//   type; they are never rounded to the tensor's dtype.
#pragma once

#include <Python.h>

#include "core/bridge/bridge.h"

namespace torchferry {

// How an op takes a Python number standing for one of its tensor arguments
// (prepare.h's NumberRuleFor says which, per op and argument):
enum class NumberRule {
  kNone,     // no number may stand for it
  kWrapped,  // torch's wrapped number (add's and mul's `other`):
             // NumberAsTensor, or NumberAsFloat32 where AppliedInFloat32
  kChecked,  // checked into the dtype (clamp's bounds): BoundArg
};

// True for int, float and bool objects (not tensors, not numpy scalars).
inline bool IsPythonNumber(PyObject* obj) {
  return PyFloat_CheckExact(obj) || PyLong_Check(obj);
}

// An int `value` as an element of integer or bool `dtype`, by torch's rule
// (c10::checked_convert): it must fit, except that uint8 takes negatives down
// to -255, which wrap, and uint16/32/64 take -2**63 to 2**64 - 1, kept as
// their 64-bit pattern in `result` (its low bits are the element).
// OverflowError in torch's words.
bool CheckedInt(const char* op, const char* what, PyObject* value,
                DtypeIndex dtype, int64_t* result);

// An int `value` as torch casts its wrapped number into integer or bool
// `dtype`: any int from -2**63 to 2**64 - 1, wrapping modulo 2**bits (the
// low bits of `result` are the element). OverflowError past that.
bool WrappedInt(const char* op, const char* what, PyObject* value,
                DtypeIndex dtype, int64_t* result);

// A float `value` checked into float `dtype` as c10::checked_convert does
// (a finite value past the dtype's largest is an OverflowError; inf and NaN
// pass) and rounded to it.
bool CheckedFloat(const char* op, const char* what, PyObject* value,
                  DtypeIndex dtype, double* result);

// Raises the TypeError for a number of a higher category than `dtype` (bool
// < int < float), where torch would promote the result; true otherwise.
bool CheckNumberKind(const char* op, const char* what, PyObject* number,
                     DtypeIndex dtype);

// add's alpha as torch takes it: a bool for bool results only, no float for
// integer dtypes, checked into the dtype, a float rounded to it.
bool AlphaArg(const char* op, PyObject* value, DtypeIndex dtype, tf_arg* arg);

// A clamp bound as torch takes it: of the tensor's category or a lower one,
// checked into the dtype.
bool BoundArg(const char* op, const char* what, PyObject* value,
              DtypeIndex dtype, tf_arg* arg);

// Writes `number` as one element of `like`'s dtype into `bits` (8 bytes,
// aligned) and fills `ref` as a 0-dim view of it on `like`'s device, or
// returns false with a TypeError or OverflowError in torch's words. CPU only:
// a CUDA kernel cannot read host memory.
bool NumberAsTensor(const char* op, const char* what, PyObject* number,
                    const TensorRef& like, void* bits, TensorRef* ref);

// mul on float16 and bfloat16 computes in float32 (torch's opmath type), and
// torch applies its Python number there unrounded to the tensor's dtype
// (mul(float16 [1e-3], 1e5) is 100.06, not inf). A 0-dim float16 operand
// cannot carry that, so for these dtypes the host folds the number into
// add's float attribute alpha instead (core/prepare/prepare_pointwise.cc):
// it checks `number` as NumberAsTensor does and gives it as a float. add's
// own number is rounded to the dtype, as torch's is, and needs no fold.
inline bool AppliedInFloat32(DtypeIndex dtype) {
  return dtype == kFloat16 || dtype == kBFloat16;
}
bool NumberAsFloat32(const char* op, const char* what, PyObject* number,
                     const TensorRef& like, float* value);

// `number` as `rule` takes it for a tensor of `like`'s dtype and device,
// through the very functions the preparation rules call: a new reference to
// the element as torch.full((), element, dtype=...) takes it (a float rounded
// to the dtype, an int reduced to the dtype's bits, a bool for bool), or
// nullptr with the eager call's error. torch.compile's traced calls ask it
// (torchferry._C._number), so that they refuse and round as eager does.
PyObject* NumberElement(NumberRule rule, const char* op, const char* what,
                        PyObject* number, const TensorRef& like);

// A 0-dim view of `value` in `like`'s dtype (a float dtype) on its device,
// stored in `bits` (8 bytes, aligned): the 1 or -0.0 a folded number leaves
// in its place.
void FloatAsTensor(double value, const TensorRef& like, void* bits,
                   TensorRef* ref);

}  // namespace torchferry
