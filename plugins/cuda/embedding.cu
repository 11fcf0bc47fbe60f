// embedding: out[i..., :] = table[ids[i...], :]. A first launch checks every
// id and records the first bad one's position; the gather launch reads that
// record and writes nothing when it is set, so a bad id leaves out untouched
// and no row outside the table is read. Reporting the bad id means reading
// the record on the host: every call synchronises its stream once (the host
// cannot check the ids without the same sync).
#include <cinttypes>
#include <cstdio>
#include <string>

#include "plugins/cuda/call_util.h"
#include "plugins/cuda/dtype.h"
#include "plugins/cuda/element_types.cuh"
#include "plugins/cuda/launch_config.h"
#include "plugins/cuda/ops.h"
#include "plugins/cuda/strided_layout.h"

namespace torchferry::cuda {
namespace {

constexpr unsigned long long kNoBadId = ~0ull;

template <typename I>
__global__ void CheckIds(const I* ids, StridedLayout<1> layout, int64_t count,
                         int64_t num, unsigned long long* first_bad) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += step) {
    int64_t offsets[1];
    layout.Offsets(i, offsets);
    const int64_t id = static_cast<int64_t>(ids[offsets[0]]);
    if (id < 0 || id >= num) {
      atomicMin(first_bad, static_cast<unsigned long long>(i));
    }
  }
}

// layout walks the ids' shape: offsets[0] into out's rows, [1] into ids.
template <typename Word, typename I>
__global__ void Gather(const I* ids, const Word* table, Word* out,
                       StridedLayout<2> layout, int64_t count, int64_t dim,
                       int64_t table_row, int64_t table_col, int64_t out_col,
                       const unsigned long long* first_bad) {
  if (*first_bad != kNoBadId) return;
  const int64_t total = count * dim;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += step) {
    const int64_t row = i / dim, col = i % dim;
    int64_t offsets[2];
    layout.Offsets(row, offsets);
    const int64_t id = static_cast<int64_t>(ids[offsets[1]]);
    out[offsets[0] + col * out_col] = table[id * table_row + col * table_col];
  }
}

// "[1, 2]" for the row-major position `flat` in ids.
std::string IndexText(const tf_tensor& ids, int64_t flat) {
  int64_t index[kMaxRank];
  for (int d = ids.ndim - 1; d >= 0; --d) {
    index[d] = flat % ids.shape[d];
    flat /= ids.shape[d];
  }
  std::string text = "[";
  for (int d = 0; d < ids.ndim; ++d) {
    text += (d == 0 ? "" : ", ") + std::to_string(index[d]);
  }
  return text + "]";
}

