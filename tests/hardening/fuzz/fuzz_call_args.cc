// libFuzzer target: bytes -> an op call (tensor views of any shape, strides,
// dtype and aliasing, Python numbers and attributes, an out= that may be
// wrong) -> the core's own preparation (core/prepare/prepare.cc and
// core/prepare/checks.cc, linked as they are, with an embedded Python
// interpreter for the argument objects and the exceptions) -> when it accepts,
// the CPU plugin's kernel (and example_c's, for the keys it has).
//
// The views reach the preparation through a TensorSource
// (core/prepare/call_frame.h): the call's tensor arguments are placeholder
// objects, and the frame asks this file for the view each stands for, and for
// the out when the call passed none. Everything else, from parsing the
// attributes to broadcasting, output shapes and every check, is the code a call
// from Python runs.
//
// What a torch tensor can be, a view here can be: shapes 0..5 per dim (rarely
// deeper than any kernel takes), strides of contiguous, transposed, sliced,
// expanded and arbitrary non-negative layouts, zero elements. Each tensor
// lives alone in a block of exactly the bytes its view spans, so
// AddressSanitizer reports any kernel that reads or writes outside a view.
//
// Properties, each a trap when broken:
//  - the checks accept no out with stride 0 on a dim of size > 1, and no out
//    that overlaps an input, except an exact alias where the op allows it;
//  - a kernel handed an accepted call returns TF_OK, or TF_ERROR_UNSUPPORTED
//    with a message, or (embedding, for an id past its table)
//    TF_ERROR_OUT_OF_RANGE with a message and out untouched; never another
//    status;
//  - a kernel writes only the elements of its out view: every other byte of
//    every block is unchanged after the call.
#include <Python.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "abi/torchferry.h"
#include "byte_reader.h"
#include "core/bridge/bridge.h"
#include "core/bridge/dtypes.h"
#include "core/prepare/call_frame.h"
#include "core/prepare/checks.h"
#include "core/prepare/prepare.h"
#include "core/python/op_functions.h"
#include "core/python/py_args.h"
#include "loader/loader.h"
#include "loader/op_table.h"

using namespace torchferry;
using torchferry::fuzz::ByteReader;

namespace {

Registry* g_cpu = nullptr;
Registry* g_example = nullptr;

[[noreturn]] void Broken(const std::string& what) {
  std::fprintf(stderr, "fuzz_call_args: %s\n", what.c_str());
  std::abort();
}

uint64_t Mix(uint64_t& state) {  // splitmix64
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint16_t HalfBits(float f) {  // exact for the small quarters we generate
  if (f == 0) return 0;
  uint16_t sign = f < 0 ? 0x8000 : 0;
  int exponent;
  float mantissa = std::frexp(std::fabs(f), &exponent);  // [0.5, 1)
  int e = exponent - 1 + 15;
  uint16_t m = static_cast<uint16_t>((mantissa * 2 - 1) * 1024);
  return static_cast<uint16_t>(sign | (e << 10) | m);
}

// Same rule as the bridge's (core/bridge/bridge_internal.h): row-major compact,
// size-1 dims ignored, zero elements compact.
uint32_t ContiguityFlag(int ndim, const int64_t* shape,
                        const int64_t* strides) {
  int64_t expected = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    if (shape[d] == 0) return TF_TENSOR_CONTIGUOUS;
    if (strides[d] != expected) return 0;
    expected *= shape[d];
  }
  return TF_TENSOR_CONTIGUOUS;
}

std::string ViewText(const tf_tensor& v) {
  std::string s = "dtype(" + std::to_string(v.dtype.code) + "," +
                  std::to_string(v.dtype.bits) + ") shape [";
  for (int d = 0; d < v.ndim; ++d)
    s += (d ? ", " : "") + std::to_string(v.shape[d]);
  s += "] strides [";
  for (int d = 0; d < v.ndim; ++d) {
    s += (d ? ", " : "") + std::to_string(v.strides[d]);
  }
  char data[32];
  std::snprintf(data, sizeof data, "%p", v.data);
  return s + "] data " + data +
         (v.flags & TF_TENSOR_CONTIGUOUS ? " contiguous" : "");
}

// One tensor: its own block of memory, its view, and the TensorRef the core's
// checks take.
struct Operand {
  std::vector<int64_t> shape, strides;
  std::unique_ptr<unsigned char[]> owned;
  unsigned char* block = nullptr;  // start of the block (owned or another's)
  size_t block_bytes = 0;
  TensorRef ref{};
};

constexpr DtypeIndex kAllDtypes[] = {
    kFloat32, kFloat64, kFloat16, kBFloat16, kInt8,   kInt16, kInt32,
    kInt64,   kUInt8,   kBool,    kUInt16,   kUInt32, kUInt64};
static_assert(std::size(kAllDtypes) == kNumDtypes);

class Call : public TensorSource {
 public:
  explicit Call(ByteReader& in) : in_(in) {}
  ~Call() override {
    Py_XDECREF(list_);
    for (PyObject* o : objects_) Py_DECREF(o);
  }

  // Decides an op, builds its arguments, prepares the call as the extension
  // does, and runs the kernel when the preparation accepts.
  void Run();

  // TensorSource
  bool Take(PyObject* obj, const char* what, bool writable,
            TensorRef* ref) override;
  PyObject* Allocate(const TensorRef& like, DtypeIndex dtype, int ndim,
                     const int64_t* shape) override;

