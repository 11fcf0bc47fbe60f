// A failure inside the plugin that carries the ABI status it maps to. Thrown
// only inside a kernel and always caught at its boundary (kernel_boundary.cc).
#pragma once

#include <stdexcept>
#include <string>

#include "abi/torchferry.h"

namespace torchferry::aten {

class KernelError : public std::runtime_error {
 public:
  KernelError(tf_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  tf_status status() const { return status_; }

 private:
  tf_status status_;
};

}  // namespace torchferry::aten
