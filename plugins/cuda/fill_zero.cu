#include "plugins/cuda/call_util.h"
#include "plugins/cuda/dtype.h"
#include "plugins/cuda/element_types.cuh"
#include "plugins/cuda/fill_zero.h"
#include "plugins/cuda/launch_config.h"
#include "plugins/cuda/strided_layout.h"

namespace torchferry::cuda {
namespace {

// Zero is all-zero bits in every dtype, so only the element size matters.
template <typename Word>
__global__ void FillZeroKernel(Word* data, StridedLayout<1> layout,
                               int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < numel; i += step) {
    int64_t offsets[1];
    layout.Offsets(i, offsets);
    data[offsets[0]] = Word(0);
  }
}

template <typename Word>
void LaunchFill(void* data, const StridedLayout<1>& layout, int64_t numel,
                cudaStream_t stream) {
  FillZeroKernel<Word><<<GridFor(numel), kThreadsPerBlock, 0, stream>>>(
      static_cast<Word*>(data), layout, numel);
}

}  // namespace

tf_status FillZero(const tf_call* call, const tf_tensor& tensor,
                   const char* op) {
  const int64_t numel = NumElements(tensor.ndim, tensor.shape);
  if (numel == 0) return TF_OK;
  const int64_t* strides[1] = {tensor.strides};
  StridedLayout<1> layout;
  if (!BuildLayout(tensor.ndim, tensor.shape, strides, &layout)) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "%s: expected an output whose strides merge into at most %d "
                "dimensions, found %d that do not",
                op, kMaxRank, tensor.ndim);
  }
  const cudaStream_t stream = StreamOf(call);
  const Dtype dtype = DtypeOf(tensor.dtype);
  return DispatchByElementSize(
      dtype,
      [&](auto word) {
        LaunchFill<typename decltype(word)::type>(DataOf(tensor), layout, numel,
                                                  stream);
        return CheckLaunch(call, op);
      },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED, "%s: cannot zero %s", op,
                    DtypeName(dtype));
      });
}

}  // namespace torchferry::cuda
