// The at::Tensors of one call, made from its tensor views by the strategy in
// force and held for exactly the call: the pool leases and fresh wrappers end
// when the BoundTensors does, before the kernel returns.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <vector>

#include "abi/torchferry.h"
#include "strategy.h"
#include "wrapper_pool.h"

namespace torchferry::aten {

class BoundTensors {
 public:
  // Binds every tensor of the call up front, inputs (list items one by one)
  // then outputs, each in its own pool slot. Throws KernelError for a view
  // ATen cannot represent.
  BoundTensors(const tf_call& call, KernelPools& pools, Strategy strategy);
  BoundTensors(const BoundTensors&) = delete;
  BoundTensors& operator=(const BoundTensors&) = delete;

  // Writes back the outputs that ATen could not write in place (a view with
  // a negative stride is computed into a temporary); call once the kernel's
  // body has succeeded.
  void Finish();

  // inputs[index] must be TF_ARG_TENSOR. Mutable because ATen's out= and
  // in-place functions take at::Tensor&; the handle itself is never reseated.
  at::Tensor& Input(int index);
  // inputs[index] must be TF_ARG_TENSOR_LIST. The copies share the bound
  // wrappers; drop them before the BoundTensors ends.
  std::vector<at::Tensor> InputList(int index);
  at::Tensor& Output(int index);

 private:
  struct Bound {
    const at::Tensor* borrowed = nullptr;  // the caller's tensor (source)
    PoolLease lease;
    at::Tensor fresh;
    // An output with negative strides: `fresh` is a temporary that Finish()
    // copies into `mirror` (the view with its strides made positive) flipped
    // along `flip_dims`.
    at::Tensor mirror;
    c10::SmallVector<int64_t, 4> flip_dims;

    at::Tensor& tensor() {
      if (borrowed != nullptr) return const_cast<at::Tensor&>(*borrowed);
      if (lease) return lease.tensor();
      return fresh;
    }
  };

  void Bind(const tf_tensor& view, Strategy strategy, KernelPools& pools,
            bool is_output);

  const tf_call& call_;
  c10::SmallVector<Bound, 4> bound_;
  // Index into bound_ of each input's first tensor, and of outputs[0].
  c10::SmallVector<int, 4> first_bound_of_input_;
  int first_bound_of_output_ = 0;
};

}  // namespace torchferry::aten
