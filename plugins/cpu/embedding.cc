// embedding: out[i..., :] = table[ids[i...], :]. Every id is checked before
// any row is copied, so an id outside the table fails the call with out
// untouched and nothing read past the table. Rows move as raw words, so one
// kernel per element width serves every dtype.
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>

#include "call.h"
#include "dtype.h"
#include "kernel_table.h"
#include "parallel.h"
#include "stream_copy.h"
#include "words.h"

namespace torchferry::cpu {
namespace {

// Walks ids [first, last) in row-major order, calling visit(flat,
// id_offset, out_offset) with element offsets into ids and out; stops when
// visit returns false. Threads may each walk their own range.
template <typename Visit>
bool ForEachIdIn(const tf_tensor& ids, const tf_tensor& out, int64_t first,
                 int64_t last, const Visit& visit) {
  // An empty range returns before dividing by a size that may be 0.
  if (first >= last) return true;
  const int ndim = ids.ndim;
  int64_t index[kMaxRank];
  int64_t id_off = 0, out_off = 0;
  int64_t rest = first;
  for (int d = ndim - 1; d >= 0; --d) {
    index[d] = rest % ids.shape[d];
    rest /= ids.shape[d];
    id_off += index[d] * ids.strides[d];
    out_off += index[d] * out.strides[d];
  }
  for (int64_t flat = first; flat < last; ++flat) {
    if (!visit(flat, id_off, out_off)) return false;
    for (int d = ndim - 1; d >= 0; --d) {
      id_off += ids.strides[d];
      out_off += out.strides[d];
      if (++index[d] < ids.shape[d]) break;
      id_off -= ids.strides[d] * ids.shape[d];
      out_off -= out.strides[d] * ids.shape[d];
      index[d] = 0;
    }
  }
  return true;
}

template <typename Visit>
bool ForEachId(const tf_tensor& ids, const tf_tensor& out, const Visit& visit) {
  return ForEachIdIn(ids, out, 0, Numel(ids), visit);
}

// "[1, 2]" for the flat row-major position `flat` in ids.
void IndexText(const tf_tensor& ids, int64_t flat, char* text, size_t size) {
  int64_t index[kMaxRank];
  for (int d = ids.ndim - 1; d >= 0; --d) {
    index[d] = ids.shape[d] == 0 ? 0 : flat % ids.shape[d];
    flat = ids.shape[d] == 0 ? 0 : flat / ids.shape[d];
  }
  size_t used = static_cast<size_t>(std::snprintf(text, size, "["));
  for (int d = 0; d < ids.ndim && used < size; ++d) {
    used += static_cast<size_t>(
        std::snprintf(text + used, size - used,
                      d == 0 ? "%" PRId64 : ", %" PRId64, index[d]));
  }
  if (used < size) std::snprintf(text + used, size - used, "]");
}

// Each id is read from ids exactly once, into `checked`, and the rows are
// copied from those values: with the GIL released another thread may change
// ids meanwhile (abi/ABI.md), and an id read twice could pass the check and
// then index outside the table.
template <typename W, typename I>
tf_status Gather(const tf_call* call, const tf_tensor& ids,
                 const tf_tensor& table, const tf_tensor& out) {
  const int64_t num = table.shape[0], dim = table.shape[1];
  const int64_t n = Numel(ids);
  const I* id_data = DataOf<const I>(ids);
  constexpr int64_t kOnStack = 256;
  int64_t on_stack[kOnStack];
  std::unique_ptr<int64_t[]> on_heap;
  int64_t* checked = on_stack;
  if (n > kOnStack) {
    on_heap.reset(new (std::nothrow) int64_t[static_cast<size_t>(n)]);
    if (!on_heap) {
      return Fail(call, TF_ERROR_OUT_OF_MEMORY,
                  "embedding: could not allocate %" PRId64
                  " bytes to hold the ids",
                  static_cast<int64_t>(sizeof(int64_t)) * n);
    }
    checked = on_heap.get();
  }
  int64_t bad_flat = -1, bad_id = 0;
  ForEachId(ids, out, [&](int64_t flat, int64_t id_off, int64_t) {
    const int64_t id = static_cast<int64_t>(id_data[id_off]);
    checked[flat] = id;
    if (id >= 0 && id < num) return true;
    bad_flat = flat;
    bad_id = id;
    return false;
  });
  if (bad_flat >= 0) {
    char index[256];
    IndexText(ids, bad_flat, index, sizeof index);
    return Fail(call, TF_ERROR_OUT_OF_RANGE,
                "embedding: id %" PRId64
                " at index %s is out of range for "
                "a table of %" PRId64 " rows (expected 0 <= id < %" PRId64 ")",
                bad_id, index, num, num);
  }
  const W* rows = DataOf<const W>(table);
  W* dst = DataOf<W>(out);
  const int64_t out_step = out.strides[out.ndim - 1];
  const int64_t table_step = table.strides[1];
  const bool stream = StreamsOutput(n * dim, sizeof(W));
  auto copy = [&](int64_t flat, int64_t, int64_t out_off) {
    const W* src = rows + checked[flat] * table.strides[0];
    W* row = dst + out_off;
    if (out_step == 1 && table_step == 1) {
      CopyBytes(row, src, static_cast<size_t>(dim) * sizeof(W), stream);
    } else {
      for (int64_t j = 0; j < dim; ++j) row[j * out_step] = src[j * table_step];
    }
    return true;
  };
  // The ids were checked above on this thread alone (the first bad one is
  // named whatever the thread count); the copies write disjoint rows of out,
  // so they split over the host's threads by id.
  ParallelFor(n, dim, [&](int64_t first, int64_t last) {
    ForEachIdIn(ids, out, first, last, copy);
    if (stream) StreamFence();
  });
  return TF_OK;
}

struct Embedding {
  static constexpr const char* kName = "embedding";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 2, 0, 1); s != TF_OK) return s;
    const tf_tensor& ids = TensorArg(call->inputs, 0);
    const tf_tensor& table = TensorArg(call->inputs, 1);
    const tf_tensor& out = call->outputs[0];
    if (table.ndim != 2 || out.ndim != ids.ndim + 1 || ids.ndim >= kMaxRank) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "embedding: expected a 2-D table and out of ids' rank + 1 "
                  "(at most %d), found a table of %d dims, ids of %d and out "
                  "of %d",
                  kMaxRank, table.ndim, ids.ndim, out.ndim);
    }
    if (!SameDtype(table.dtype, DtypeOf<T>()) ||
        !SameDtype(out.dtype, DtypeOf<T>())) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "embedding: the kernel for a table of %d-bit elements got "
                  "a table of %d bits and out of %d; it is keyed by the "
                  "table's dtype (input 1)",
                  static_cast<int>(sizeof(T) * 8), table.dtype.bits,
                  out.dtype.bits);
    }
    using W = WordOf<T>;
    if (SameDtype(ids.dtype, DtypeOf<int64_t>())) {
      return Gather<W, int64_t>(call, ids, table, out);
    }
    if (SameDtype(ids.dtype, DtypeOf<int32_t>())) {
      return Gather<W, int32_t>(call, ids, table, out);
    }
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "embedding: expected int32 or int64 ids, found dtype code %d "
                "with %d bits",
                ids.dtype.code, ids.dtype.bits);
  }
};

constexpr auto kTable = KernelsFor<Embedding>(AllTypes{});

}  // namespace

KernelList EmbeddingKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
