// libFuzzer target: bytes -> an op call (tensor views of any shape, strides,
// dtype and aliasing, scalars, an out= that may be wrong) -> the core's own
// argument checks (core/checks.cc, linked as is, with an embedded Python
// interpreter for the exceptions they raise) -> when the checks accept, the
// CPU plugin's kernel (and example_c's, for the keys it has).
//
// What a torch tensor can be, a view here can be: shapes 0..5 per dim (rarely
// deeper than any kernel takes), strides of contiguous, transposed, sliced,
// expanded and arbitrary non-negative layouts, zero elements. Each tensor
// lives alone in a block of exactly the bytes its view spans, so
// AddressSanitizer reports any kernel that reads or writes outside a view.
//
// The geometry each op applies (broadcasting, out shapes, dims) mirrors
// core/prepare.cc step by step and calls the same check functions, because the
// Prepare* functions there take Python objects bridged from torch, which a
// fuzzer cannot make without torch.
//
// Properties, each a trap when broken:
//  - the checks accept no out with stride 0 on a dim of size > 1, and no out
//    that overlaps an input, except an exact alias where the op allows it;
//  - a kernel handed an accepted call returns TF_OK, or TF_ERROR_UNSUPPORTED
//    with a message; never another status;
//  - a kernel writes only the elements of its out view: every other byte of
//    every block is unchanged after the call.
#include <Python.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "abi/torchferry.h"
#include "byte_reader.h"
#include "core/bridge.h"
#include "core/call_frame.h"
#include "core/checks.h"
#include "core/dtypes.h"
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

// Same rule as the bridge's (core/bridge.cc): row-major compact, size-1 dims
// ignored, zero elements compact.
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

constexpr DtypeIndex kAllDtypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16,
                                     kInt8,    kInt16,   kInt32,   kInt64,
                                     kUInt8,   kBool};

class Call {
 public:
  explicit Call(ByteReader& in) : in_(in) {}

  // Decides an op, builds its operands and runs the checks and the kernel.
  void Run();

 private:
  int64_t Dim() {
    const uint8_t v = in_.U8();
    return v % 16 == 0 ? 0 : 1 + v % 5;
  }
  // At most 4096 elements, so that deep ranks stay cheap: leading dims
  // become 1 until the rest fits.
  std::vector<int64_t> Shape(int ndim) {
    std::vector<int64_t> s(ndim);
    int64_t numel = 1;
    for (int64_t& d : s) numel *= (d = Dim());
    for (size_t d = 0; numel > 4096 && d < s.size(); ++d) {
      numel /= s[d];
      s[d] = 1;
    }
    return s;
  }
  int Rank() {
    const uint8_t v = in_.U8();
    return v % 32 == 0 ? 5 + v % 7 : v % 5;  // mostly 0..4, rarely to 11
  }
  DtypeIndex AnyDtype() { return kAllDtypes[in_.Pick(10)]; }
  DtypeIndex FloatDtype() { return kAllDtypes[in_.Pick(4)]; }

  // A tensor of `shape` in a layout torch can produce, alone in its block
  // (now and then with one spare element at the end, for aliasing outs).
  Operand* Tensor(std::vector<int64_t> shape, DtypeIndex dtype);
  Operand* Fresh(const std::vector<int64_t>& shape, DtypeIndex dtype);
  // An out for an op whose out should be `shape`/`dtype`: usually just that,
  // sometimes another shape, an expanded view or an alias of an input.
  Operand* Out(const std::vector<int64_t>& shape, DtypeIndex dtype);
  void Fill(Operand* o, DtypeIndex dtype);
  std::vector<int64_t> BroadcastPartner(const std::vector<int64_t>& shape);

  bool Prepare();
  bool PrepareUnary(bool float_only);
  bool PrepareBinary();
  bool PrepareClamp();
  bool PrepareStack();
  bool PrepareCast();
  bool PrepareSiluAndMul();
  bool PrepareRmsNorm();
  bool PrepareSoftmax();
  bool PrepareMatmul();
  bool PrepareNoop();
  bool TakeOut(DtypeIndex dtype, int ndim, const int64_t* shape, Operand* like,
               Operand* out);
  bool As3d(tf_tensor* v, int64_t batch);

