#include "core/prepare/number_tensor.h"

#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/bridge/dtypes.h"
#include "core/bridge/py_errors.h"

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

// The value of IEEE binary16 `h`.
double HalfValue(uint16_t h) {
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  const double sign = (h & 0x8000u) != 0 ? -1.0 : 1.0;
  if (exponent == 0x1f) return mantissa != 0 ? NAN : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(mantissa + 1024, exponent - 25);
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

// The refusal of a number outside dtype's range, which `range` states.
bool RaiseOverflow(const char* op, const char* what, PyObject* value,
                   DtypeIndex dtype, const std::string& range) {
  PyObject* text = PyObject_Str(value);
  const std::string shown = text ? Utf8Text(text) : "the value";
  Py_XDECREF(text);
  const char* name = Dtype(dtype).name;
  return RaiseError(PyExc_OverflowError,
                    fmt::format("{}(): {}={} cannot be converted to {} "
                                "without overflow ({} takes {})",
                                op, what, shown, name, name, range));
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
    return RaiseOverflow(op, what, value, dtype,
                         fmt::format("{} to {}", lo, hi));
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
  if (!CheckNumberKind(op, what, number, like.dtype)) return false;
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

// The value of the element of float `dtype` that `bits` holds.
double FloatElement(const void* bits, DtypeIndex dtype) {
  switch (dtype) {
    case kFloat64: {
      double d;
      std::memcpy(&d, bits, 8);
      return d;
    }
    case kFloat32: {
      float f;
      std::memcpy(&f, bits, 4);
      return f;
    }
    case kFloat16: {
      uint16_t h;
      std::memcpy(&h, bits, 2);
      return HalfValue(h);
    }
    default: {  // bfloat16: the top half of a float32
      uint16_t h;
      std::memcpy(&h, bits, 2);
      const uint32_t widened = static_cast<uint32_t>(h) << 16;
      float f;
      std::memcpy(&f, &widened, 4);
      return f;
    }
  }
}

// The element of `dtype` that `bits` (little-endian, 8 bytes) holds, as the
// Python object torch.full takes for it: a bool, a float, or an int that is
// the element's value, except uint64's, given as its int64 bit pattern.
PyObject* ElementObject(const void* bits, DtypeIndex dtype) {
  if (dtype == kBool) {
    return PyBool_FromLong(*static_cast<const unsigned char*>(bits) != 0);
  }
  if (Dtype(dtype).is_float) {
    return PyFloat_FromDouble(FloatElement(bits, dtype));
  }
  const int width = Dtype(dtype).dtype.bits;
  uint64_t u = 0;
  std::memcpy(&u, bits, static_cast<size_t>(Dtype(dtype).itemsize));
  if (width == 64) return PyLong_FromLongLong(static_cast<int64_t>(u));
  if (Dtype(dtype).dtype.code == TF_DTYPE_UINT) {
    return PyLong_FromUnsignedLongLong(u);
  }
  const uint64_t sign = uint64_t{1} << (width - 1);
  return PyLong_FromLongLong(static_cast<int64_t>((u ^ sign) - sign));
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

bool CheckNumberKind(const char* op, const char* what, PyObject* number,
                     DtypeIndex dtype) {
  const Category number_category = CategoryOf(number);
  const Category tensor_category = CategoryOf(dtype);
  if (number_category <= tensor_category) return true;
  return RaiseError(
      PyExc_TypeError,
      fmt::format("{}(): {} is {} but input has dtype {}; torch would promote "
                  "the result to another dtype, which torchferry does not do: "
                  "pass {} to match input, or cast input first",
                  op, what, CategoryName(number_category), Dtype(dtype).name,
                  CategoryName(tensor_category)));
}

bool WrappedInt(const char* op, const char* what, PyObject* value,
                DtypeIndex dtype, int64_t* result) {
  // torch holds the number as an int64 (or, past it, a uint64) and casts it
  // to the dtype unchecked: the low bits are the element.
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
  if (overflow == 0 && v == -1 && PyErr_Occurred()) return false;
  if (overflow == 0) {
    *result = dtype == kBool ? v != 0 : v;
    return true;
  }
  if (overflow > 0) {
    const unsigned long long u = PyLong_AsUnsignedLongLong(value);
    if (u != static_cast<unsigned long long>(-1) || !PyErr_Occurred()) {
      *result = dtype == kBool ? 1 : static_cast<int64_t>(u);
      return true;
    }
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return false;
    PyErr_Clear();
  }
  PyObject* text = PyObject_Str(value);
  const std::string shown = text ? Utf8Text(text) : "the value";
  Py_XDECREF(text);
  return RaiseError(PyExc_OverflowError,
                    fmt::format("{}(): {}={} is past what torch holds a Python "
                                "int in (-2**63 to 2**64 - 1)",
                                op, what, shown));
}

// A Python int past -2**63 to 2**64 - 1 is one torch cannot hold as a
// number at all: OverflowError, whatever the dtype.
bool HeldByTorch(const char* op, const char* what, PyObject* value) {
  int64_t unused;
  return !PyLong_Check(value) || WrappedInt(op, what, value, kInt64, &unused);
}

bool CheckedFloat(const char* op, const char* what, PyObject* value,
                  DtypeIndex dtype, double* result) {
  if (!HeldByTorch(op, what, value)) return false;
  const double v = PyFloat_AsDouble(value);  // an int or bool: exact enough
  if (v == -1.0 && PyErr_Occurred()) return false;
  // The largest finite value of each float dtype, as c10's overflow check
  // compares against it.
  const double largest = dtype == kFloat64   ? DBL_MAX
                         : dtype == kFloat32 ? FLT_MAX
                         : dtype == kFloat16 ? 65504.0
                                             : 3.3895313892515355e38;
  if (std::isfinite(v) && std::fabs(v) > largest) {
    return RaiseOverflow(op, what, value, dtype,
                         fmt::format("-{:g} to {:g}", largest, largest));
  }
  alignas(8) unsigned char bits[8];
  StoreFloat(v, dtype, bits);
  *result = FloatElement(bits, dtype);
  return true;
}

bool AlphaArg(const char* op, PyObject* value, DtypeIndex dtype, tf_arg* arg) {
  *arg = tf_arg{};
  if (!PyFloat_Check(value) && !PyLong_Check(value)) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): expected alpha to be a number, got {}",
                                  op, Py_TYPE(value)->tp_name));
  }
  if (PyBool_Check(value) && dtype != kBool) {
    return RaiseError(
        PyExc_TypeError,
        fmt::format("{}(): alpha is a bool but input has dtype "
                    "{}; torch takes a bool alpha for bool "
                    "results only: pass {}",
                    op, Dtype(dtype).name,
                    Dtype(dtype).is_float ? "a float" : "an int"));
  }
  if (Dtype(dtype).is_float) {
    arg->kind = TF_ARG_FLOAT;
    return CheckedFloat(op, "alpha", value, dtype, &arg->value.f);
  }
  if (!PyLong_Check(value)) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): alpha is a float but input has "
                                  "integer dtype {}; pass an int",
                                  op, Dtype(dtype).name));
  }
  arg->kind = TF_ARG_INT;
  // A bool result takes any int alpha as its truth (torch does too).
  return dtype == kBool ? WrappedInt(op, "alpha", value, dtype, &arg->value.i)
                        : CheckedInt(op, "alpha", value, dtype, &arg->value.i);
}

