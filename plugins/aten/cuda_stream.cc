#include "cuda_stream.h"

namespace torchferry::aten {
#if defined(TORCHFERRY_ATEN_WITH_CUDA)
namespace {

// The device of the call's first tensor; the host puts every tensor of a
// call on one device.
std::optional<int32_t> CallDeviceId(const tf_call& call) {
  for (int i = 0; i < call.num_inputs; ++i) {
    const tf_arg& arg = call.inputs[i];
    if (arg.kind == TF_ARG_TENSOR) return arg.value.tensor->device.device_id;
    if (arg.kind == TF_ARG_TENSOR_LIST && arg.value.list.count > 0) {
      return arg.value.list.items[0].device.device_id;
    }
  }
  if (call.num_outputs > 0) return call.outputs[0].device.device_id;
  return std::nullopt;
}

}  // namespace
#endif

CallStreamGuard::CallStreamGuard(const tf_call& call, int32_t device_type) {
#if defined(TORCHFERRY_ATEN_WITH_CUDA)
  if (device_type != TF_DEVICE_CUDA) return;
  const std::optional<int32_t> device_id = CallDeviceId(call);
  if (!device_id) return;
  // c10 names an external CUDA stream by its cudaStream_t pointer value (see
  // "Note [StreamId assignment]" in c10/cuda/CUDAStream.cpp), and stream id
  // 0 is the default stream, as a NULL cudaStream_t is. Going through the
  // generic c10::Stream keeps CUDA's headers and libc10_cuda out of the
  // build; torch's CUDA guard, registered when torch loaded, does the rest.
  const c10::Device device(c10::DeviceType::CUDA,
                           static_cast<c10::DeviceIndex>(*device_id));
  guard_.emplace(c10::Stream(c10::Stream::UNSAFE, device,
                             reinterpret_cast<c10::StreamId>(call.stream)));
#else
  (void)call;
  (void)device_type;
#endif
}

}  // namespace torchferry::aten