template <typename Word, typename I>
tf_status Run(const tf_call* call) {
  const tf_tensor& ids = InputTensor(call, 0);
  const tf_tensor& table = InputTensor(call, 1);
  const tf_tensor& out = call->outputs[0];
  const int64_t count = NumElements(ids.ndim, ids.shape);
  const int64_t num = table.shape[0], dim = table.shape[1];
  if (count * dim == 0) return TF_OK;  // as on the CPU: out is empty
  if (ids.ndim > kMaxRank - 1) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "embedding: expected ids of at most %d dimensions, found %d",
                kMaxRank - 1, ids.ndim);
  }
  const int64_t* id_strides[1] = {ids.strides};
  StridedLayout<1> id_layout;
  const int64_t* strides[2] = {out.strides, ids.strides};  // out's leading
  StridedLayout<2> layout;
  if (!BuildLayout(ids.ndim, ids.shape, id_strides, &id_layout) ||
      !BuildLayout(ids.ndim, ids.shape, strides, &layout)) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "embedding: expected strides that merge into at most %d "
                "dimensions; make the ids contiguous first",
                kMaxRank);
  }
  const cudaStream_t stream = StreamOf(call);
  unsigned long long* first_bad = nullptr;
  if (cudaMallocAsync(reinterpret_cast<void**>(&first_bad), sizeof *first_bad,
                      stream) != cudaSuccess) {
    return Fail(call, TF_ERROR_OUT_OF_MEMORY,
                "embedding: could not allocate 8 bytes for the id check: %s",
                cudaGetErrorString(cudaGetLastError()));
  }
  cudaMemsetAsync(first_bad, 0xff, sizeof *first_bad, stream);
  const I* id_data = static_cast<const I*>(DataOf(ids));
  CheckIds<I><<<GridFor(count), kThreadsPerBlock, 0, stream>>>(
      id_data, id_layout, count, num, first_bad);
  Gather<Word, I><<<GridFor(count * dim), kThreadsPerBlock, 0, stream>>>(
      id_data, static_cast<const Word*>(DataOf(table)),
      static_cast<Word*>(DataOf(out)), layout, count, dim, table.strides[0],
      table.strides[1], out.strides[out.ndim - 1], first_bad);
  tf_status status = CheckLaunch(call, "embedding");
  unsigned long long bad = kNoBadId;
  const cudaError_t copied = cudaMemcpyAsync(&bad, first_bad, sizeof bad,
                                             cudaMemcpyDeviceToHost, stream);
  cudaFreeAsync(first_bad, stream);
  if (status != TF_OK) return status;
  if (copied != cudaSuccess || cudaStreamSynchronize(stream) != cudaSuccess) {
    return Fail(call, TF_ERROR_DEVICE, "embedding: the id check failed: %s",
                cudaGetErrorString(cudaGetLastError()));
  }
  if (bad == kNoBadId) return TF_OK;
  // The bad id itself: one element, read where the check found it.
  int64_t offset = 0, rest = static_cast<int64_t>(bad);
  for (int d = ids.ndim - 1; d >= 0; --d) {
    offset += (rest % ids.shape[d]) * ids.strides[d];
    rest /= ids.shape[d];
  }
  I id = 0;
  if (cudaMemcpy(&id, id_data + offset, sizeof id, cudaMemcpyDeviceToHost) !=
      cudaSuccess) {
    return Fail(call, TF_ERROR_DEVICE, "embedding: reading a bad id failed: %s",
                cudaGetErrorString(cudaGetLastError()));
  }
  return Fail(call, TF_ERROR_OUT_OF_RANGE,
              "embedding: id %" PRId64
              " at index %s is out of range for a "
              "table of %" PRId64 " rows (expected 0 <= id < %" PRId64 ")",
              static_cast<int64_t>(id),
              IndexText(ids, static_cast<int64_t>(bad)).c_str(), num, num);
}

template <typename Word>
tf_status RunWords(const tf_call* call) {
  const Dtype ids = DtypeOf(InputTensor(call, 0).dtype);
  if (ids == Dtype::kInt64) return Run<Word, int64_t>(call);
  if (ids == Dtype::kInt32) return Run<Word, int32_t>(call);
  return Fail(call, TF_ERROR_INVALID_ARGUMENT,
              "embedding: expected int32 or int64 ids, found %s",
              DtypeName(ids));
}

}  // namespace

tf_status Embedding(const tf_call* call) {
  if (call->num_inputs != 2 || call->num_outputs != 1) {
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "embedding: expected 2 inputs and 1 output, found %d and %d",
                call->num_inputs, call->num_outputs);
  }
  const Dtype dtype = DtypeOf(InputTensor(call, 1).dtype);
  if (DtypeOf(call->outputs[0].dtype) != dtype) {
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "embedding: expected out of the table's dtype %s, found %s",
                DtypeName(dtype), DtypeName(DtypeOf(call->outputs[0].dtype)));
  }
  DeviceGuard guard(call, call->outputs[0].device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  return DispatchByElementSize(
      dtype,
      [&](auto word) { return RunWords<typename decltype(word)::type>(call); },
      [&] {
        return Fail(call, TF_ERROR_UNSUPPORTED, "embedding: no kernel for %s",
                    DtypeName(dtype));
      });
}

}  // namespace torchferry::cuda
