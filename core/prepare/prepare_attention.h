// The preparation rules of rotary_embedding and scaled_dot_product_attention
// (core/prepare/prepare_attention.cc); PrepareFor (core/prepare/prepare.cc)
// hands them out.
#pragma once

#include "core/prepare/call_frame.h"
#include "core/prepare/op_description.h"

namespace torchferry {

struct OpFunction;

bool PrepareRotary(const OpFunction& fn, const ParsedArgs& args,
                   CallFrame& frame);
bool PrepareAttention(const OpFunction& fn, const ParsedArgs& args,
                      CallFrame& frame);

}  // namespace torchferry
