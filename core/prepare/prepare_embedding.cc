// embedding's preparation: int32/int64 ids of any shape pick rows of a 2-D
// table. The ids' values are the kernel's to check: reading them here would
// cost a device sync on CUDA.
#include <fmt/format.h>

#include <algorithm>

#include "core/bridge/py_errors.h"
#include "core/prepare/checks.h"
#include "core/prepare/op_description.h"
#include "core/prepare/prepare_parts.h"

namespace torchferry {

bool PrepareEmbedding(const OpFunction& fn, const ParsedArgs& args,
                      CallFrame& f) {
  const char* op = fn.name.c_str();
  TensorRef* ids = f.Take(args.values[0], "input", false);
  if (ids == nullptr) return false;
  if (ids->dtype != kInt32 && ids->dtype != kInt64) {
    return RaiseError(PyExc_TypeError,
                      fmt::format("{}(): expected input (the ids) to have "
                                  "dtype int32 or int64, got {}",
                                  op, Dtype(ids->dtype).name));
  }
  TensorRef* table = f.Take(args.values[1], "weight", false);
  if (table == nullptr || !CheckSameDevice(op, "weight", *table, *ids)) {
    return false;
  }
  if (table->view.ndim != 2) {
    return RaiseError(
        PyExc_ValueError,
        fmt::format("{}(): expected weight to be 2-D [num_embeddings, "
                    "embedding_dim], got shape {}",
                    op, ShapeText(table->view.ndim, table->view.shape)));
  }
  const int ndim = ids->view.ndim + 1;
  if (ndim > kMaxRank) {
    return RaiseError(PyExc_ValueError,
                      fmt::format("{}(): expected input of at most {} dims, "
                                  "got {}",
                                  op, kMaxRank - 1, ids->view.ndim));
  }
  int64_t shape[kMaxRank];
  std::copy(ids->view.shape, ids->view.shape + ids->view.ndim, shape);
  shape[ndim - 1] = table->view.shape[1];
  if (!TakeOut(op, args, f, *table, table->dtype, ndim, shape) ||
      !CheckNoOverlap(op, "input", *ids, *f.out_ref(), false) ||
      !CheckNoOverlap(op, "weight", *table, *f.out_ref(), false)) {
    return false;
  }
  // A kernel per table dtype; ids are int32 or int64.
  f.SetInputs({TensorArg(ids), TensorArg(table)}, table,
              f.out_ref()->numel + ids->numel);
  return true;
}

}  // namespace torchferry
