// cast: out = x converted to out's dtype, for every pair of the thirteen
// dtypes. The kernel is keyed by x's dtype and picks the destination at run
// time.
#include "plugins/cuda/call_util.h"
#include "plugins/cuda/element_types.cuh"
#include "plugins/cuda/launch_config.h"
#include "plugins/cuda/ops.h"
#include "plugins/cuda/strided_layout.h"

namespace torchferry::cuda {
namespace {

// The exact value of any element: uint64 in itself (its upper half has no
// int64), other integers and bool in int64, half types and float32 in float,
// float64 in double.
template <typename Src>
__device__ __forceinline__ auto Widen(Src value) {
  if constexpr (kIsFloating<Src>) {
    return ToOpMath(value);
  } else if constexpr (std::is_same_v<Src, uint64_t>) {
    return value;
  } else {
    return static_cast<int64_t>(value);
  }
}

template <typename Dst, typename Src>
__device__ __forceinline__ Dst Convert(Src value) {
  if constexpr (std::is_same_v<Dst, Src>) {
    return value;
  } else {
    const auto wide = Widen(value);
    using Wide = decltype(wide);
    if constexpr (std::is_same_v<Dst, bool>) {
      return wide != Wide(0);
    } else if constexpr (std::is_same_v<Dst, uint64_t> &&
                         std::is_floating_point_v<Wide>) {
      // Exact from 2^63 up, where int64 ends; below, negatives wrap through
      // int64 as for the narrower unsigned types.
      constexpr Wide kTopBit = Wide(9223372036854775808.0);  // 2^63
      return wide >= kTopBit
                 ? static_cast<uint64_t>(wide)
                 : static_cast<uint64_t>(static_cast<int64_t>(wide));
    } else if constexpr (std::is_integral_v<Dst> &&
                         std::is_floating_point_v<Wide>) {
      // Truncate toward zero, then wrap into narrow types as torch does
      // (it goes through int64 so that e.g. -1.5 -> uint8 gives 255).
      return static_cast<Dst>(static_cast<int64_t>(wide));
    } else if constexpr (std::is_same_v<Dst, __half> ||
                         std::is_same_v<Dst, __nv_bfloat16>) {
      // Through float32, as torch's Half and BFloat16 constructors do.
      return FromOpMath<Dst>(static_cast<float>(wide));
    } else {
      return static_cast<Dst>(wide);
    }
  }
}

template <typename Src, typename Dst>
__global__ void CastKernel(const Src* in, Dst* out, StridedLayout<2> layout,
                           int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < numel; i += step) {
    int64_t offsets[2];
    layout.Offsets(i, offsets);
    out[offsets[0]] = Convert<Dst>(in[offsets[1]]);
  }
}

}  // namespace

tf_status Cast(const tf_call* call) {
  const tf_tensor& x = InputTensor(call, 0);
  const tf_tensor& out = call->outputs[0];
  const Dtype src = DtypeOf(x.dtype);
  const Dtype dst = DtypeOf(out.dtype);
  const auto unsupported = [&] {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "cast: expected source and destination among bool, uint8, "
                "uint16, uint32, uint64, int8, int16, int32, int64, float16, "
                "bfloat16, float32, float64; found %s to %s",
                DtypeName(src), DtypeName(dst));
  };
  if (src == Dtype::kUnknown || dst == Dtype::kUnknown) return unsupported();

  const int64_t numel = NumElements(out.ndim, out.shape);
  if (numel == 0) return TF_OK;
  const int64_t* strides[2] = {out.strides, x.strides};
  StridedLayout<2> layout;
  if (!BuildLayout(out.ndim, out.shape, strides, &layout)) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "cast: expected strides that merge into at most %d "
                "dimensions, found %d that do not; make x contiguous first",
                kMaxRank, out.ndim);
  }

  DeviceGuard guard(call, out.device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  const cudaStream_t stream = StreamOf(call);
  return DispatchAny(
      src,
      [&](auto src_tag) {
        using Src = typename decltype(src_tag)::type;
        return DispatchAny(
            dst,
            [&](auto dst_tag) {
              using Dst = typename decltype(dst_tag)::type;
              CastKernel<Src, Dst>
                  <<<GridFor(numel), kThreadsPerBlock, 0, stream>>>(
                      static_cast<const Src*>(DataOf(x)),
                      static_cast<Dst*>(DataOf(out)), layout, numel);
              return CheckLaunch(call, "cast");
            },
            unsupported);
      },
      unsupported);
}

}  // namespace torchferry::cuda
