// Finds the libtorch that `import torch` already loaded and resolves the AOTI
// C shim on it. Python loads torch._C with RTLD_LOCAL, so its symbols are not
// reachable through RTLD_DEFAULT; instead we take a handle to the loaded copy
// with RTLD_NOLOAD, which changes no global symbol visibility.
#pragma once

#include <string>

#include "core/bridge/aoti.h"

namespace torchferry {

struct TorchLibrary {
  AotiApi api{};
  std::string cpu_library_path;   // the loaded libtorch_cpu.so
  std::string cuda_library_path;  // the loaded libtorch_cuda.so, or empty
  // Optional, from libtorch_python.so: THPVariable_Wrap(const at::TensorBase&),
  // which makes a new torch.Tensor (a new reference, or NULL with a Python
  // error) holding its own reference to the tensor. Not part of any stable
  // ABI: resolved by its Itanium name, as torch 2.13 and 2.14 export it, and
  // used only where the stable torch_tensor_to_pyobject is absent (a torch
  // with neither allocates through torch.empty). An at::Tensor* is a
  // TensorBase* (Tensor adds no members), so a handle is what it takes.
  void* (*variable_wrap)(AtenTensorHandle) = nullptr;
  void* cpu_handle = nullptr;  // RTLD_NOLOAD handle, never closed
};

// Fills `lib` or returns false with a message in `error` that says what is
// missing and what to do.
bool ResolveTorchLibrary(TorchLibrary* lib, std::string* error);

}  // namespace torchferry
