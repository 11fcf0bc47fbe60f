// A Python number where an op takes a tensor (ops.mul(x, 0.5), ops.add(x, 1)):
// the number becomes a 0-dim tensor of the other operand's dtype, held in the
// call frame, which the op's broadcast then spreads with stride 0. Kernels see
// what they always see, so plugins of any minor serve it. float16 and
// bfloat16 are the exception below: their number travels in add's alpha.
//
// torch's rule for the result's dtype: a Python number does not change the
// dtype of a tensor of its category or a higher one (bool < int < float), so
// mul(float16 tensor, 0.5) stays float16 and add(int32 tensor, 1) stays int32.
// A number of a higher category (add(int32 tensor, 0.5), which torch computes
// in float32) would need type promotion, which torchferry does not do: that is
// a TypeError saying so.
#pragma once

#include <Python.h>

#include "core/bridge/bridge.h"

namespace torchferry {

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

// Writes `number` as one element of `like`'s dtype into `bits` (8 bytes,
// aligned) and fills `ref` as a 0-dim view of it on `like`'s device, or
// returns false with a TypeError or OverflowError in torch's words. CPU only:
// a CUDA kernel cannot read host memory.
bool NumberAsTensor(const char* op, const char* what, PyObject* number,
                    const TensorRef& like, void* bits, TensorRef* ref);

// float16 and bfloat16 compute in float32 (torch's opmath type), and torch
// applies a Python number there unrounded to the tensor's dtype
// (mul(float16 [1e-3], 1e5) is 100.06, not inf). A 0-dim float16 operand
// cannot carry that, so for these dtypes the host folds the number into
// add's float attribute alpha instead (core/prepare/prepare.cc): it checks
// `number` as NumberAsTensor does and gives it as a float.
inline bool AppliedInFloat32(DtypeIndex dtype) {
  return dtype == kFloat16 || dtype == kBFloat16;
}
bool NumberAsFloat32(const char* op, const char* what, PyObject* number,
                     const TensorRef& like, float* value);

// A 0-dim view of `value` in `like`'s dtype (a float dtype) on its device,
// stored in `bits` (8 bytes, aligned): the 1 or -0.0 a folded number leaves
// in its place.
void FloatAsTensor(double value, const TensorRef& like, void* bits,
                   TensorRef* ref);

}  // namespace torchferry
