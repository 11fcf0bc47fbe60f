#include "core/prepare/prepare.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/number_tensor.h"
#include "core/prepare/op_description.h"
#include "core/prepare/out_alloc.h"
#include "core/prepare/prepare_attention.h"
#include "core/prepare/prepare_linear.h"
#include "core/prepare/prepare_parts.h"

namespace torchferry {

NumberRule NumberRuleFor(const OpFunction& fn, size_t index) {
  if (fn.schema.args[index].type != ArgType::kTensor) return NumberRule::kNone;
  const Geometry g = fn.entry->geometry;
  if (g == Geometry::kBroadcast && index == 1) return NumberRule::kWrapped;
  if (g == Geometry::kClamp && index > 0) return NumberRule::kChecked;
  return NumberRule::kNone;
}

PrepareFn PrepareFor(Geometry geometry) {
  switch (geometry) {
    case Geometry::kSameShape:
      return &PrepareSameShape;
    case Geometry::kBroadcast:
      return &PrepareBroadcast;
    case Geometry::kClamp:
      return &PrepareClamp;
    case Geometry::kStack:
      return &PrepareStack;
    case Geometry::kCast:
      return &PrepareCast;
    case Geometry::kLastDimHalved:
      return &PrepareSiluAndMul;
    case Geometry::kRowNorm:
      return &PrepareRmsNorm;
    case Geometry::kAddRowNorm:
      return &PrepareAddRmsNorm;
    case Geometry::kSoftmax:
      return &PrepareSoftmax;
    case Geometry::kMatmul:
      return &PrepareMatmul;
    case Geometry::kEmbedding:
      return &PrepareEmbedding;
    case Geometry::kCat:
      return &PrepareCat;
    case Geometry::kDeclared:
      return &PrepareDeclared;
    case Geometry::kNoop:
      return nullptr;
    case Geometry::kRotary:
      return &PrepareRotary;
    case Geometry::kAttention:
      return &PrepareAttention;
    case Geometry::kLinear:
      return &PrepareLinear;
  }
  return nullptr;
}

namespace {

// Runs `pass` (which fills the frame) and, where Python that ran after a
// tensor was read (allocating out, exporting an argument) changed that
// tensor, rewinds and runs it once more: with out allocated and every import
// kept, the second pass runs no Python.
template <typename Pass>
bool PrepareWithoutStaleReads(const char* op, CallFrame& f, const Pass& pass) {
  if (!pass()) return false;
  if (!f.python_ran() || f.Unchanged()) return true;
  f.Rewind();
  if (!pass()) return false;
  if (!f.python_ran()) return true;
  return RaiseError(PyExc_RuntimeError,
                    fmt::format("{}(): Python code ran while the call was "
                                "prepared a second time; please report this",
                                op));
}

}  // namespace

bool PrepareCall(const OpFunction& fn, const ParsedArgs& args, CallFrame& f) {
  return PrepareWithoutStaleReads(fn.name.c_str(), f, [&] {
    ParsedArgs pass_args = args;  // the second pass takes the allocated out
    if (f.owned_result() != nullptr) pass_args.out = f.owned_result();
    return fn.prepare(fn, pass_args, f);
  });
}

bool PrepareNoop(PyObject* const* args, Py_ssize_t nargs, CallFrame& f) {
  if (nargs > (1 << 20)) {
    return RaiseError(PyExc_ValueError, "noop(): too many tensors");
  }
  f.Reserve(static_cast<int>(nargs));
  return PrepareWithoutStaleReads("noop", f, [&] {
    TensorRef* first = nullptr;
    for (Py_ssize_t i = 0; i < nargs; ++i) {
      TensorRef* r = f.Take(args[i], "tensor", false);
      if (r == nullptr) return false;
      if (first != nullptr && !CheckSameDevice("noop", "tensor", *r, *first)) {
        return false;
      }
      if (first == nullptr) first = r;
      SetTensorArg(&f.input(static_cast<int>(i)), r);
    }
    f.SetInputs(static_cast<int>(nargs), first, 0);  // noop touches nothing
    return true;
  });
}

}  // namespace torchferry
