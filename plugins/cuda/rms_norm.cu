// rms_norm: out = x / sqrt(mean(x^2 over the last dim) + eps) * weight,
// accumulated in float32 (float64 for float64 tensors) in chunks whose sums
// meet in float64 (LongSum, row_reduce.cuh); add_rms_norm: the same of
// residual after residual += x, in one kernel.
#include "plugins/cuda/call_util.h"
#include "plugins/cuda/element_types.cuh"
#include "plugins/cuda/math.cuh"
#include "plugins/cuda/ops.h"
#include "plugins/cuda/row_reduce.cuh"

namespace torchferry::cuda {
namespace {

struct RmsNormArgs {
  StridedLayout<3> rows;  // the leading dims; strides of x, out, residual
  int64_t num_rows;
  int64_t n;  // length of the last dim
  int64_t x_step;
  int64_t weight_step;
  int64_t out_step;
  int64_t residual_step;
};

// kAdd (add_rms_norm): residual += x first, rounded to T as add rounds, and
// the norm is of the new residual. Each thread reads back only the elements
// it wrote, so the row needs no barrier between the two.
template <typename T, int kThreadsPerRow, int kRowsPerBlock, bool kAdd>
__global__ void RmsNormKernel(const T* x, const T* weight, T* out, T* residual,
                              RmsNormArgs args, OpMathT<T> eps) {
  static_assert(kRowsPerBlock == 1 || kThreadsPerRow == 32,
                "several rows per block only with a warp per row");
  using A = OpMathT<T>;
  const int lane = threadIdx.x % kThreadsPerRow;
  const int64_t row_step = static_cast<int64_t>(gridDim.x) * kRowsPerBlock;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock +
                     threadIdx.x / kThreadsPerRow;
       row < args.num_rows; row += row_step) {
    int64_t offsets[3];
    args.rows.Offsets(row, offsets);
    const T* x_row = x + offsets[0];
    T* out_row = out + offsets[1];
    const T* src = x_row;
    int64_t src_step = args.x_step;
    if constexpr (kAdd) {
      T* r_row = residual + offsets[2];
      for (int64_t j = lane; j < args.n; j += kThreadsPerRow) {
        T& r = r_row[j * args.residual_step];
        r = FromOpMath<T>(ToOpMath(r) + ToOpMath(x_row[j * args.x_step]));
      }
      src = r_row;
      src_step = args.residual_step;
    }

    LongSum<A> sum_sq;
    for (int64_t j = lane; j < args.n; j += kThreadsPerRow) {
      const A v = ToOpMath(src[j * src_step]);
      sum_sq.Add(v * v);
    }
    const double total = RowReduce<kThreadsPerRow>(sum_sq.Value(), Plus{});
    const A scale =
        InvSqrt(static_cast<A>(total / static_cast<double>(args.n)) + eps);

    for (int64_t j = lane; j < args.n; j += kThreadsPerRow) {
      const A v = ToOpMath(src[j * src_step]);
      const A w = ToOpMath(weight[j * args.weight_step]);
      out_row[j * args.out_step] = FromOpMath<T>(v * scale * w);
    }
  }
}

template <typename T, bool kAdd>
tf_status RmsNormAs(const tf_call* call, const char* op) {
  const tf_tensor& x = InputTensor(call, 0);
  const tf_tensor& weight = InputTensor(call, 1);
  const tf_tensor& out = call->outputs[0];
  const tf_tensor& residual = kAdd ? call->outputs[1] : x;
  const int last = x.ndim - 1;

  RmsNormArgs args;
  args.n = x.shape[last];
  args.num_rows = NumElements(last, x.shape);
  if (args.n == 0 || args.num_rows == 0) return TF_OK;
  args.x_step = x.strides[last];
  args.weight_step = weight.strides[0];
  args.out_step = out.strides[last];
  args.residual_step = residual.strides[last];
  const int64_t* strides[3] = {x.strides, out.strides, residual.strides};
  if (!BuildLayout(last, x.shape, strides, &args.rows)) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "%s: expected leading dimensions whose strides merge "
                "into at most %d, found %d that do not; make x contiguous "
                "first",
                op, kMaxRank, last);
  }
  const OpMathT<T> eps = static_cast<OpMathT<T>>(AttrAsDouble(call, 0, 1e-6));
  const T* x_data = static_cast<const T*>(DataOf(x));
  const T* w_data = static_cast<const T*>(DataOf(weight));
  T* out_data = static_cast<T*>(DataOf(out));
  T* r_data = kAdd ? static_cast<T*>(DataOf(residual)) : nullptr;
  const cudaStream_t stream = StreamOf(call);

  if (args.n <= kWarpRowLimit) {
    RmsNormKernel<T, 32, kWarpRowsPerBlock, kAdd>
        <<<RowGrid(args.num_rows, kWarpRowsPerBlock), 32 * kWarpRowsPerBlock, 0,
           stream>>>(x_data, w_data, out_data, r_data, args, eps);
  } else {
    RmsNormKernel<T, kBlockRowThreads, 1, kAdd>
        <<<RowGrid(args.num_rows, 1), kBlockRowThreads, 0, stream>>>(
            x_data, w_data, out_data, r_data, args, eps);
  }
  return CheckLaunch(call, op);
}

template <bool kAdd>
tf_status RmsNormOp(const tf_call* call, const char* op) {
  const Dtype dtype = DtypeOf(InputTensor(call, 0).dtype);
  DeviceGuard guard(call, call->outputs[0].device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchFloat(
      dtype,
      [&](auto tag) {
        return RmsNormAs<typename decltype(tag)::type, kAdd>(call, op);
      },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED, "%s: no kernel for %s", op,
                    DtypeName(dtype));
      });
}

}  // namespace

tf_status RmsNorm(const tf_call* call) {
  return RmsNormOp<false>(call, "rms_norm");
}

tf_status AddRmsNorm(const tf_call* call) {
  return RmsNormOp<true>(call, "add_rms_norm");
}

}  // namespace torchferry::cuda
