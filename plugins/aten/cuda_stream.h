// Runs a CUDA kernel's ATen calls on the stream the host handed over. ATen
// enqueues on torch's current stream, so for the call's duration the call's
// stream becomes the current one on the call's device, and the previous one
// is restored when the guard ends.
#pragma once

#include <c10/core/StreamGuard.h>

#include <optional>

#include "abi/torchferry.h"

namespace torchferry::aten {

class CallStreamGuard {
 public:
  // Does nothing for a call on another device type, or when this plugin was
  // built against a torch without CUDA.
  CallStreamGuard(const tf_call& call, int32_t device_type);

 private:
  std::optional<c10::StreamGuard> guard_;
};

}  // namespace torchferry::aten
