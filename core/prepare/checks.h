// The argument checks every backend relies on (abi/ABI.md, "Calls"), done
// once here so that no kernel repeats them. Each returns false with a Python
// exception whose message names the op and the argument, and says what was
// expected and what was found.
#pragma once

#include <cstdint>
#include <string>

#include "core/bridge/bridge.h"
#include "core/prepare/call_frame.h"

namespace torchferry {

bool CheckSameDevice(const char* op, const char* what, const TensorRef& ref,
                     const TensorRef& first);
bool CheckSameDtype(const char* op, const char* what, const TensorRef& ref,
                    const TensorRef& first);
bool CheckFloat(const char* op, const TensorRef& ref);
bool CheckShape(const char* op, const char* what, const TensorRef& ref,
                int ndim, const int64_t* shape);
// Outputs may alias an input exactly only where `exact_alias_ok`; any other
// overlap of their memory is refused. `out_name` names the output.
bool CheckNoOverlap(const char* op, const char* what, const TensorRef& input,
                    const TensorRef& out, bool exact_alias_ok,
                    const char* out_name = "out");
// The same for each of `n` inputs in turn (names[i] naming inputs[i]): the
// first overlap is refused.
bool CheckNoOverlap(const char* op, int n, const char* const* names,
                    const TensorRef* const* inputs, const TensorRef& out,
                    bool exact_alias_ok, const char* out_name = "out");
// torch's out= functions refuse inputs that require grad while grad mode is
// on; so do we, rather than silently detaching. requires_grad is torch's
// answer from the TensorImpl (c10::TensorImpl::requires_grad), never the
// tensor's class's: no __torch_function__ runs. Where a tensor's TensorImpl
// is not at hand it calls torch's getter with __torch_function__ held off;
// only where torch cannot hold it off does Python run, and then it notes the
// frame's tensors first (CallFrame::NotePython) and sets *getter_ran.
bool CheckNoGrad(const char* op, const TensorRef& ref, bool out_given,
                 CallFrame& f, bool* getter_ran);
bool InitGradCheck(PyObject* torch_module);
// How the check reads requires_grad, for `info`.
const std::string& GradCheckDetail();

// torch's broadcasting: the shape of x op y, or false with a ValueError.
bool BroadcastShapes(const char* op, const TensorRef& x, const TensorRef& y,
                     int* ndim, int64_t* shape);
// Rewrites `ref`'s view to `ndim`/`shape` with stride 0 on broadcast dims.
// No-op when the view already has that shape.
bool BroadcastTo(const char* op, CallFrame& frame, TensorRef* ref, int ndim,
                 const int64_t* shape);

std::string ShapeText(int ndim, const int64_t* shape);
// A result of `shape` must be a tensor torch can make: its contiguous
// strides and its size in bytes fit in int64. Sizes of stride-0 inputs
// (expand) can multiply or add past that; the ValueError names the shape.
bool CheckResultFits(const char* op, DtypeIndex dtype, int ndim,
                     const int64_t* shape);

}  // namespace torchferry
