// The launch engine behind the elementwise ops: one output and up to three
// inputs of one element type, sharing the output's shape. Dense, 16-byte
// aligned operands take a vectorised kernel; everything else walks a merged
// strided layout.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "plugins/cuda/call_util.h"
#include "plugins/cuda/element_types.cuh"
#include "plugins/cuda/launch_config.h"
#include "plugins/cuda/strided_layout.h"

namespace torchferry::cuda {

// Where an operand's element 0 lives and how it strides over the iteration
// shape. Views that are not whole tensors (the halves of silu_and_mul's
// input) are expressed this way.
struct Operand {
  void* data;
  const int64_t* strides;
};

template <typename T, int NIn>
struct ElementwisePointers {
  T* out;
  const T* in[NIn];
};

template <typename T, int N>
struct alignas(sizeof(T) * N) AlignedVector {
  T values[N];
};

template <int NIn, typename T, typename Fn>
__device__ __forceinline__ T ApplyElementwise(const Fn& fn,
                                              const T (&values)[NIn]) {
  if constexpr (NIn == 1) {
    return fn(values[0]);
  } else if constexpr (NIn == 2) {
    return fn(values[0], values[1]);
  } else {
    return fn(values[0], values[1], values[2]);
  }
}

template <typename T, int NIn, typename Fn>
__global__ void ElementwiseContiguousKernel(ElementwisePointers<T, NIn> ptrs,
                                            int64_t numel, Fn fn) {
  constexpr int kVec = 16 / sizeof(T) > 0 ? 16 / sizeof(T) : 1;
  using Vec = AlignedVector<T, kVec>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t num_vecs = numel / kVec;
  for (int64_t v = first; v < num_vecs; v += step) {
    Vec in[NIn];
    for (int k = 0; k < NIn; ++k)
      in[k] = reinterpret_cast<const Vec*>(ptrs.in[k])[v];
    Vec out;
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      T values[NIn];
      for (int k = 0; k < NIn; ++k) values[k] = in[k].values[j];
      out.values[j] = ApplyElementwise<NIn>(fn, values);
    }
    reinterpret_cast<Vec*>(ptrs.out)[v] = out;
  }
  for (int64_t i = num_vecs * kVec + first; i < numel; i += step) {
    T values[NIn];
    for (int k = 0; k < NIn; ++k) values[k] = ptrs.in[k][i];
    ptrs.out[i] = ApplyElementwise<NIn>(fn, values);
  }
}

template <typename T, int NIn, typename Fn, typename IndexT>
__global__ void ElementwiseStridedKernel(ElementwisePointers<T, NIn> ptrs,
                                         StridedLayout<NIn + 1> layout,
                                         IndexT numel, Fn fn) {
  const IndexT step = static_cast<IndexT>(gridDim.x) * blockDim.x;
  for (IndexT i = static_cast<IndexT>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < numel; i += step) {
    int64_t offsets[NIn + 1];
    layout.Offsets(i, offsets);
    T values[NIn];
    for (int k = 0; k < NIn; ++k) values[k] = ptrs.in[k][offsets[k + 1]];
    ptrs.out[offsets[0]] = ApplyElementwise<NIn>(fn, values);
  }
}

inline bool IsAligned16(const void* pointer) {
  return (reinterpret_cast<uintptr_t>(pointer) & 15u) == 0;
}

// Launches fn over `shape` on the call's stream. The caller has made the
// tensors' device current.
template <typename T, int NIn, typename Fn>
tf_status LaunchElementwise(const tf_call* call, const char* op, int ndim,
                            const int64_t* shape, Operand out,
                            const Operand (&in)[NIn], Fn fn) {
  const int64_t numel = NumElements(ndim, shape);
  if (numel == 0) return TF_OK;

  ElementwisePointers<T, NIn> ptrs;
  ptrs.out = static_cast<T*>(out.data);
  for (int k = 0; k < NIn; ++k) ptrs.in[k] = static_cast<const T*>(in[k].data);

  const int64_t* strides[NIn + 1];
  strides[0] = out.strides;
  for (int k = 0; k < NIn; ++k) strides[k + 1] = in[k].strides;
  StridedLayout<NIn + 1> layout;
  if (!BuildLayout(ndim, shape, strides, &layout)) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "%s: expected operands whose strides merge into at most %d "
                "dimensions, found %d dimensions that do not merge; make the "
                "operands contiguous (.contiguous()) first",
                op, kMaxRank, ndim);
  }

  const cudaStream_t stream = StreamOf(call);
  bool aligned = IsAligned16(ptrs.out);
  for (int k = 0; k < NIn; ++k) aligned = aligned && IsAligned16(ptrs.in[k]);
  if (layout.IsContiguous() && aligned) {
    constexpr int64_t kVec = 16 / sizeof(T) > 0 ? 16 / sizeof(T) : 1;
    const unsigned blocks = GridFor((numel + kVec - 1) / kVec);
    ElementwiseContiguousKernel<T, NIn, Fn>
        <<<blocks, kThreadsPerBlock, 0, stream>>>(ptrs, numel, fn);
  } else if (numel <= kMax32BitIndex) {
    ElementwiseStridedKernel<T, NIn, Fn, uint32_t>
        <<<GridFor(numel), kThreadsPerBlock, 0, stream>>>(
            ptrs, layout, static_cast<uint32_t>(numel), fn);
  } else {
    ElementwiseStridedKernel<T, NIn, Fn, uint64_t>
        <<<GridFor(numel), kThreadsPerBlock, 0, stream>>>(
            ptrs, layout, static_cast<uint64_t>(numel), fn);
  }
  return CheckLaunch(call, op);
}

// The common case: operands that are whole tensors of the output's shape.
template <typename T, int NIn, typename Fn>
tf_status LaunchElementwise(const tf_call* call, const char* op,
                            const tf_tensor& out,
                            const tf_tensor* const (&in)[NIn], Fn fn) {
  Operand in_operands[NIn];
  for (int k = 0; k < NIn; ++k)
    in_operands[k] = {DataOf(*in[k]), in[k]->strides};
  return LaunchElementwise<T, NIn>(call, op, out.ndim, out.shape,
                                   Operand{DataOf(out), out.strides},
                                   in_operands, fn);
}

}  // namespace torchferry::cuda
