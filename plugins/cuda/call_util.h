// What every kernel entry point needs around its launch: reading the call,
// reporting failures through the host, switching to the tensors' device, and
// keeping C++ exceptions on this side of the C ABI.
#pragma once

#include <cuda_runtime_api.h>

#include <new>

#include "abi/torchferry.h"

namespace torchferry::cuda {

// Formats a message and hands it to the host's error sink; returns `status`
// so that a kernel can `return Fail(call, ...)`.
tf_status Fail(const tf_call* call, tf_status status, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

// Reports a launch failure of `op`'s kernel, or returns TF_OK. Launches are
// asynchronous, so this sees configuration errors and errors already sticky
// on the context; a fault inside the kernel surfaces at the caller's next
// synchronisation, as it does for torch's own kernels.
tf_status CheckLaunch(const tf_call* call, const char* op);

// Makes `device` current for the calling thread while the guard lives. Most
// calls find it current already and pay one cudaGetDevice. The previous
// device is restored because the driver context is shared with torch's
// runtime in the same thread.
class DeviceGuard {
 public:
  DeviceGuard(const tf_call* call, int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

  // TF_OK, or the failure already reported through the call's sink.
  tf_status status() const { return status_; }

 private:
  int previous_ = -1;
  bool switched_ = false;
  tf_status status_ = TF_OK;
};

inline const tf_tensor& InputTensor(const tf_call* call, int index) {
  return *call->inputs[index].value.tensor;
}

// Element 0 of a view. The host folds any offset into `data` (byte_offset is
// always 0, ABI.md), but a view made by another DLPack-minded caller may not,
// and honouring it costs one add.
inline void* DataOf(const tf_tensor& tensor) {
  return static_cast<char*>(tensor.data) + tensor.byte_offset;
}

inline cudaStream_t StreamOf(const tf_call* call) {
  return static_cast<cudaStream_t>(call->stream);
}

// Scalar attribute `index` as a double or an int64, whichever kind the host
// passed; `fallback` when the op was called without it.
inline double AttrAsDouble(const tf_call* call, int index, double fallback) {
  if (index >= call->num_attrs) return fallback;
  const tf_arg& arg = call->attrs[index];
  if (arg.kind == TF_ARG_FLOAT) return arg.value.f;
  if (arg.kind == TF_ARG_INT || arg.kind == TF_ARG_BOOL) {
    return static_cast<double>(arg.value.i);
  }
  return fallback;
}

inline int64_t AttrAsInt(const tf_call* call, int index, int64_t fallback) {
  if (index >= call->num_attrs) return fallback;
  const tf_arg& arg = call->attrs[index];
  if (arg.kind == TF_ARG_INT || arg.kind == TF_ARG_BOOL) return arg.value.i;
  if (arg.kind == TF_ARG_FLOAT) return static_cast<int64_t>(arg.value.f);
  return fallback;
}

// The device every tensor of the call lives on: the host checked that they
// agree, so the first output (or else the first tensor input) tells.
int CallDevice(const tf_call* call);

// A kernel entry point with every exception turned into a status, since no
// exception may cross the C ABI. Kernels allocate nothing on the host in the
// common case; this is the safety net for the rare path that does.
template <tf_status (*Impl)(const tf_call*)>
tf_status NoThrow(const tf_call* call) noexcept {
  try {
    return Impl(call);
  } catch (const std::bad_alloc&) {
    return Fail(call, TF_ERROR_OUT_OF_MEMORY,
                "host memory ran out while preparing the launch");
  } catch (...) {
    return Fail(call, TF_ERROR_INTERNAL,
                "an unexpected C++ exception escaped the kernel; please "
                "report it with the op, shapes and dtypes");
  }
}

}  // namespace torchferry::cuda