 private:
  int64_t Dim() {
    const uint8_t v = in_.U8();
    return v % 16 == 0 ? 0 : 1 + v % 5;
  }
  // At most 4096 elements, so that deep ranks stay cheap: leading dims
  // become 1 (or stay 0) until the rest fits.
  std::vector<int64_t> Shape(int ndim) {
    std::vector<int64_t> s(ndim);
    for (int64_t& d : s) d = Dim();
    // The longest run of trailing dims that fits (a 0 counted as 1, so that
    // an empty tensor's extent stays small too); the product of them all
    // would overflow at the deepest ranks.
    int64_t numel = 1;
    for (int d = ndim - 1; d >= 0; --d) {
      const int64_t extent = std::max<int64_t>(s[d], 1);
      if (numel * extent > 4096) {
        for (int e = d; e >= 0; --e) s[e] = s[e] == 0 ? 0 : 1;
        break;
      }
      numel *= extent;
    }
    return s;
  }
  int Rank() {
    const uint8_t v = in_.U8();
    // Mostly 0..4, rarely to 11, and once in 256 across TF_MAX_NDIM (62..66),
    // where the host's rank limit lies.
    if (v == 255) return TF_MAX_NDIM - 2 + static_cast<int>(in_.Pick(5));
    return v % 32 == 0 ? 5 + v % 7 : v % 5;
  }
  DtypeIndex AnyDtype() { return kAllDtypes[in_.Pick(kNumDtypes)]; }
  DtypeIndex FloatDtype() { return kAllDtypes[in_.Pick(4)]; }
  DtypeIndex MostlyFloat() {  // one byte, then the dtype's
    return in_.Pick(8) == 0 ? AnyDtype() : FloatDtype();
  }

  // A tensor of `shape` in a layout torch can produce, alone in its block
  // (now and then with one spare element at the end, for aliasing outs).
  Operand* Tensor(std::vector<int64_t> shape, DtypeIndex dtype);
  Operand* Fresh(const std::vector<int64_t>& shape, DtypeIndex dtype);
  // An out for an op whose out should be `shape`/`dtype`: usually just that,
  // sometimes another shape, an expanded view or an alias of an input.
  Operand* Out(const std::vector<int64_t>& shape, DtypeIndex dtype);
  void Fill(Operand* o, DtypeIndex dtype);
  std::vector<int64_t> BroadcastPartner(const std::vector<int64_t>& shape);

  // The argument objects: a placeholder for a tensor input (remembered as one
  // an out may alias), for another operand, a Python int, float or bool.
  PyObject* Input(Operand* o);
  PyObject* Placeholder(Operand* o);
  PyObject* Keep(PyObject* o);
  PyObject* Number(DtypeIndex like);
  // The arguments of op_, drawn from the bytes into values_ (and out_arg_).
  void Build();

  void CheckAccepted();
  void Describe(const std::string& plugin) const;
  void CallKernel(Registry* registry);
  std::set<uintptr_t> Elements(const tf_tensor& v, int itemsize,
                               bool* distinct) const;

  ByteReader& in_;
  OpId op_ = OpOf("abs");
  std::vector<std::unique_ptr<Operand>> operands_;
  std::vector<PyObject*> objects_;  // owned: placeholders and numbers
  PyObject* list_ = nullptr;        // stack's list
  PyObject* values_[kMaxParams] = {};
  PyObject* out_arg_ = nullptr;
  std::vector<PyObject*> noop_args_;
  CallFrame frame_{Bridge::Get(), "fuzz"};
  // Inputs an out may alias (Out() draws from them).
  std::vector<std::pair<const tf_tensor*, int>> tensor_inputs_;
};

Operand* Call::Tensor(std::vector<int64_t> shape, DtypeIndex dtype) {
  auto o = std::make_unique<Operand>();
  const int ndim = static_cast<int>(shape.size());
  const size_t slack = in_.Pick(4) == 0 ? 1 : 0;
  std::vector<int64_t> strides(ndim);
  int64_t step = 1;
  const uint32_t layout = in_.Pick(6);
  if (layout == 4 && ndim > 0) step = 1 + in_.Pick(3);  // sliced [::step]
  // Compact over the physical order; a transposed view swaps two dims of it.
  std::vector<int64_t> physical = shape;
  int swap_a = 0, swap_b = 0;
  if (layout == 1 && ndim >= 2) {
    swap_a = in_.Pick(ndim);
    swap_b = in_.Pick(ndim);
    std::swap(physical[swap_a], physical[swap_b]);
  }
  int64_t running = step;
  for (int d = ndim - 1; d >= 0; --d) {
    strides[d] = running;
    running *= std::max<int64_t>(physical[d], 1);
  }
  if (layout == 1 && ndim >= 2) {
    std::swap(strides[swap_a], strides[swap_b]);
  } else if (layout == 2) {  // arbitrary non-negative strides (as_strided)
    for (int64_t& s : strides) s = in_.Pick(7);
  } else if (layout == 3) {  // expanded dims
    for (int64_t& s : strides) {
      if (in_.Pick(3) == 0) s = 0;
    }
  }
  int64_t numel = 1, reach = 0;
  for (int d = 0; d < ndim; ++d) {
    numel *= shape[d];
    reach += (shape[d] - 1) * strides[d];
  }
  const int itemsize = Dtype(dtype).itemsize;
  const size_t elements = numel == 0 ? 0 : static_cast<size_t>(reach + 1);
  o->block_bytes = (elements + slack) * itemsize;
  o->owned.reset(new unsigned char[o->block_bytes]);
  o->block = o->owned.get();
  o->shape = std::move(shape);
  o->strides = std::move(strides);
  Fill(o.get(), dtype);

  tf_tensor& v = o->ref.view;
  v.data = o->block;
  v.device = {TF_DEVICE_CPU, 0};
  v.ndim = ndim;
  v.dtype = Dtype(dtype).dtype;
  v.shape = o->shape.data();
  v.strides = o->strides.data();
  v.byte_offset = 0;
  v.source = nullptr;
  v.source_kind = TF_SOURCE_NONE;
  v.flags = ContiguityFlag(ndim, v.shape, v.strides);
  o->ref.dtype = dtype;
  o->ref.numel = numel;
  o->ref.object = nullptr;
  if (std::getenv("TF_FUZZ_VERBOSE") != nullptr) {
    std::fprintf(stderr, "tensor: %s, block %zu bytes, numel %lld\n",
                 ViewText(v).c_str(), o->block_bytes,
                 static_cast<long long>(numel));
  }
  operands_.push_back(std::move(o));
  return operands_.back().get();
}

Operand* Call::Fresh(const std::vector<int64_t>& shape, DtypeIndex dtype) {
  auto o = std::make_unique<Operand>();
  const int ndim = static_cast<int>(shape.size());
  o->shape = shape;
  o->strides.resize(ndim);
  int64_t running = 1, numel = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    o->strides[d] = running;
    running *= std::max<int64_t>(shape[d], 1);
    numel *= shape[d];
  }
  const int itemsize = Dtype(dtype).itemsize;
  o->block_bytes = static_cast<size_t>(numel) * itemsize;
  o->owned.reset(new unsigned char[o->block_bytes]);
  o->block = o->owned.get();
  std::memset(o->block, 0x5a, o->block_bytes);
  tf_tensor& v = o->ref.view;
  v.data = o->block;
  v.device = {TF_DEVICE_CPU, 0};
  v.ndim = ndim;
  v.dtype = Dtype(dtype).dtype;
  v.shape = o->shape.data();
  v.strides = o->strides.data();
  v.flags = TF_TENSOR_CONTIGUOUS;
  o->ref.dtype = dtype;
  o->ref.numel = numel;
  operands_.push_back(std::move(o));
  return operands_.back().get();
}