  void CheckAccepted();
  void Describe(const std::string& plugin) const;
  void CallKernel(Registry* registry);
  std::set<uintptr_t> Elements(const tf_tensor& v, int itemsize,
                               bool* distinct) const;

  ByteReader& in_;
  OpId op_ = OpOf("abs");
  std::vector<std::unique_ptr<Operand>> operands_;
  CallFrame frame_{Bridge::Get(), "fuzz"};
  tf_arg inputs_[8] = {};
  int num_inputs_ = 0;
  tf_arg attrs_[2] = {};
  int num_attrs_ = 0;
  tf_tensor list_[8] = {};
  tf_tensor output_{};
  int num_outputs_ = 0;
  Operand* out_ = nullptr;
  DtypeIndex key_dtype_ = kFloat32;
  // Inputs the out may alias exactly (elementwise ops) and those it may not.
  std::vector<const tf_tensor*> alias_ok_, alias_never_;
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

// core/prepare.cc TakeOut, minus the allocation and bridging.
bool Call::TakeOut(DtypeIndex dtype, int ndim, const int64_t* shape,
                   Operand* like, Operand* out) {
  const std::string op_name(OpName(op_));
  const char* op = op_name.c_str();
  if (!CheckSameDevice(op, "out", out->ref, like->ref)) return false;
  if (dtype != kNoDtype && out->ref.dtype != dtype) return false;
  if (!CheckShape(op, "out", out->ref, ndim, shape) ||
      !CheckWritable(op, out->ref)) {
    return false;
  }
  out_ = out;
  output_ = out->ref.view;
  num_outputs_ = 1;
  return true;
}

tf_arg TensorArg(const tf_tensor* t) {
  tf_arg a{};
  a.kind = TF_ARG_TENSOR;
  a.value.tensor = t;
  return a;
}

tf_arg ScalarArg(ByteReader& in, DtypeIndex dtype) {
  tf_arg a{};
  const bool extreme = in.Pick(8) == 0;
  if (Dtype(dtype).is_float) {
    a.kind = TF_ARG_FLOAT;
    a.value.f = extreme ? in.Raw<double>() : (in.Pick(33) - 16) / 4.0;
  } else {
    a.kind = TF_ARG_INT;
    a.value.i =
        extreme ? in.Raw<int64_t>() : static_cast<int64_t>(in.Pick(17)) - 8;
  }
  return a;
}

bool Call::PrepareUnary(bool float_only) {
  const std::string op_name(OpName(op_));
  const char* op = op_name.c_str();
  const DtypeIndex dtype = AnyDtype();
  Operand* x = Tensor(Shape(Rank()), dtype);
  tensor_inputs_.push_back({&x->ref.view, 0});
  if (float_only && !CheckFloat(op, x->ref)) return false;
  Operand* out = Out(x->shape, dtype);
  if (!TakeOut(dtype, x->ref.view.ndim, x->ref.view.shape, x, out) ||
      !CheckNoOverlap(op, "input", x->ref, out->ref, true)) {
    return false;
  }
  inputs_[0] = TensorArg(&x->ref.view);
  num_inputs_ = 1;
  key_dtype_ = dtype;
  alias_ok_.push_back(&x->ref.view);
  return true;
}

bool Call::PrepareBinary() {
  const std::string op_name(OpName(op_));
  const char* op = op_name.c_str();
  const DtypeIndex dtype = AnyDtype();
  Operand* x = Tensor(Shape(Rank()), dtype);
  Operand* y = Tensor(BroadcastPartner(x->shape),
                      in_.Pick(16) == 0 ? AnyDtype() : dtype);
  if (in_.Bit()) std::swap(x, y);
  tensor_inputs_.push_back({&x->ref.view, 0});
  tensor_inputs_.push_back({&y->ref.view, 1});
  if (!CheckSameDtype(op, "other", y->ref, x->ref)) return false;
  int ndim;
  int64_t shape[kMaxRank];
  if (!BroadcastShapes(op, x->ref, y->ref, &ndim, shape)) return false;
  Operand* out = Out(std::vector<int64_t>(shape, shape + ndim), x->ref.dtype);
  if (!TakeOut(x->ref.dtype, ndim, shape, x, out) ||
      !BroadcastTo(op, frame_, &x->ref, ndim, shape) ||
      !BroadcastTo(op, frame_, &y->ref, ndim, shape) ||
      !CheckNoOverlap(op, "input", x->ref, out->ref, true) ||
      !CheckNoOverlap(op, "other", y->ref, out->ref, true)) {
    return false;
  }
  inputs_[0] = TensorArg(&x->ref.view);
  inputs_[1] = TensorArg(&y->ref.view);
  num_inputs_ = 2;
  if (op_ == OpOf("add")) {
    attrs_[0] = ScalarArg(in_, x->ref.dtype);
    num_attrs_ = 1;
  }
  key_dtype_ = x->ref.dtype;
  alias_ok_ = {&x->ref.view, &y->ref.view};
  return true;
}

bool Call::PrepareClamp() {
  const char* op = "clamp";
  const DtypeIndex dtype = AnyDtype();
  Operand* x = Tensor(Shape(Rank()), dtype);
  tensor_inputs_.push_back({&x->ref.view, 0});
  int ndim = x->ref.view.ndim;
  if (ndim > kMaxRank) return false;
  int64_t shape[kMaxRank];
  std::copy(x->shape.begin(), x->shape.end(), shape);
  Operand* bounds[2] = {nullptr, nullptr};
  uint32_t kinds[2] = {in_.Pick(3), in_.Pick(3)};  // none, scalar, tensor
  if (kinds[0] == 0 && kinds[1] == 0) kinds[1] = 1 + in_.Pick(2);
  for (int i = 0; i < 2; ++i) {
    if (kinds[i] == 0) {
      inputs_[1 + i] = tf_arg{};
      inputs_[1 + i].kind = TF_ARG_NONE;
    } else if (kinds[i] == 1) {
      inputs_[1 + i] = ScalarArg(in_, dtype);
    } else {
      Operand* r = Tensor(BroadcastPartner(x->shape), dtype);
      tensor_inputs_.push_back({&r->ref.view, 1 + i});
      TensorRef running = x->ref;
      running.view.ndim = ndim;
      running.view.shape = shape;
      int64_t next[kMaxRank];
      int next_ndim;
      if (!BroadcastShapes(op, running, r->ref, &next_ndim, next)) return false;
      std::copy(next, next + next_ndim, shape);
      ndim = next_ndim;
      bounds[i] = r;
    }
  }
  Operand* out = Out(std::vector<int64_t>(shape, shape + ndim), dtype);
  if (!TakeOut(dtype, ndim, shape, x, out) ||
      !BroadcastTo(op, frame_, &x->ref, ndim, shape) ||
      !CheckNoOverlap(op, "input", x->ref, out->ref, true)) {
    return false;
  }
  alias_ok_.push_back(&x->ref.view);
  for (int i = 0; i < 2; ++i) {
    Operand* r = bounds[i];
    if (r == nullptr) continue;
    if (!BroadcastTo(op, frame_, &r->ref, ndim, shape) ||
        !CheckNoOverlap(op, i ? "max" : "min", r->ref, out->ref, true)) {
      return false;
    }
    inputs_[1 + i] = TensorArg(&r->ref.view);
    alias_ok_.push_back(&r->ref.view);
  }
  inputs_[0] = TensorArg(&x->ref.view);
  num_inputs_ = 3;
  key_dtype_ = dtype;
  return true;
}

bool Call::PrepareStack() {
  const char* op = "stack";
  const DtypeIndex dtype = AnyDtype();
  const int count = 1 + in_.Pick(4);
  Operand* first = Tensor(Shape(Rank()), dtype);
  tensor_inputs_.push_back({&first->ref.view, 0});
  list_[0] = first->ref.view;
  const int rank = first->ref.view.ndim;
  std::vector<Operand*> items = {first};
  for (int i = 1; i < count; ++i) {
    Operand* r =
        Tensor(in_.Pick(16) == 0 ? Shape(Rank()) : first->shape, dtype);
    tensor_inputs_.push_back({&r->ref.view, 0});
    if (!CheckShape(op, "tensors[i]", r->ref, rank, first->ref.view.shape)) {
      return false;
    }
    list_[i] = r->ref.view;
    items.push_back(r);
  }
  int64_t dim = static_cast<int64_t>(in_.Pick(2 * rank + 3)) - (rank + 1);
  if (dim < -(rank + 1) || dim > rank) return false;  // WrapDim's refusal
  if (dim < 0) dim += rank + 1;
  if (rank + 1 > kMaxRank) return false;
  int64_t shape[kMaxRank];
  for (int d = 0, s = 0; d < rank + 1; ++d) {
    shape[d] = d == dim ? count : first->shape[s++];
  }
  Operand* out = Out(std::vector<int64_t>(shape, shape + rank + 1), dtype);
  if (!TakeOut(dtype, rank + 1, shape, first, out)) return false;
  for (Operand* item : items) {
    if (!CheckNoOverlap(op, "an input", item->ref, out->ref, false)) {
      return false;
    }
    alias_never_.push_back(&item->ref.view);
  }
  inputs_[0] = tf_arg{};
  inputs_[0].kind = TF_ARG_TENSOR_LIST;
  inputs_[0].value.list.items = list_;
  inputs_[0].value.list.count = count;
  num_inputs_ = 1;
  attrs_[0] = tf_arg{};
  attrs_[0].kind = TF_ARG_INT;
  attrs_[0].value.i = dim;
  num_attrs_ = 1;
  key_dtype_ = dtype;
  return true;
}

bool Call::PrepareCast() {
  const DtypeIndex dtype = AnyDtype();
  Operand* x = Tensor(Shape(Rank()), dtype);
  tensor_inputs_.push_back({&x->ref.view, 0});
  Operand* out = Out(x->shape, AnyDtype());
  if (!TakeOut(kNoDtype, x->ref.view.ndim, x->ref.view.shape, x, out) ||
      !CheckNoOverlap("cast", "input", x->ref, out->ref, false)) {
    return false;
  }
  inputs_[0] = TensorArg(&x->ref.view);
  num_inputs_ = 1;
  key_dtype_ = dtype;
  alias_never_.push_back(&x->ref.view);
  return true;
}

bool Call::PrepareSiluAndMul() {
  const DtypeIndex dtype = in_.Pick(8) == 0 ? AnyDtype() : FloatDtype();
  std::vector<int64_t> shape = Shape(std::max(1, Rank()));
  if (in_.Pick(8) != 0) shape.back() *= 2;
  Operand* x = Tensor(shape, dtype);
  tensor_inputs_.push_back({&x->ref.view, 0});
  if (!CheckFloat("silu_and_mul", x->ref)) return false;
  const int ndim = x->ref.view.ndim;
  if (ndim < 1 || ndim > kMaxRank || x->shape[ndim - 1] % 2 != 0) return false;
  std::vector<int64_t> out_shape = x->shape;
  out_shape.back() /= 2;
  Operand* out = Out(out_shape, dtype);
  if (!TakeOut(dtype, ndim, out_shape.data(), x, out) ||
      !CheckNoOverlap("silu_and_mul", "input", x->ref, out->ref, false)) {
    return false;
  }
  inputs_[0] = TensorArg(&x->ref.view);
  num_inputs_ = 1;
  key_dtype_ = dtype;
  alias_never_.push_back(&x->ref.view);
  return true;
}

bool Call::PrepareRmsNorm() {
  const char* op = "rms_norm";
  const DtypeIndex dtype = in_.Pick(8) == 0 ? AnyDtype() : FloatDtype();
  Operand* x = Tensor(Shape(std::max(1, Rank())), dtype);
  tensor_inputs_.push_back({&x->ref.view, 0});
  if (!CheckFloat(op, x->ref)) return false;
  const int ndim = x->ref.view.ndim;
  if (ndim < 1) return false;
  const int64_t last = x->shape[ndim - 1];
  Operand* w = Tensor(
      in_.Pick(16) == 0 ? Shape(Rank()) : std::vector<int64_t>{last}, dtype);
  tensor_inputs_.push_back({&w->ref.view, 1});
  if (!CheckShape(op, "weight", w->ref, 1, &last)) return false;
  Operand* out = Out(x->shape, dtype);
  if (!TakeOut(dtype, ndim, x->ref.view.shape, x, out) ||
      !CheckNoOverlap(op, "input", x->ref, out->ref, false) ||
      !CheckNoOverlap(op, "weight", w->ref, out->ref, false)) {
    return false;
  }
  inputs_[0] = TensorArg(&x->ref.view);
  inputs_[1] = TensorArg(&w->ref.view);
  num_inputs_ = 2;
  attrs_[0] = tf_arg{};
  attrs_[0].kind = TF_ARG_FLOAT;
  attrs_[0].value.f = in_.Pick(8) == 0 ? in_.Raw<double>() : 1e-6;
  num_attrs_ = 1;
  key_dtype_ = dtype;
  alias_never_ = {&x->ref.view, &w->ref.view};
  return true;
}

bool Call::PrepareSoftmax() {
  const DtypeIndex dtype = in_.Pick(8) == 0 ? AnyDtype() : FloatDtype();
  Operand* x = Tensor(Shape(Rank()), dtype);
  tensor_inputs_.push_back({&x->ref.view, 0});
  if (!CheckFloat("softmax", x->ref)) return false;
  const int rank = x->ref.view.ndim;
  int64_t lo = -rank, hi = rank - 1;
  if (rank == 0) lo = -1, hi = 0;
  int64_t dim =
      lo + static_cast<int64_t>(in_.Pick(static_cast<uint32_t>(hi - lo + 2)));
  if (dim > hi) return false;  // WrapDim's refusal
  if (dim < 0) dim += std::max(rank, 1);
  Operand* out = Out(x->shape, dtype);
  if (!TakeOut(dtype, rank, x->ref.view.shape, x, out) ||
      !CheckNoOverlap("softmax", "input", x->ref, out->ref, false)) {
    return false;
  }
  if (rank == 0) {  // core/prepare.cc: the ABI promises ndim >= 1
    static int64_t one[1] = {1};
    x->ref.view.ndim = 1;
    x->ref.view.shape = one;
    x->ref.view.strides = one;
    output_.ndim = 1;
    output_.shape = one;
    output_.strides = one;
  }
  inputs_[0] = TensorArg(&x->ref.view);
  num_inputs_ = 1;
  attrs_[0] = tf_arg{};
  attrs_[0].kind = TF_ARG_INT;
  attrs_[0].value.i = dim;
  num_attrs_ = 1;
  key_dtype_ = dtype;
  alias_never_.push_back(&x->ref.view);
  return true;
}

// core/prepare.cc As3d.
bool Call::As3d(tf_tensor* v, int64_t batch) {
  if (v->ndim == 3 && v->shape[0] == batch) return true;
  int64_t* shape = frame_.Arena(3);
  int64_t* strides = frame_.Arena(3);
  if (shape == nullptr || strides == nullptr) return false;
  const int off = v->ndim - 2;
  shape[0] = batch;
  strides[0] = v->ndim == 3 && v->shape[0] != 1 ? v->strides[0] : 0;
  for (int d = 0; d < 2; ++d) {
    shape[1 + d] = v->shape[off + d];
    strides[1 + d] = v->strides[off + d];
  }
  v->ndim = 3;
  v->shape = shape;
  v->strides = strides;
  if (batch != 1) v->flags = 0;
  return true;
}

bool Call::PrepareMatmul() {
  const DtypeIndex dtype = in_.Pick(8) == 0 ? AnyDtype() : FloatDtype();
  const int64_t m = Dim(), k = Dim(), n = Dim();
  const bool a3 = in_.Bit(), b3 = in_.Bit();
  std::vector<int64_t> as = {m, k}, bs = {in_.Pick(16) == 0 ? Dim() : k, n};
  if (a3) as.insert(as.begin(), Dim());
  if (b3) bs.insert(bs.begin(), in_.Bit() ? as[0] : Dim());
  if (in_.Pick(32) == 0) as = Shape(Rank());
  Operand* a = Tensor(as, dtype);
  Operand* b = Tensor(bs, dtype);
  tensor_inputs_.push_back({&a->ref.view, 0});
  tensor_inputs_.push_back({&b->ref.view, 1});
  const char* op = "matmul";
  if (!CheckFloat(op, a->ref) || !CheckSameDtype(op, "other", b->ref, a->ref)) {
    return false;
  }
  const tf_tensor& av = a->ref.view;
  const tf_tensor& bv = b->ref.view;
  if (av.ndim < 2 || av.ndim > 3 || bv.ndim < 2 || bv.ndim > 3) return false;
  const int64_t am = av.shape[av.ndim - 2], ak = av.shape[av.ndim - 1];
  const int64_t bk = bv.shape[bv.ndim - 2], bn = bv.shape[bv.ndim - 1];
  const int64_t ba = av.ndim == 3 ? av.shape[0] : 1;
  const int64_t bb = bv.ndim == 3 ? bv.shape[0] : 1;
  if (ak != bk || (ba != bb && ba != 1 && bb != 1)) return false;
  const int64_t batch = ba == 1 ? bb : ba;  // as core/prepare.cc: 1 takes 0 too
  const bool batched = av.ndim == 3 || bv.ndim == 3;
  int64_t shape[3] = {batch, am, bn};
  const int out_ndim = batched ? 3 : 2;
  Operand* out =
      Out(std::vector<int64_t>(batched ? shape : shape + 1, shape + 3), dtype);
  if (!TakeOut(dtype, out_ndim, batched ? shape : shape + 1, a, out) ||
      !CheckNoOverlap(op, "input", a->ref, out->ref, false) ||
      !CheckNoOverlap(op, "other", b->ref, out->ref, false) ||
      !As3d(&a->ref.view, batch) || !As3d(&b->ref.view, batch) ||
      !As3d(&output_, batch)) {
    return false;
  }
  inputs_[0] = TensorArg(&a->ref.view);
  inputs_[1] = TensorArg(&b->ref.view);
  num_inputs_ = 2;
  key_dtype_ = dtype;
  alias_never_ = {&a->ref.view, &b->ref.view};
  return true;
}

bool Call::PrepareNoop() {
  const int count = in_.Pick(5);
  for (int i = 0; i < count; ++i) {
    Operand* t = Tensor(Shape(Rank()), AnyDtype());
    inputs_[i] = TensorArg(&t->ref.view);
    if (i == 0) key_dtype_ = t->ref.dtype;
  }
  num_inputs_ = count;
  return true;
}

bool Call::Prepare() {
  switch (op_) {
    case OpOf("abs"):
    case OpOf("neg"):
      return PrepareUnary(false);
    case OpOf("exp"):
    case OpOf("silu"):
      return PrepareUnary(true);
    case OpOf("add"):
    case OpOf("mul"):
      return PrepareBinary();
    case OpOf("clamp"):
      return PrepareClamp();
    case OpOf("stack"):
      return PrepareStack();
    case OpOf("cast"):
      return PrepareCast();
    case OpOf("silu_and_mul"):
      return PrepareSiluAndMul();
    case OpOf("rms_norm"):
      return PrepareRmsNorm();
    case OpOf("softmax"):
      return PrepareSoftmax();
    case OpOf("matmul"):
      return PrepareMatmul();
    default:
      return PrepareNoop();
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
  if (out_ == nullptr) return;
  const int out_item = Dtype(out_->ref.dtype).itemsize;
  bool distinct;
  std::set<uintptr_t> out_elems = Elements(output_, out_item, &distinct);
  // CheckWritable promises what torch's own out= check does: no stride 0 on a
  // dim of size > 1 of an out that has elements. Other self-overlapping outs
  // (as_strided) pass both.
  for (int d = 0; out_->ref.numel > 0 && d < output_.ndim; ++d) {
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
  for (const tf_tensor* v : alias_never_) {
    if (overlaps(*v, Dtype(DtypeFromDlpack(v->dtype.code, v->dtype.bits,
                                           v->dtype.lanes))
                         .itemsize)) {
      Broken(
          std::string("the checks accepted an out overlapping an input of ") +
          std::string(OpName(op_)).c_str());
    }
  }
  for (const tf_tensor* v : alias_ok_) {
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
  for (int i = 0; i < num_inputs_; ++i) {
    const tf_arg& a = inputs_[i];
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
  for (int i = 0; i < num_attrs_; ++i) {
    std::fprintf(stderr, "  attr %d: kind %d i %lld f %g\n", i, attrs_[i].kind,
                 static_cast<long long>(attrs_[i].value.i), attrs_[i].value.f);
  }
  if (num_outputs_ > 0) {
    std::fprintf(stderr, "  out: %s\n", ViewText(output_).c_str());
  }
  for (const auto& o : operands_) {
    if (o->owned) {
      std::fprintf(stderr, "  block %p: %zu bytes\n",
                   static_cast<void*>(o->block), o->block_bytes);
    }
  }
}

void Call::CallKernel(Registry* registry) {
  const KernelEntry* k =
      registry->Find(OpName(op_), TF_DEVICE_CPU, Dtype(key_dtype_).dtype);
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
  tf_call call{};
  call.struct_size = sizeof(tf_call);
  call.inputs = inputs_;
  call.num_inputs = num_inputs_;
  call.num_attrs = num_attrs_;
  call.attrs = attrs_;
  call.outputs = &output_;
  call.num_outputs = num_outputs_;
  call.stream = nullptr;
  call.kernel_data = k->kernel_data;
  call.host = HostApi();
  call.error_sink = &sink;
  const tf_status status = k->fn(&call);
  const std::string where = std::string(OpName(op_)) + " (" +
                            Dtype(key_dtype_).name + ") of plugin '" +
                            k->plugin->name + "'";
  if (status == TF_ERROR_UNSUPPORTED) {
    if (sink.message.empty()) Broken(where + ": unsupported without a message");
  } else if (status != TF_OK) {
    Broken(where + ": the kernel refused a call the core accepted (status " +
           std::to_string(status) + "): " + sink.message);
  }
  std::set<uintptr_t> written;
  int out_item = 1;
  if (out_ != nullptr) {
    bool distinct;
    out_item = Dtype(out_->ref.dtype).itemsize;
    written = Elements(output_, out_item, &distinct);
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
  if (!Prepare()) {
    PyErr_Clear();  // the exception the op would raise
    return;
  }
  if (PyErr_Occurred() != nullptr) Broken("accepted with an exception set");
  CheckAccepted();
  CallKernel(g_cpu);
  CallKernel(g_example);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  Py_InitializeEx(0);
  const char* cpu = std::getenv("TF_TEST_CPU_PLUGIN");
  const char* example = std::getenv("TF_TEST_EXAMPLE_C_PLUGIN");
  if (cpu == nullptr || example == nullptr) {
    std::fprintf(stderr,
                 "fuzz_call_args: set TF_TEST_CPU_PLUGIN and "
                 "TF_TEST_EXAMPLE_C_PLUGIN to the built plugins\n");
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
