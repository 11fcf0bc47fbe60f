// embedding and cat as ATen calls.
#include <ATen/ops/cat.h>
#include <ATen/ops/index_select.h>

#include <string>
#include <vector>

#include "kernel_error.h"
#include "ops.h"

namespace torchferry::aten {

void Embedding(BoundTensors& tensors, const tf_call&) {
  const at::Tensor& ids = tensors.Input(0);
  const at::Tensor& table = tensors.Input(1);
  at::Tensor& out = tensors.Output(0);
  const int64_t num = table.size(0);
  // ATen would raise on a bad id, but with a message that names neither
  // the id nor where it is; the check reads the ids (a sync on CUDA, the
  // price of the fallback).
  const at::Tensor flat = ids.reshape({-1});
  const at::Tensor bad = flat.lt(0).logical_or_(flat.ge(num));
  if (bad.any().item<bool>()) {
    int64_t position = bad.nonzero()[0][0].item<int64_t>();
    const int64_t id = flat[position].item<int64_t>();
    std::vector<int64_t> index(static_cast<size_t>(ids.dim()));
    for (int64_t d = ids.dim() - 1; d >= 0; --d) {
      index[static_cast<size_t>(d)] = position % ids.size(d);
      position /= ids.size(d);
    }
    std::string text = "[";
    for (size_t d = 0; d < index.size(); ++d) {
      text += (d == 0 ? "" : ", ") + std::to_string(index[d]);
    }
    text += "]";
    throw KernelError(TF_ERROR_OUT_OF_RANGE,
                      "embedding: id " + std::to_string(id) + " at index " +
                          text + " is out of range for a table of " +
                          std::to_string(num) + " rows (expected 0 <= id < " +
                          std::to_string(num) + ")");
  }
  if (out.is_contiguous()) {
    at::Tensor rows = out.view({-1, table.size(1)});
    at::index_select_out(rows, table, 0, flat);
  } else {
    out.copy_(at::index_select(table, 0, flat).view(out.sizes()));
  }
}

void Cat(BoundTensors& tensors, const tf_call& call) {
  const std::vector<at::Tensor> items = tensors.InputList(0);
  if (call.num_attrs < 1 || call.attrs[0].kind != TF_ARG_INT) {
    throw KernelError(TF_ERROR_INTERNAL,
                      "expected an int attribute; the op table and the "
                      "host's schema disagree");
  }
  at::cat_out(tensors.Output(0), items, call.attrs[0].value.i);
}

}  // namespace torchferry::aten
