// The slice of torch's AOTI C shim that the bridge uses, declared here rather
// than taken from a torch wheel's headers: the core is built once and resolves
// these at run time (dlsym on the libtorch that `import torch` loaded), so one
// binary serves every supported torch. Signatures follow
// torch/csrc/inductor/aoti_torch/c/shim.h and torch/csrc/stable/c/shim.h,
// which have kept them stable since torch 2.3, the first torch that exports
// every required one. Three came later and are optional: the bridge tells a
// tensor's layout and the meta device without them
// (core/bridge/bridge_read.cc).
#pragma once

#include <cstdint>

namespace torchferry {

struct AtenTensorOpaque;
using AtenTensorHandle = AtenTensorOpaque*;  // an at::Tensor* underneath
using AOTITorchError = int32_t;              // 0 success, 1 failure

struct AotiApi {
  // Present in every torch >= 2.3: the bridge refuses to start without them.
  AOTITorchError (*get_data_ptr)(AtenTensorHandle, void**);
  AOTITorchError (*get_dim)(AtenTensorHandle, int64_t*);
  AOTITorchError (*get_sizes)(AtenTensorHandle, int64_t**);
  AOTITorchError (*get_strides)(AtenTensorHandle, int64_t**);
  AOTITorchError (*get_dtype)(AtenTensorHandle, int32_t*);
  AOTITorchError (*get_device_type)(AtenTensorHandle, int32_t*);
  AOTITorchError (*get_device_index)(AtenTensorHandle, int32_t*);
  AOTITorchError (*get_storage_offset)(AtenTensorHandle, int64_t*);
  // Bytes in the tensor's storage (its nbytes), not elements.
  AOTITorchError (*get_storage_size)(AtenTensorHandle, int64_t*);
  AOTITorchError (*delete_tensor_object)(AtenTensorHandle);
  bool (*grad_mode_is_enabled)();
  // Constants are functions in the shim; read once at start-up.
  int32_t (*device_type_cpu)();
  int32_t (*device_type_cuda)();

  // Optional: NULL where this torch lacks them.
  // torch >= 2.9 (get_layout), >= 2.7 (device_type_meta), >= 2.4
  // (layout_strided). Without the first, a tensor that is not strided is told
  // by its strides getter failing; without the second, the meta device's code
  // is read from a meta tensor at start-up.
  AOTITorchError (*get_layout)(AtenTensorHandle, int32_t*);
  int32_t (*device_type_meta)();
  int32_t (*layout_strided)();
  // torch >= 2.14: the stable PyObject -> at::Tensor conversion (new ref).
  AOTITorchError (*tensor_from_pyobject)(void* py_obj, AtenTensorHandle* out);
  // torch >= 2.13: the message of the last failure on this thread, without
  // the C++ backtrace.
  const char* (*exception_get_what)();
  // A new contiguous-or-strided tensor through at::empty_strided (every torch
  // the bridge accepts has it; optional so that a build without it only
  // loses the fast output allocation).
  AOTITorchError (*empty_strided)(int64_t ndim, const int64_t* sizes,
                                  const int64_t* strides, int32_t dtype,
                                  int32_t device_type, int32_t device_index,
                                  AtenTensorHandle* ret);
  // torch >= 2.14: at::Tensor -> a new torch.Tensor (new reference); py_type
  // NULL for torch.Tensor.
  AOTITorchError (*tensor_to_pyobject)(AtenTensorHandle, void* py_type,
                                       void** ret);
  // In libtorch_cuda.so, present only in CUDA builds.
  AOTITorchError (*get_current_cuda_stream)(int32_t device_index,
                                            void** stream);
};

}  // namespace torchferry