void Call::Fill(Operand* o, DtypeIndex dtype) {
  uint64_t state = in_.U8();
  const bool extreme = in_.Pick(8) == 0;  // any bit pattern at all
  const int itemsize = Dtype(dtype).itemsize;
  const size_t n = o->block_bytes / itemsize;
  for (size_t i = 0; i < n; ++i) {
    unsigned char* p = o->block + i * itemsize;
    const uint64_t r = Mix(state);
    const int small = static_cast<int>(r % 33) - 16;  // quarters in [-4, 4]
    if (dtype == kBool) {
      *p = r & 1;
      continue;
    }
    if (extreme) {
      std::memcpy(p, &r, itemsize);
      continue;
    }
    switch (dtype) {
      case kFloat32: {
        float f = small / 4.0f;
        std::memcpy(p, &f, 4);
        break;
      }
      case kFloat64: {
        double f = small / 4.0;
        std::memcpy(p, &f, 8);
        break;
      }
      case kFloat16: {
        uint16_t h = HalfBits(small / 4.0f);
        std::memcpy(p, &h, 2);
        break;
      }
      case kBFloat16: {
        float f = small / 4.0f;
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        uint16_t b = static_cast<uint16_t>(bits >> 16);
        std::memcpy(p, &b, 2);
        break;
      }
      case kUInt8:
        *p = static_cast<unsigned char>(r % 9);
        break;
      default: {  // signed ints: the low bytes of a little-endian int64
        int64_t v = small / 2;
        std::memcpy(p, &v, itemsize);
        break;
      }
    }
  }
}

std::vector<int64_t> Call::BroadcastPartner(const std::vector<int64_t>& shape) {
  const uint32_t how = in_.Pick(8);
  if (how == 0) return Shape(Rank());  // anything: may not broadcast
  std::vector<int64_t> s = shape;
  if (how == 1 && s.size() < 6) s.insert(s.begin(), Dim());  // more dims
  int drop = s.empty() ? 0 : in_.Pick(static_cast<uint32_t>(s.size()) + 1);
  if (how >= 4) drop = 0;
  s.erase(s.begin(), s.begin() + drop);
  for (int64_t& d : s) {
    if (in_.Pick(3) == 0) d = 1;
  }
  return s;
}

Operand* Call::Out(const std::vector<int64_t>& shape, DtypeIndex dtype) {
  const uint32_t how = in_.Pick(16);
  if (how == 0) return Tensor(Shape(Rank()), dtype);  // likely the wrong shape
  if (how == 1)
    return Tensor(shape, dtype);                  // any layout, maybe
                                                  // expanded
  if (how == 2) return Fresh(shape, AnyDtype());  // maybe the wrong dtype
  if ((how == 3 || how == 4) && !tensor_inputs_.empty()) {
    // An alias: exactly an input's view, or that view shifted by an element.
    const tf_tensor* target =
        tensor_inputs_[in_.Pick(tensor_inputs_.size())].first;
    Operand* owner = nullptr;
    for (auto& o : operands_) {
      if (&o->ref.view == target) owner = o.get();
    }
    if (owner != nullptr && owner->ref.dtype == dtype) {
      auto o = std::make_unique<Operand>();
      o->shape = owner->shape;
      o->strides = owner->strides;
      o->block = owner->block;
      o->block_bytes = owner->block_bytes;
      o->ref = owner->ref;
      o->ref.view.shape = o->shape.data();
      o->ref.view.strides = o->strides.data();
      if (how == 4) {
        // The same view one element further on, where the block has room.
        int64_t reach = 0;
        for (size_t d = 0; d < o->shape.size(); ++d) {
          reach += (o->shape[d] - 1) * o->strides[d];
        }
        const size_t item = Dtype(dtype).itemsize;
        if (owner->ref.numel == 0 ||
            (static_cast<size_t>(reach) + 2) * item > owner->block_bytes) {
          return Fresh(shape, dtype);
        }
        o->ref.view.data = static_cast<unsigned char*>(o->ref.view.data) + item;
      }
      operands_.push_back(std::move(o));
      return operands_.back().get();
    }
  }
  return Fresh(shape, dtype);
}

