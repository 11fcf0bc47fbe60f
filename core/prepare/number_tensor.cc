#include "core/prepare/number_tensor.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "core/bridge/dtypes.h"
#include "core/python/py_errors.h"

namespace torchferry {
namespace {

// IEEE binary16 and bfloat16 from a float, rounding to nearest even, as
// torch's own conversions do.
uint16_t HalfBits(float value) {
  uint32_t f;
  std::memcpy(&f, &value, 4);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t abs = f & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u |
                                 (abs > 0x7f800000u ? 0x200u : 0));
  }
  if (abs >= 0x477ff000u)
    return static_cast<uint16_t>(sign | 0x7c00u);  // overflow
  if (abs < 0x38800000u) {                         // a subnormal half, or zero
    const float magnitude = std::fabs(value) * 16777216.0f;  // 2**24
    return static_cast<uint16_t>(
        sign | static_cast<uint32_t>(std::nearbyint(magnitude)));
  }
  const uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

uint16_t BFloatBits(float value) {
  uint32_t f;
  std::memcpy(&f, &value, 4);
  if ((f & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((f >> 16) | 0x40u);
  return static_cast<uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

enum class Category { kBool, kInt, kFloat };

Category CategoryOf(PyObject* number) {
  if (PyBool_Check(number)) return Category::kBool;
  return PyLong_Check(number) ? Category::kInt : Category::kFloat;
}

Category CategoryOf(DtypeIndex dtype) {
  if (dtype == kBool) return Category::kBool;
  return Dtype(dtype).is_float ? Category::kFloat : Category::kInt;
}

const char* CategoryName(Category c) {
  return c == Category::kBool  ? "a bool"
         : c == Category::kInt ? "an int"
                               : "a float";
}

}  // namespace

bool CheckedInt(const char* op, const char* what, PyObject* value,
                DtypeIndex dtype, int64_t* result) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow == 0 && v == -1 && PyErr_Occurred()) return false;
  // torch's rule (c10::checked_convert): the value must fit the dtype; uint8
  // also takes negatives down to -255, which wrap. uint16, uint32 and uint64
  // skip the check in torch: any int from -2**63 to 2**64 - 1 wraps modulo
  // 2**bits (NumberAsTensor keeps the low bits).
  const int bits = Dtype(dtype).dtype.bits;
  const bool is_unsigned = Dtype(dtype).dtype.code == TF_DTYPE_UINT;
  long long lo = INT64_MIN;
  unsigned long long hi = INT64_MAX;
  if (is_unsigned && bits > 8) {
    hi = UINT64_MAX;
  } else if (bits < 64 && dtype != kBool) {
    hi = is_unsigned ? (1ull << bits) - 1 : (1ull << (bits - 1)) - 1;
    lo = is_unsigned ? -static_cast<long long>(hi)
                     : -static_cast<long long>(hi) - 1;
  }
  if (overflow > 0 && hi > static_cast<unsigned long long>(INT64_MAX)) {
    // Past int64 but perhaps within uint64: its bit pattern is the element.
    const unsigned long long u = PyLong_AsUnsignedLongLong(value);
    if (u != static_cast<unsigned long long>(-1) || !PyErr_Occurred()) {
      *result = static_cast<int64_t>(u);
      return true;
    }
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return false;
    PyErr_Clear();
  }
  if (overflow != 0 || v < lo ||
      (v > 0 && static_cast<unsigned long long>(v) > hi)) {
    PyObject* text = PyObject_Str(value);
    const std::string shown = text ? Utf8Text(text) : "the value";
    Py_XDECREF(text);
    return RaiseError(
        PyExc_OverflowError,
        fmt::format("{}(): {}={} cannot be converted to {} without overflow "
                    "({} takes {} to {})",
                    op, what, shown, Dtype(dtype).name, Dtype(dtype).name, lo,
                    hi));
  }
  // A negative wraps modulo 2**bits: in unsigned arithmetic, where uint64's
  // hi + 1 is 0 and leaves the two's complement as it is.
  *result =
      is_unsigned && v < 0
          ? static_cast<int64_t>(static_cast<unsigned long long>(v) + hi + 1)
          : v;
  return true;
}

namespace {

// torch's category rule and the CPU-only rule, both in torch's words.
bool CheckNumber(const char* op, const char* what, PyObject* number,
                 const TensorRef& like) {
  const DtypeIndex dtype = like.dtype;
  const Category number_category = CategoryOf(number);
  const Category tensor_category = CategoryOf(dtype);
  if (number_category > tensor_category) {
    return RaiseError(
        PyExc_TypeError,
        fmt::format(
            "{}(): {} is {} but input has dtype {}; torch would promote "
            "the result to another dtype, which torchferry does not do: "
            "pass {} to match input, or cast input first",
            op, what, CategoryName(number_category), Dtype(dtype).name,
            CategoryName(tensor_category)));
  }
  if (like.view.device.device_type != TF_DEVICE_CPU) {
    return RaiseError(
        PyExc_TypeError,
        fmt::format("{}(): {} is a Python number, which stands for a tensor on "
                    "the cpu only; input is on another device: pass a tensor "
                    "there (torch.tensor({}, device=input.device))",
                    op, what, what));
  }
  return true;
}

// A float `v` as one element of float `dtype`, rounded once.
void StoreFloat(double v, DtypeIndex dtype, void* bits) {
  std::memset(bits, 0, 8);
  switch (dtype) {
    case kFloat64:
      std::memcpy(bits, &v, 8);
      break;
    case kFloat32: {
      const float f = static_cast<float>(v);
      std::memcpy(bits, &f, 4);
      break;
    }
    case kFloat16: {
      const uint16_t h = HalfBits(static_cast<float>(v));
      std::memcpy(bits, &h, 2);
      break;
    }
    default: {
      const uint16_t b = BFloatBits(static_cast<float>(v));
      std::memcpy(bits, &b, 2);
      break;
    }
  }
}

void ZeroDimView(const TensorRef& like, void* bits, PyObject* object,
                 TensorRef* ref) {
  *ref = TensorRef{};
  ref->view.data = bits;
  ref->view.device = like.view.device;
  ref->view.ndim = 0;
  ref->view.dtype = Dtype(like.dtype).dtype;
  ref->view.flags = TF_TENSOR_CONTIGUOUS;
  ref->view.source_kind = TF_SOURCE_NONE;
  ref->dtype = like.dtype;
  ref->numel = 1;
  ref->object = object;
}

}  // namespace

bool NumberAsTensor(const char* op, const char* what, PyObject* number,
                    const TensorRef& like, void* bits, TensorRef* ref) {
  const DtypeIndex dtype = like.dtype;
  if (!CheckNumber(op, what, number, like)) return false;
  if (CategoryOf(dtype) == Category::kFloat) {
    const double v = PyFloat_AsDouble(number);  // an int or bool: exact enough
    if (v == -1.0 && PyErr_Occurred()) return false;
    StoreFloat(v, dtype, bits);
  } else {
    int64_t v;
    if (!CheckedInt(op, what, number, dtype, &v)) return false;
    // Little-endian: the low bytes of the two's complement are the value.
    std::memset(bits, 0, 8);
    std::memcpy(bits, &v, static_cast<size_t>(Dtype(dtype).itemsize));
  }
  ZeroDimView(like, bits, number, ref);
  return true;
}

bool NumberAsFloat32(const char* op, const char* what, PyObject* number,
                     const TensorRef& like, float* value) {
  if (!CheckNumber(op, what, number, like)) return false;
  const double v = PyFloat_AsDouble(number);  // an int or bool: exact enough
  if (v == -1.0 && PyErr_Occurred()) return false;
  *value = static_cast<float>(v);  // as torch reads a wrapped number in opmath
  return true;
}

void FloatAsTensor(double value, const TensorRef& like, void* bits,
                   TensorRef* ref) {
  StoreFloat(value, like.dtype, bits);
  ZeroDimView(like, bits, like.object, ref);
}

}  // namespace torchferry
