// Finds the libtorch that `import torch` already loaded and resolves the AOTI
// C shim on it. Python loads torch._C with RTLD_LOCAL, so its symbols are not
// reachable through RTLD_DEFAULT; instead we take a handle to the loaded copy
// with RTLD_NOLOAD, which changes no global symbol visibility.
#pragma once

#include <string>

#include "core/aoti.h"

namespace torchferry {

struct TorchLibrary {
  AotiApi api{};
  std::string cpu_library_path;   // the loaded libtorch_cpu.so
  std::string cuda_library_path;  // the loaded libtorch_cuda.so, or empty
  void* cpu_handle = nullptr;     // RTLD_NOLOAD handle, never closed
};

// Fills `lib` or returns false with a message in `error` that says what is
// missing and what to do.
bool ResolveTorchLibrary(TorchLibrary* lib, std::string* error);

}  // namespace torchferry