PyObject* Call::Keep(PyObject* o) {
  if (o == nullptr) Broken("could not make an argument object");
  objects_.push_back(o);
  return o;
}

PyObject* Call::Placeholder(Operand* o) {
  return Keep(PyCapsule_New(o, "fuzz.operand", nullptr));
}

PyObject* Call::Input(Operand* o) {
  tensor_inputs_.push_back({&o->ref.view, 0});
  return Placeholder(o);
}

// A Python number as an attribute or an operand: mostly of `like`'s kind,
// now and then another kind or an extreme value.
PyObject* Call::Number(DtypeIndex like) {
  const uint32_t kind = in_.Pick(8);
  if (kind == 0) return Keep(PyBool_FromLong(in_.Bit()));
  if (kind == 1) return Keep(PyFloat_FromDouble(in_.Raw<double>()));
  if (kind == 2) return Keep(PyLong_FromLongLong(in_.Raw<int64_t>()));
  const int small = static_cast<int>(in_.Pick(33)) - 16;
  if (Dtype(like).is_float) return Keep(PyFloat_FromDouble(small / 4.0));
  return Keep(PyLong_FromLong(like == kBool ? small & 1 : small / 2));
}

bool Call::Take(PyObject* obj, const char* what, bool writable,
                TensorRef* ref) {
  (void)writable;
  auto* o = static_cast<Operand*>(PyCapsule_GetPointer(obj, "fuzz.operand"));
  if (o == nullptr) {
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError, "%s: expected a tensor, got %s", what,
                 Py_TYPE(obj)->tp_name);
    return false;
  }
  *ref = o->ref;  // the frame's copy: broadcasting rewrites it, not ours
  return true;
}

PyObject* Call::Allocate(const TensorRef& like, DtypeIndex dtype, int ndim,
                         const int64_t* shape) {
  (void)like;
  Operand* out = Out(std::vector<int64_t>(shape, shape + ndim),
                     dtype == kNoDtype ? AnyDtype() : dtype);
  PyObject* placeholder = Placeholder(out);
  Py_INCREF(placeholder);  // the frame owns this reference
  return placeholder;
}

