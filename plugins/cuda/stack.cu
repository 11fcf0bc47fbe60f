// stack: out.select(dim, i) = xs[i]. Inputs that share strides (usually all
// of them) are copied by one launch, up to kStackGroup at a time; the copy
// moves raw elements, so only the element size matters.
#include <cstring>

#include "plugins/cuda/call_util.h"
#include "plugins/cuda/element_types.cuh"
#include "plugins/cuda/launch_config.h"
#include "plugins/cuda/ops.h"
#include "plugins/cuda/strided_layout.h"

namespace torchferry::cuda {
namespace {

// Inputs per launch: their pointers travel in the kernel's parameters.
constexpr int kStackGroup = 32;

struct StackGroup {
  const void* inputs[kStackGroup];
};

// blockIdx.y picks the input; x-blocks stride over its elements. `out` points
// at the first input's slice, `out_step` is out's stride along dim.
template <typename Word>
__global__ void StackKernel(StackGroup group, Word* out, int64_t out_step,
                            StridedLayout<2> layout, int64_t numel) {
  const Word* in = static_cast<const Word*>(group.inputs[blockIdx.y]);
  Word* slice = out + static_cast<int64_t>(blockIdx.y) * out_step;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < numel; i += step) {
    int64_t offsets[2];
    layout.Offsets(i, offsets);
    slice[offsets[0]] = in[offsets[1]];
  }
}

template <typename Word>
tf_status StackWords(const tf_call* call) {
  const tf_tensor_list& xs = call->inputs[0].value.list;
  const tf_tensor& out = call->outputs[0];
  const int64_t dim = AttrAsInt(call, 0, 0);
  const tf_tensor& first = xs.items[0];
  const int ndim = first.ndim;
  const int64_t numel = NumElements(ndim, first.shape);
  if (numel == 0 || xs.count == 0) return TF_OK;
  if (ndim > kMaxRank) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "stack: expected inputs of at most %d dimensions, found %d",
                kMaxRank, ndim);
  }

  // out's strides with `dim` removed: where each input element lands.
  int64_t slice_strides[kMaxRank];
  for (int d = 0, o = 0; o <= ndim; ++o) {
    if (o != dim) slice_strides[d++] = out.strides[o];
  }
  const int64_t out_step = out.strides[dim];
  const cudaStream_t stream = StreamOf(call);
  const unsigned blocks_x = GridFor(numel);

  int64_t start = 0;
  while (start < xs.count) {
    // The group: up to kStackGroup consecutive inputs with the first's
    // strides, so that one layout serves them all.
    const tf_tensor& lead = xs.items[start];
    StackGroup group;
    int count = 0;
    while (count < kStackGroup && start + count < xs.count) {
      const tf_tensor& item = xs.items[start + count];
      if (count > 0 && ndim > 0 &&
          std::memcmp(item.strides, lead.strides, sizeof(int64_t) * ndim) !=
              0) {
        break;
      }
      group.inputs[count++] = DataOf(item);
    }
    const int64_t* strides[2] = {slice_strides, lead.strides};
    StridedLayout<2> layout;
    if (!BuildLayout(ndim, first.shape, strides, &layout)) {
      return Fail(call, TF_ERROR_UNSUPPORTED,
                  "stack: expected strides that merge into at most %d "
                  "dimensions, found %d that do not; make the inputs "
                  "contiguous first",
                  kMaxRank, ndim);
    }
    Word* out_base = static_cast<Word*>(DataOf(out)) + start * out_step;
    const dim3 grid(blocks_x, static_cast<unsigned>(count));
    StackKernel<Word><<<grid, kThreadsPerBlock, 0, stream>>>(
        group, out_base, out_step, layout, numel);
    const tf_status status = CheckLaunch(call, "stack");
    if (status != TF_OK) return status;
    start += count;
  }
  return TF_OK;
}

}  // namespace

tf_status Stack(const tf_call* call) {
  const tf_tensor_list& xs = call->inputs[0].value.list;
  if (xs.count == 0) return TF_OK;
  const Dtype dtype = DtypeOf(xs.items[0].dtype);
  DeviceGuard guard(call, call->outputs[0].device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchByElementSize(
      dtype,
      [&](auto word) {
        return StackWords<typename decltype(word)::type>(call);
      },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED, "stack: no kernel for %s",
                    DtypeName(dtype));
      });
}

}  // namespace torchferry::cuda
