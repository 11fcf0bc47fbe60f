// From parsed Python arguments to a checked tf_call, driven by the op's entry
// (loader/op_table.h): each Geometry has one preparation rule here, shared by
// every op that has it. Dispatch and the kernel call come after
// (core/python/dispatch.h).
#pragma once

#include <Python.h>

#include "core/prepare/call_frame.h"
#include "core/prepare/number_tensor.h"
#include "core/prepare/op_description.h"
#include "loader/op_table.h"

namespace torchferry {

// The rule for a geometry; nullptr for kNoop, which takes *tensors.
PrepareFn PrepareFor(Geometry geometry);

// How a Python number may stand for the tensor argument `index` of the
// schema: the second operand of a broadcast (ops.mul(x, 0.5)) as torch's
// wrapped number, clamp's bounds checked into the dtype; kNone elsewhere.
// The door makes such numbers plain, ops.schemas() says "number_ok", the
// rules of those geometries take them (PrepareBroadcast, PrepareClamp), and
// torch.compile's traced calls ask _C._number, which applies the same rule.
NumberRule NumberRuleFor(const OpFunction& fn, size_t index);

inline bool NumberMayStandFor(const OpFunction& fn, size_t index) {
  return NumberRuleFor(fn, index) != NumberRule::kNone;
}

// Runs fn.prepare, and again from the top where Python ran after a tensor
// was read (CallFrame says why): afterwards, nothing read can be stale.
bool PrepareCall(const OpFunction& fn, const ParsedArgs& args,
                 CallFrame& frame);

// noop(*tensors): bridges every argument and calls the kernel, measuring
// dispatch alone. Prepares twice where PrepareCall would.
bool PrepareNoop(PyObject* const* args, Py_ssize_t nargs, CallFrame& frame);

}  // namespace torchferry