// Reads, in this order: per tensor its dtype (where it has its own), its rank
// and dims (where they are not another tensor's), then its layout and fill
// (Tensor()); attributes after the tensors they go with; the out last (in
// Allocate, once the preparation knows what shape it must have).
void Call::Build() {
  switch (Entry(op_).geometry) {
    case Geometry::kSameShape: {
      const DtypeIndex dtype = AnyDtype();
      std::vector<int64_t> shape = Shape(Rank());
      values_[0] = Input(Tensor(shape, dtype));
      break;
    }
    case Geometry::kBroadcast: {
      const DtypeIndex dtype = AnyDtype();
      std::vector<int64_t> shape = Shape(Rank());
      Operand* x = Tensor(shape, dtype);
      if (in_.Pick(8) == 0) {  // mul(x, 0.5)
        values_[0] = Input(x);
        values_[1] = Number(dtype);
      } else {
        std::vector<int64_t> partner = BroadcastPartner(x->shape);
        const DtypeIndex other = in_.Pick(16) == 0 ? AnyDtype() : dtype;
        Operand* y = Tensor(partner, other);
        if (in_.Bit()) std::swap(x, y);
        values_[0] = Input(x);
        values_[1] = Input(y);
      }
      if (op_ == OpOf("add") && in_.Bit()) values_[2] = Number(dtype);
      break;
    }
    case Geometry::kClamp: {
      const DtypeIndex dtype = AnyDtype();
      std::vector<int64_t> shape = Shape(Rank());
      Operand* x = Tensor(shape, dtype);
      values_[0] = Input(x);
      uint32_t kinds[2];  // none, number, tensor
      kinds[0] = in_.Pick(3);
      kinds[1] = in_.Pick(3);
      if (kinds[0] == 0 && kinds[1] == 0 && in_.Pick(8) != 0) {
        kinds[1] = 1 + in_.Pick(2);
      }
      for (int i = 0; i < 2; ++i) {
        if (kinds[i] == 1) values_[1 + i] = Number(dtype);
        if (kinds[i] == 2) {
          std::vector<int64_t> partner = BroadcastPartner(x->shape);
          values_[1 + i] = Input(Tensor(partner, dtype));
        }
      }
      break;
    }
    case Geometry::kStack: {
      const DtypeIndex dtype = AnyDtype();
      const int count = in_.Pick(8) == 0 ? 0 : 1 + in_.Pick(4);
      list_ = PyList_New(0);
      Operand* first = nullptr;
      for (int i = 0; i < count; ++i) {
        std::vector<int64_t> shape;
        if (first == nullptr || in_.Pick(16) == 0) {
          shape = Shape(Rank());
        } else {
          shape = first->shape;
        }
        Operand* r = Tensor(shape, dtype);
        if (first == nullptr) first = r;
        if (PyList_Append(list_, Input(r)) < 0) Broken("list append failed");
      }
      values_[0] = list_;
      const int rank = first == nullptr ? 0 : first->ref.view.ndim;
      values_[1] = Keep(PyLong_FromLong(
          static_cast<long>(in_.Pick(2 * rank + 5)) - (rank + 2)));
      break;
    }
    case Geometry::kCast: {
      const DtypeIndex dtype = AnyDtype();
      std::vector<int64_t> shape = Shape(Rank());
      Operand* x = Tensor(shape, dtype);
      values_[0] = Input(x);
      if (in_.Pick(16) != 0) {
        const DtypeIndex target = AnyDtype();
        out_arg_ = Placeholder(Out(x->shape, target));
      }
      break;
    }
    case Geometry::kLastDimHalved: {
      const DtypeIndex dtype = MostlyFloat();
      std::vector<int64_t> shape = Shape(std::max(1, Rank()));
      if (in_.Pick(8) != 0) shape.back() *= 2;
      values_[0] = Input(Tensor(shape, dtype));
      break;
    }
    case Geometry::kRowNorm: {
      const DtypeIndex dtype = MostlyFloat();
      std::vector<int64_t> shape = Shape(std::max(1, Rank()));
      Operand* x = Tensor(shape, dtype);
      values_[0] = Input(x);
      std::vector<int64_t> weight = {x->shape.back()};
      if (in_.Pick(16) == 0) weight = Shape(Rank());
      values_[1] = Input(Tensor(weight, dtype));
      if (in_.Bit()) {
        values_[2] = Keep(
            PyFloat_FromDouble(in_.Pick(8) == 0 ? in_.Raw<double>() : 1e-6));
      }
      break;
    }
    case Geometry::kSoftmax: {
      const DtypeIndex dtype = MostlyFloat();
      std::vector<int64_t> shape = Shape(Rank());
      Operand* x = Tensor(shape, dtype);
      values_[0] = Input(x);
      const int rank = x->ref.view.ndim;
      if (in_.Bit()) {
        values_[1] = Keep(PyLong_FromLong(
            static_cast<long>(in_.Pick(2 * rank + 3)) - (rank + 1)));
      }
      break;
    }
    case Geometry::kMatmul: {
      const DtypeIndex dtype = MostlyFloat();
      const int64_t m = Dim(), k = Dim(), n = Dim();
      const bool a3 = in_.Bit(), b3 = in_.Bit();
      std::vector<int64_t> as = {m, k};
      std::vector<int64_t> bs = {k, n};
      if (in_.Pick(16) == 0) bs[0] = Dim();
      if (a3) as.insert(as.begin(), Dim());
      if (b3) {
        const int64_t batch = in_.Bit() ? as[0] : Dim();
        bs.insert(bs.begin(), batch);
      }
      if (in_.Pick(32) == 0) as = Shape(Rank());
      values_[0] = Input(Tensor(as, dtype));
      const DtypeIndex other = in_.Pick(16) == 0 ? AnyDtype() : dtype;
      values_[1] = Input(Tensor(bs, other));
      break;
    }
    // --- attention ---
    case Geometry::kRotary: {
      const DtypeIndex dtype = MostlyFloat();
      std::vector<int64_t> shape = Shape(std::max(1, Rank()));
      Operand* x = Tensor(shape, dtype);
      values_[0] = Input(x);
      // cos/sin: mostly [..., h] with x's trailing leading dims, h <= D / 2.
      std::vector<int64_t> cs(x->shape.begin(), x->shape.end());
      cs.back() = cs.back() / 2 - static_cast<int64_t>(in_.Pick(2));
      if (cs.back() < 0) cs.back() = 0;
      if (cs.size() > 1 && in_.Bit()) cs.erase(cs.begin());
      if (cs.size() > 1 && in_.Bit()) cs[0] = 1;
      if (in_.Pick(16) == 0) cs = Shape(Rank());
      values_[1] = Input(Tensor(cs, dtype));
      if (in_.Pick(16) == 0) cs = Shape(Rank());
      values_[2] = Input(Tensor(cs, in_.Pick(16) == 0 ? AnyDtype() : dtype));
      if (in_.Bit()) values_[3] = Keep(PyBool_FromLong(in_.Bit()));
      break;
    }
    case Geometry::kAttention: {
      const DtypeIndex dtype = MostlyFloat();
      const int64_t b = Dim(), h = Dim(), l = Dim(), s = Dim(), e = Dim();
      const int64_t group = in_.Bit() ? 1 : 1 + in_.Pick(3);
      std::vector<int64_t> qs = {b, h * group, l, e};
      std::vector<int64_t> ks = {b, h, s, e};
      std::vector<int64_t> vs = {b, h, s, in_.Bit() ? e : Dim()};
      if (in_.Pick(8) == 0) qs.erase(qs.begin());
      if (in_.Pick(16) == 0) ks = Shape(Rank());
      values_[0] = Input(Tensor(qs, dtype));
      values_[1] = Input(Tensor(ks, dtype));
      values_[2] = Input(Tensor(vs, in_.Pick(16) == 0 ? AnyDtype() : dtype));
      if (in_.Pick(3) == 0) {
        std::vector<int64_t> ms = {l, s};
        if (in_.Bit()) ms.insert(ms.begin(), 1);
        if (in_.Pick(16) == 0) ms = Shape(Rank());
        const DtypeIndex mask_dtype =
            in_.Bit() ? kBool : (in_.Pick(8) == 0 ? AnyDtype() : dtype);
        values_[3] = Input(Tensor(ms, mask_dtype));
      }
      if (in_.Bit()) values_[4] = Keep(PyBool_FromLong(in_.Bit()));
      if (in_.Pick(4) == 0) values_[5] = Keep(PyFloat_FromDouble(0.125));
      if (group > 1 || in_.Pick(8) == 0) values_[6] = Keep(PyBool_FromLong(1));
      if (in_.Bit()) values_[7] = Keep(PyBool_FromLong(in_.Bit()));
      break;
    }
    case Geometry::kLinear: {
      const DtypeIndex dtype = MostlyFloat();
      const int64_t k = Dim(), n = Dim();
      std::vector<int64_t> xs = Shape(std::max(1, Rank()));
      if (in_.Pick(8) != 0) xs.back() = k;
      std::vector<int64_t> ws = {n, in_.Pick(16) == 0 ? Dim() : k};
      if (in_.Pick(32) == 0) ws = Shape(Rank());
      values_[0] = Input(Tensor(xs, dtype));
      values_[1] = Input(Tensor(ws, in_.Pick(16) == 0 ? AnyDtype() : dtype));
      if (in_.Bit()) {
        std::vector<int64_t> bs = {in_.Pick(16) == 0 ? Dim() : n};
        values_[2] = Input(Tensor(bs, dtype));
      }
      break;
    }
    case Geometry::kAddRowNorm: {
      const DtypeIndex dtype = MostlyFloat();
      std::vector<int64_t> shape = Shape(std::max(1, Rank()));
      Operand* x = Tensor(shape, dtype);
      values_[0] = Input(x);
      std::vector<int64_t> residual = shape;
      if (in_.Pick(16) == 0) residual = Shape(Rank());
      values_[1] =
          Input(Tensor(residual, in_.Pick(16) == 0 ? AnyDtype() : dtype));
      std::vector<int64_t> weight = {x->shape.back()};
      if (in_.Pick(16) == 0) weight = Shape(Rank());
      values_[2] = Input(Tensor(weight, dtype));
      if (in_.Bit()) values_[3] = Keep(PyFloat_FromDouble(1e-6));
      break;
    }
    case Geometry::kEmbedding: {
      // Ids mostly int32/int64 (their values, drawn with the rest of the
      // fill, are mostly outside a small table); a table mostly 2-D.
      const DtypeIndex id_dtype =
          in_.Pick(8) == 0 ? AnyDtype() : (in_.Pick(2) ? kInt32 : kInt64);
      std::vector<int64_t> ids_shape = Shape(Rank());
      values_[0] = Input(Tensor(ids_shape, id_dtype));
      std::vector<int64_t> table_shape =
          in_.Pick(16) == 0 ? Shape(Rank())
                            : std::vector<int64_t>{Dim(), Dim()};
      values_[1] = Input(Tensor(table_shape, AnyDtype()));
      break;
    }
    case Geometry::kCat: {
      const DtypeIndex dtype = AnyDtype();
      const int count = in_.Pick(8) == 0 ? 0 : 1 + in_.Pick(4);
      list_ = PyList_New(0);
      std::vector<int64_t> lead;
      int at = 0;  // the dim the sizes may differ at
      for (int i = 0; i < count; ++i) {
        std::vector<int64_t> shape;
        const uint32_t kind = in_.Pick(16);
        if (i == 0 || kind == 0) {
          shape = Shape(Rank());
          if (i == 0) {
            lead = shape;
            at = lead.empty() ? 0 : static_cast<int>(in_.Pick(lead.size()));
          }
        } else if (kind == 1) {
          shape = {0};  // torch's legacy empty tensor
        } else {
          shape = lead;
          if (!shape.empty()) shape[at] = Dim();
        }
        if (PyList_Append(list_, Input(Tensor(shape, dtype))) < 0) {
          Broken("list append failed");
        }
      }
      values_[0] = list_;
      const int rank = static_cast<int>(lead.size());
      values_[1] = Keep(PyLong_FromLong(
          static_cast<long>(in_.Pick(2 * rank + 3)) - (rank + 1)));
      break;
    }
    case Geometry::kNoop:
    case Geometry::kDeclared: {
      const int count = in_.Pick(5);
      for (int i = 0; i < count; ++i) {
        const DtypeIndex dtype = AnyDtype();
        std::vector<int64_t> shape = Shape(Rank());
        noop_args_.push_back(Input(Tensor(shape, dtype)));
      }
      break;
    }
  }
}

