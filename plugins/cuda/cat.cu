// cat: each input copied into its slice of out along dim, one launch per
// input. The copy moves raw elements, so only the element size matters.
#include "plugins/cuda/call_util.h"
#include "plugins/cuda/dtype.h"
#include "plugins/cuda/element_types.cuh"
#include "plugins/cuda/launch_config.h"
#include "plugins/cuda/ops.h"
#include "plugins/cuda/strided_layout.h"

namespace torchferry::cuda {
namespace {

// offsets[0] into out's slice, [1] into the input.
template <typename Word>
__global__ void CopyInto(const Word* in, Word* slice, StridedLayout<2> layout,
                         int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < numel; i += step) {
    int64_t offsets[2];
    layout.Offsets(i, offsets);
    slice[offsets[0]] = in[offsets[1]];
  }
}

template <typename Word>
tf_status CatWords(const tf_call* call) {
  const tf_tensor_list& xs = call->inputs[0].value.list;
  const tf_tensor& out = call->outputs[0];
  const int64_t dim = AttrAsInt(call, 0, 0);
  if (out.ndim > kMaxRank || dim < 0 || dim >= out.ndim) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "cat: expected out of at most %d dimensions and dim in "
                "[0, %d), found %d and %lld",
                kMaxRank, out.ndim, out.ndim, static_cast<long long>(dim));
  }
  const cudaStream_t stream = StreamOf(call);
  int64_t start = 0;
  for (int64_t t = 0; t < xs.count; ++t) {
    const tf_tensor& x = xs.items[t];
    const int64_t numel = NumElements(x.ndim, x.shape);
    if (numel > 0) {
      const int64_t* strides[2] = {out.strides, x.strides};
      StridedLayout<2> layout;
      if (!BuildLayout(x.ndim, x.shape, strides, &layout)) {
        return Fail(call, TF_ERROR_UNSUPPORTED,
                    "cat: expected strides that merge into at most %d "
                    "dimensions; make the inputs contiguous first",
                    kMaxRank);
      }
      Word* slice = static_cast<Word*>(DataOf(out)) + start * out.strides[dim];
      CopyInto<Word><<<GridFor(numel), kThreadsPerBlock, 0, stream>>>(
          static_cast<const Word*>(DataOf(x)), slice, layout, numel);
      const tf_status status = CheckLaunch(call, "cat");
      if (status != TF_OK) return status;
    }
    start += x.shape[dim];
  }
  return TF_OK;
}

}  // namespace

tf_status Cat(const tf_call* call) {
  if (call->num_inputs != 1 || call->inputs[0].kind != TF_ARG_TENSOR_LIST ||
      call->inputs[0].value.list.count < 1 || call->num_outputs != 1) {
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "cat: expected a list of at least one tensor and one output");
  }
  const Dtype dtype = DtypeOf(call->inputs[0].value.list.items[0].dtype);
  DeviceGuard guard(call, call->outputs[0].device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchByElementSize(
      dtype,
      [&](auto word) { return CatWords<typename decltype(word)::type>(call); },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED, "cat: no kernel for %s",
                    DtypeName(dtype));
      });
}

}  // namespace torchferry::cuda
