// The preparation rule of linear (core/prepare/prepare_linear.cc); PrepareFor
// (core/prepare/prepare.cc) hands it out.
#pragma once

#include "core/prepare/call_frame.h"
#include "core/prepare/op_description.h"

namespace torchferry {

struct OpFunction;

bool PrepareLinear(const OpFunction& fn, const ParsedArgs& args,
                   CallFrame& frame);

}  // namespace torchferry