// Byte addresses of every element of `v`; `distinct` says whether no two
// index tuples share one.
std::set<uintptr_t> Call::Elements(const tf_tensor& v, int itemsize,
                                   bool* distinct) const {
  std::set<uintptr_t> seen;
  *distinct = true;
  int64_t numel = 1;
  for (int d = 0; d < v.ndim; ++d) numel *= v.shape[d];
  std::vector<int64_t> index(v.ndim, 0);
  for (int64_t e = 0; e < numel; ++e) {
    int64_t offset = 0;
    for (int d = 0; d < v.ndim; ++d) offset += index[d] * v.strides[d];
    const uintptr_t at =
        reinterpret_cast<uintptr_t>(v.data) + offset * itemsize;
    if (!seen.insert(at).second) *distinct = false;
    for (int d = v.ndim - 1; d >= 0; --d) {
      if (++index[d] < v.shape[d]) break;
      index[d] = 0;
    }
  }
  return seen;
}

void Call::CheckAccepted() {
  if (frame_.out_ref() == nullptr) return;
  const tf_tensor& output_ = frame_.output();
  const int out_item = Dtype(frame_.out_ref()->dtype).itemsize;
  bool distinct;
  std::set<uintptr_t> out_elems = Elements(output_, out_item, &distinct);
  // CallFrame::Take of a tensor to write promises what torch's own out= check
  // does: no stride 0 on a dim of size > 1 of an out that has elements. Other
  // self-overlapping outs (as_strided) pass both.
  for (int d = 0; frame_.out_ref()->numel > 0 && d < output_.ndim; ++d) {
    if (output_.shape[d] > 1 && output_.strides[d] == 0) {
      Broken("the checks accepted an out with stride 0 on a dim of size > 1");
    }
  }
  auto overlaps = [&](const tf_tensor& v, int itemsize) {
    bool unused;
    for (uintptr_t at : Elements(v, itemsize, &unused)) {
      for (int b = 0; b < itemsize; ++b) {
        auto it = out_elems.upper_bound(at + b);
        if (it == out_elems.begin()) continue;
        --it;
        if (at + b < *it + out_item) return true;
      }
    }
    return false;
  };
  auto same_layout = [&](const tf_tensor& a) {
    if (a.data != output_.data || a.ndim != output_.ndim) return false;
    for (int d = 0; d < a.ndim; ++d) {
      if (a.shape[d] != output_.shape[d]) return false;
      if (a.shape[d] > 1 && a.strides[d] != output_.strides[d]) return false;
    }
    return true;
  };
  // Every tensor input, as the kernel sees it (broadcast views included).
  std::vector<const tf_tensor*> inputs;
  for (int i = 0; i < frame_.num_inputs(); ++i) {
    const tf_arg& a = frame_.input(i);
    if (a.kind == TF_ARG_TENSOR) inputs.push_back(a.value.tensor);
    for (int64_t j = 0; a.kind == TF_ARG_TENSOR_LIST && j < a.value.list.count;
         ++j) {
      inputs.push_back(&a.value.list.items[j]);
    }
  }
  const bool exact_alias_ok = Entry(op_).alias == AliasRule::kExact;
  for (const tf_tensor* v : inputs) {
    if (exact_alias_ok) continue;
    if (overlaps(*v, Dtype(DtypeFromDlpack(v->dtype.code, v->dtype.bits,
                                           v->dtype.lanes))
                         .itemsize)) {
      Broken(
          std::string("the checks accepted an out overlapping an input of ") +
          std::string(OpName(op_)).c_str());
    }
  }
  for (const tf_tensor* v : inputs) {
    if (!exact_alias_ok) continue;
    const int item =
        Dtype(DtypeFromDlpack(v->dtype.code, v->dtype.bits, v->dtype.lanes))
            .itemsize;
    if (overlaps(*v, item) && !same_layout(*v)) {
      Broken(std::string("the checks accepted an out partly overlapping an "
                         "input of ") +
             std::string(OpName(op_)).c_str());
    }
  }
}

