// softmax along one dim, accumulated in float32 (float64 for float64) in
// chunks whose sums meet in float64 (LongSum, row_reduce.cuh).
// When the softmax dim is not the innermost and there are many rows, each
// thread takes a whole row: neighbouring threads then read neighbouring
// addresses, which a warp per row could not.
#include "plugins/cuda/call_util.h"
#include "plugins/cuda/element_types.cuh"
#include "plugins/cuda/math.cuh"
#include "plugins/cuda/ops.h"
#include "plugins/cuda/row_reduce.cuh"

namespace torchferry::cuda {
namespace {

// Below this many rows a strided softmax dim still goes a warp per row:
// a thread per row would leave the GPU mostly idle.
constexpr int64_t kThreadRowMinRows = 1024;

struct SoftmaxArgs {
  StridedLayout<2> rows;  // every dim but the softmax dim; x, then out
  int64_t num_rows;
  int64_t n;  // length of the softmax dim
  int64_t x_step;
  int64_t out_step;
};

template <typename T, int kThreadsPerRow, int kRowsPerBlock>
__global__ void SoftmaxRowKernel(const T* x, T* out, SoftmaxArgs args) {
  static_assert(kRowsPerBlock == 1 || kThreadsPerRow == 32,
                "several rows per block only with a warp per row");
  using A = OpMathT<T>;
  const int lane = threadIdx.x % kThreadsPerRow;
  const int64_t row_step = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock +
                     threadIdx.x / kThreadsPerRow;
       row < args.num_rows; row += row_step) {
    int64_t offsets[2];
    args.rows.Offsets(row, offsets);
    const T* x_row = x + offsets[0];
    T* out_row = out + offsets[1];

    A max = NegativeInfinity<A>();
    for (int64_t j = lane; j < args.n; j += kThreadsPerRow) {
      max = Max{}(max, ToOpMath(x_row[j * args.x_step]));
    }
    max = RowReduce<kThreadsPerRow>(max, Max{});

    LongSum<A> part;
    for (int64_t j = lane; j < args.n; j += kThreadsPerRow) {
      part.Add(Exp(ToOpMath(x_row[j * args.x_step]) - max));
    }
    const A sum =
        static_cast<A>(RowReduce<kThreadsPerRow>(part.Value(), Plus{}));

    for (int64_t j = lane; j < args.n; j += kThreadsPerRow) {
      const A e = Exp(ToOpMath(x_row[j * args.x_step]) - max);
      out_row[j * args.out_step] = FromOpMath<T>(e / sum);
    }
  }
}

template <typename T>
__global__ void SoftmaxThreadRowKernel(const T* x, T* out, SoftmaxArgs args) {
  using A = OpMathT<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t row =
           static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       row < args.num_rows; row += step) {
    int64_t offsets[2];
    args.rows.Offsets(row, offsets);
    const T* x_row = x + offsets[0];
    T* out_row = out + offsets[1];
    A max = NegativeInfinity<A>();
    for (int64_t j = 0; j < args.n; ++j) {
      max = Max{}(max, ToOpMath(x_row[j * args.x_step]));
    }
    LongSum<A> part;
    for (int64_t j = 0; j < args.n; ++j) {
      part.Add(Exp(ToOpMath(x_row[j * args.x_step]) - max));
    }
    const A sum = static_cast<A>(part.Value());
    for (int64_t j = 0; j < args.n; ++j) {
      const A e = Exp(ToOpMath(x_row[j * args.x_step]) - max);
      out_row[j * args.out_step] = FromOpMath<T>(e / sum);
    }
  }
}

template <typename T>
tf_status SoftmaxAs(const tf_call* call) {
  const tf_tensor& x = InputTensor(call, 0);
  const tf_tensor& out = call->outputs[0];
  int64_t dim = AttrAsInt(call, 0, -1);
  if (dim < 0) dim += x.ndim;
  if (x.ndim > kMaxRank || dim < 0 || dim >= x.ndim) {
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "softmax: expected dim in [0, %d) and at most %d dimensions, "
                "found dim %lld of %d",
                x.ndim, kMaxRank, static_cast<long long>(dim), x.ndim);
  }

  SoftmaxArgs args;
  args.n = x.shape[dim];
  args.x_step = x.strides[dim];
  args.out_step = out.strides[dim];
  // Every dim but `dim`: what tells one row from another.
  int64_t row_shape[kMaxRank];
  int64_t x_row_strides[kMaxRank];
  int64_t out_row_strides[kMaxRank];
  int row_ndim = 0;
  for (int d = 0; d < x.ndim; ++d) {
    if (d == dim) continue;
    row_shape[row_ndim] = x.shape[d];
    x_row_strides[row_ndim] = x.strides[d];
    out_row_strides[row_ndim] = out.strides[d];
    ++row_ndim;
  }
  args.num_rows = NumElements(row_ndim, row_shape);
  if (args.n == 0 || args.num_rows == 0) return TF_OK;
  const int64_t* strides[2] = {x_row_strides, out_row_strides};
  if (!BuildLayout(row_ndim, row_shape, strides, &args.rows)) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "softmax: expected the other dimensions' strides to merge "
                "into at most %d, found %d that do not; make x contiguous "
                "first",
                kMaxRank, row_ndim);
  }

  const T* x_data = static_cast<const T*>(DataOf(x));
  T* out_data = static_cast<T*>(DataOf(out));
  const cudaStream_t stream = StreamOf(call);
  if (args.n > 1 && args.x_step != 1 && args.num_rows >= kThreadRowMinRows) {
    SoftmaxThreadRowKernel<T>
        <<<GridFor(args.num_rows), kThreadsPerBlock, 0, stream>>>(
            x_data, out_data, args);
  } else if (args.n <= kWarpRowLimit) {
    SoftmaxRowKernel<T, 32, kWarpRowsPerBlock>
        <<<RowGrid(args.num_rows, kWarpRowsPerBlock), 32 * kWarpRowsPerBlock, 0,
           stream>>>(x_data, out_data, args);
  } else {
    SoftmaxRowKernel<T, kBlockRowThreads, 1>
        <<<RowGrid(args.num_rows, 1), kBlockRowThreads, 0, stream>>>(
            x_data, out_data, args);
  }
  return CheckLaunch(call, "softmax");
}

}  // namespace

tf_status Softmax(const tf_call* call) {
  const Dtype dtype = DtypeOf(InputTensor(call, 0).dtype);
  DeviceGuard guard(call, call->outputs[0].device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchFloat(
      dtype,
      [&](auto tag) { return SoftmaxAs<typename decltype(tag)::type>(call); },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED, "softmax: no kernel for %s",
                    DtypeName(dtype));
      });
}

}  // namespace torchferry::cuda
