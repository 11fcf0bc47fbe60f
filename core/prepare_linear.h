// The preparation rule of linear (core/prepare_linear.cc); PrepareFor
// (core/prepare.cc) hands it out.
#pragma once

#include "core/call_frame.h"
#include "core/py_args.h"

namespace torchferry {

struct OpFunction;

bool PrepareLinear(const OpFunction& fn, const ParsedArgs& args,
                   CallFrame& frame);

}  // namespace torchferry