// With TF_FUZZ_VERBOSE set: the call a kernel is about to get, to turn a
// crashing input into a report.
void Call::Describe(const std::string& plugin) const {
  std::fprintf(stderr, "call %s of plugin '%s'\n",
               std::string(OpName(op_)).c_str(), plugin.c_str());
  for (int i = 0; i < frame_.num_inputs(); ++i) {
    const tf_arg& a = frame_.input(i);
    if (a.kind == TF_ARG_TENSOR) {
      std::fprintf(stderr, "  input %d: %s\n", i,
                   ViewText(*a.value.tensor).c_str());
    } else if (a.kind == TF_ARG_TENSOR_LIST) {
      for (int64_t j = 0; j < a.value.list.count; ++j) {
        std::fprintf(stderr, "  input %d[%lld]: %s\n", i,
                     static_cast<long long>(j),
                     ViewText(a.value.list.items[j]).c_str());
      }
    } else {
      std::fprintf(stderr, "  input %d: kind %d i %lld f %g\n", i, a.kind,
                   static_cast<long long>(a.value.i), a.value.f);
    }
  }
  for (int i = 0; i < frame_.num_attrs(); ++i) {
    const tf_arg& a = frame_.attr(i);
    std::fprintf(stderr, "  attr %d: kind %d i %lld f %g\n", i, a.kind,
                 static_cast<long long>(a.value.i), a.value.f);
  }
  if (frame_.num_outputs() > 0) {
    std::fprintf(stderr, "  out: %s\n", ViewText(frame_.output()).c_str());
  }
  for (const auto& o : operands_) {
    if (o->owned) {
      std::fprintf(stderr, "  block %p: %zu bytes\n",
                   static_cast<void*>(o->block), o->block_bytes);
    }
  }
}

