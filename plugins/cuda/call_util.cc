#include "plugins/cuda/call_util.h"

#include <cstdarg>
#include <cstdio>

// The GPU code this build carries; meson passes the list it compiled for.
#ifndef TORCHFERRY_CUDA_ARCHS
#define TORCHFERRY_CUDA_ARCHS "sm_80 sm_90 compute_90"
#endif

namespace torchferry::cuda {

tf_status Fail(const tf_call* call, tf_status status, const char* format, ...) {
  char message[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  return call->host->set_error(call->error_sink, status, message);
}

tf_status CheckLaunch(const tf_call* call, const char* op) {
  const cudaError_t error = cudaGetLastError();
  if (error == cudaSuccess) return TF_OK;
  if (error == cudaErrorNoKernelImageForDevice ||
      error == cudaErrorInvalidDeviceFunction) {
    int device = -1;
    cudaGetDevice(&device);
    cudaDeviceProp props;
    const bool known = cudaGetDeviceProperties(&props, device) == cudaSuccess;
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "%s: this plugin carries GPU code for " TORCHFERRY_CUDA_ARCHS
                ", found a GPU of compute capability %d.%d (%s); rebuild "
                "the plugin for this GPU's architecture",
                op, known ? props.major : 0, known ? props.minor : 0,
                cudaGetErrorString(error));
  }
  return Fail(call, TF_ERROR_DEVICE,
              "%s: launching the kernel failed with %s (%s); an earlier "
              "failure may have left the device in an error state",
              op, cudaGetErrorName(error), cudaGetErrorString(error));
}

DeviceGuard::DeviceGuard(const tf_call* call, int device) {
  cudaError_t error = cudaGetDevice(&previous_);
  if (error == cudaSuccess && previous_ == device) return;
  if (error == cudaSuccess) error = cudaSetDevice(device);
  if (error != cudaSuccess) {
    status_ = Fail(call, TF_ERROR_DEVICE,
                   "could not make CUDA device %d current: %s; check that "
                   "the tensors' device exists and is visible "
                   "(CUDA_VISIBLE_DEVICES)",
                   device, cudaGetErrorString(error));
    return;
  }
  switched_ = true;
}

DeviceGuard::~DeviceGuard() {
  if (switched_) cudaSetDevice(previous_);
}

int CallDevice(const tf_call* call) {
  if (call->num_outputs > 0) return call->outputs[0].device.device_id;
  for (int i = 0; i < call->num_inputs; ++i) {
    const tf_arg& arg = call->inputs[i];
    if (arg.kind == TF_ARG_TENSOR) return arg.value.tensor->device.device_id;
    if (arg.kind == TF_ARG_TENSOR_LIST && arg.value.list.count > 0) {
      return arg.value.list.items[0].device.device_id;
    }
  }
  return 0;
}

}  // namespace torchferry::cuda