bool BoundArg(const char* op, const char* what, PyObject* value,
              DtypeIndex dtype, tf_arg* arg) {
  *arg = tf_arg{};
  if (!CheckNumberKind(op, what, value, dtype)) return false;
  if (Dtype(dtype).is_float) {
    arg->kind = TF_ARG_FLOAT;
    return CheckedFloat(op, what, value, dtype, &arg->value.f);
  }
  arg->kind = TF_ARG_INT;
  return CheckedInt(op, what, value, dtype, &arg->value.i);
}

bool NumberAsTensor(const char* op, const char* what, PyObject* number,
                    const TensorRef& like, void* bits, TensorRef* ref) {
  const DtypeIndex dtype = like.dtype;
  if (!CheckNumber(op, what, number, like)) return false;
  if (CategoryOf(dtype) == Category::kFloat) {
    if (!HeldByTorch(op, what, number)) return false;
    const double v = PyFloat_AsDouble(number);  // an int or bool: exact enough
    if (v == -1.0 && PyErr_Occurred()) return false;
    StoreFloat(v, dtype, bits);
  } else {
    int64_t v;
    if (!WrappedInt(op, what, number, dtype, &v)) return false;
    // Little-endian: the low bytes of the two's complement are the value.
    std::memset(bits, 0, 8);
    std::memcpy(bits, &v, static_cast<size_t>(Dtype(dtype).itemsize));
  }
  ZeroDimView(like, bits, number, ref);
  return true;
}

bool NumberAsFloat32(const char* op, const char* what, PyObject* number,
                     const TensorRef& like, float* value) {
  if (!CheckNumber(op, what, number, like) || !HeldByTorch(op, what, number)) {
    return false;
  }
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

PyObject* NumberElement(NumberRule rule, const char* op, const char* what,
                        PyObject* number, const TensorRef& like) {
  alignas(8) unsigned char bits[8] = {};
  switch (rule) {
    case NumberRule::kWrapped: {
      TensorRef ref;
      if (!NumberAsTensor(op, what, number, like, bits, &ref)) return nullptr;
      break;
    }
    case NumberRule::kChecked: {
      tf_arg arg;
      if (!BoundArg(op, what, number, like.dtype, &arg)) return nullptr;
      if (arg.kind == TF_ARG_FLOAT) return PyFloat_FromDouble(arg.value.f);
      std::memcpy(bits, &arg.value.i, 8);  // its low bits are the element
      break;
    }
    case NumberRule::kNone:
      RaiseError(
          PyExc_TypeError,
          fmt::format("{}(): no Python number stands for {}; ops.schemas() "
                      "marks the arguments one may stand for number_ok",
                      op, what));
      return nullptr;
  }
  return ElementObject(bits, like.dtype);
}

}  // namespace torchferry