void Call::CallKernel(Registry* registry) {
  const DtypeIndex key_dtype_ = frame_.dispatch_ref() != nullptr
                                    ? frame_.dispatch_ref()->dtype
                                    : kFloat32;
  // The kernel the dispatcher would run: another op's where the preparation
  // said so (mul of a float16 tensor and a number runs add's).
  const OpId kernel_op =
      frame_.kernel_op() >= 0 ? static_cast<OpId>(frame_.kernel_op()) : op_;
  const KernelEntry* k =
      registry->Find(OpName(kernel_op), TF_DEVICE_CPU, Dtype(key_dtype_).dtype);
  if (k == nullptr) return;  // the host raises NotImplementedError
  // Snapshot every block; afterwards only the out's elements may differ.
  std::vector<std::pair<unsigned char*, std::vector<unsigned char>>> before;
  for (auto& o : operands_) {
    if (o->owned) {
      before.push_back({o->block, std::vector<unsigned char>(
                                      o->block, o->block + o->block_bytes)});
    }
  }
  if (std::getenv("TF_FUZZ_VERBOSE") != nullptr) Describe(k->plugin->name);
  ErrorSink sink;
  const tf_call call = frame_.MakeCall(k->kernel_data, nullptr, &sink);
  const tf_status status = k->fn(&call);
  const std::string where = std::string(OpName(op_)) + " (" +
                            Dtype(key_dtype_).name + ") of plugin '" +
                            k->plugin->name + "'";
  const bool out_of_range = status == TF_ERROR_OUT_OF_RANGE &&
                            Entry(op_).geometry == Geometry::kEmbedding;
  if (status == TF_ERROR_UNSUPPORTED || out_of_range) {
    if (sink.message.empty()) Broken(where + ": failed without a message");
  } else if (status != TF_OK) {
    Broken(where + ": the kernel refused a call the core accepted (status " +
           std::to_string(status) + "): " + sink.message);
  }
  std::set<uintptr_t> written;
  int out_item = 1;
  if (frame_.out_ref() != nullptr && !out_of_range) {  // a bad id writes none
    bool distinct;
    out_item = Dtype(frame_.out_ref()->dtype).itemsize;
    written = Elements(frame_.output(), out_item, &distinct);
    // An input written in place (add_rms_norm's residual) is an output too,
    // of out's dtype.
    for (int i = 1; i < frame_.num_outputs(); ++i) {
      const std::set<uintptr_t> more =
          Elements(frame_.output(i), out_item, &distinct);
      written.insert(more.begin(), more.end());
    }
  }
  for (auto& [block, bytes] : before) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      if (block[i] == bytes[i]) continue;
      const uintptr_t at = reinterpret_cast<uintptr_t>(block + i);
      auto it = written.upper_bound(at);
      const bool in_out =
          it != written.begin() && at < *std::prev(it) + out_item;
      if (!in_out) {
        Broken(where + ": wrote a byte outside its out view (byte " +
               std::to_string(i) + " of a block of " +
               std::to_string(bytes.size()) + ")");
      }
    }
  }
}

void Call::Run() {
  op_ = static_cast<OpId>(in_.Pick(static_cast<uint32_t>(kNumOps)));
  Build();
  frame_.set_source(this);
  const OpFunction& fn = Function(op_);
  bool accepted;
  if (fn.entry->geometry == Geometry::kNoop) {
    accepted = PrepareNoop(noop_args_.data(),
                           static_cast<Py_ssize_t>(noop_args_.size()), frame_);
  } else {
    ParsedArgs args{};
    for (int i = 0; i < fn.signature.num_params; ++i)
      args.values[i] = values_[i];
    args.out = out_arg_;
    accepted = PrepareCall(fn, args, frame_);
  }
  if (!accepted) {
    if (PyErr_Occurred() == nullptr) Broken("refused without an exception");
    if (std::getenv("TF_FUZZ_VERBOSE") != nullptr) {
      std::fprintf(stderr, "refused %s: ", std::string(OpName(op_)).c_str());
      PyErr_Print();  // the exception the op would raise; clears it
    }
    PyErr_Clear();
    return;
  }
  if (PyErr_Occurred() != nullptr) Broken("accepted with an exception set");
  CheckAccepted();
  CallKernel(g_cpu);
  CallKernel(g_example);
}

// The seeds of tests/hardening/corpus/call_args are named <op>_<case> by
// make_corpus.py. Their first byte picks the op (Run()); one whose byte picks
// another op than its name says (the op table grew, the seed did not) would
// fuzz that other op, unnoticed. Checks every file so named among the inputs
// and corpus folders on the command line.
void CheckSeedNames(int argc, char** argv) {
  namespace fs = std::filesystem;
  auto check = [](const fs::path& file) {
    const std::string name = file.filename().string();
    std::string_view named;
    for (size_t i = 0; i < kNumOps; ++i) {
      const std::string_view op = OpName(static_cast<OpId>(i));
      if (op.size() > named.size() && name.size() > op.size() &&
          name.compare(0, op.size(), op) == 0 && name[op.size()] == '_') {
        named = op;
      }
    }
    if (named.empty()) return;  // not a seed (libFuzzer names by hash)
    std::ifstream in(file, std::ios::binary);
    const int first = in.get();
    const uint8_t byte = first == EOF ? 0 : static_cast<uint8_t>(first);
    const std::string_view picked = OpName(static_cast<OpId>(byte % kNumOps));
    if (picked != named) {
      std::fprintf(stderr,
                   "fuzz_call_args: seed %s picks op %s (byte %d), not %s; "
                   "python tests/hardening/make_corpus.py rewrites the "
                   "seeds\n",
                   file.string().c_str(), std::string(picked).c_str(), byte,
                   std::string(named).c_str());
      std::exit(2);
    }
  };
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;  // a libFuzzer flag
    std::error_code error;
    const fs::path path(argv[i]);
    if (fs::is_directory(path, error)) {
      for (const auto& entry : fs::directory_iterator(path, error)) {
        if (entry.is_regular_file(error)) check(entry.path());
      }
    } else if (fs::is_regular_file(path, error)) {
      check(path);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  CheckSeedNames(*argc, *argv);
  Py_InitializeEx(0);
  const char* cpu = std::getenv("TF_TEST_CPU_PLUGIN");
  const char* example = std::getenv("TF_TEST_EXAMPLE_C_PLUGIN");
  if (cpu == nullptr || example == nullptr) {
    std::fprintf(stderr,
                 "fuzz_call_args: set TF_TEST_CPU_PLUGIN and "
                 "TF_TEST_EXAMPLE_C_PLUGIN to the built plugins\n");
    std::exit(2);
  }
  if (!InitOpFunctions()) {
    PyErr_Print();
    std::exit(2);
  }
  g_cpu = new Registry();
  g_example = new Registry();
  if (g_cpu->LoadFile(cpu) == nullptr ||
      g_example->LoadFile(example) == nullptr) {
    std::fprintf(stderr, "fuzz_call_args: a plugin did not load\n");
    std::exit(2);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ByteReader in(data, size);
  Call call(in);
  call.Run();
  return 0;
}
