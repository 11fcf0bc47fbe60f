#include "tensor_binding.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/flip.h>
#include <c10/core/DispatchKeySet.h>

#include <cstdint>
#include <string>

#include "blob_wrapper.h"
#include "dtypes.h"
#include "kernel_error.h"

namespace torchferry::aten {
namespace {

// Keys whose kernels would re-enter Python (which may not hold the GIL here)
// or reinterpret the data (functionalization): such a tensor is never used
// as is, even when its memory is the view's.
const c10::DispatchKeySet kKeysThatForbidReuse =
    c10::python_ks | c10::DispatchKeySet(c10::DispatchKey::Functionalize);

// The caller's at::Tensor stands for the view only if ATen would read the
// very same elements through it. The host may hand over a view that is not
// the source tensor itself: a broadcast operand (stride 0), the 3-D view of a
// 2-D matmul operand, a reshaped or offset view of it.
bool SourceDescribes(const at::Tensor& source, const void* data,
                     c10::IntArrayRef sizes, c10::IntArrayRef strides,
                     c10::ScalarType dtype, c10::Device device) {
  if (!source.defined() || source.layout() != c10::kStrided ||
      !source.has_storage() || source.is_conj() || source.is_neg()) {
    return false;
  }
  if (!(source.key_set() & kKeysThatForbidReuse).empty()) return false;
  if (source.scalar_type() != dtype || source.device() != device) return false;
  if (!source.sizes().equals(sizes) || !source.strides().equals(strides)) {
    return false;
  }
  // ATen reports no data pointer for a tensor without elements, and then
  // there is nothing to read anyway.
  return source.numel() == 0 || source.const_data_ptr() == data;
}

// ATen has no negative strides, but a view may have them (numpy's x[::-1]
// through DLPack). Such a view is the flip, along those dims, of the view
// that starts at its lowest address with the strides made positive: that
// start is returned, `strides` is made positive and `flip_dims` lists the
// dims to flip (none when the negative strides are on dims of size 0 or 1,
// where no element moves).
void* TurnAround(void* data, int64_t item_size, c10::IntArrayRef sizes,
                 c10::SmallVectorImpl<int64_t>& strides,
                 c10::SmallVectorImpl<int64_t>& flip_dims) {
  bool empty = false;
  for (int64_t size : sizes) empty = empty || size == 0;
  int64_t offset = 0;  // bytes from data to the lowest element
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (strides[d] >= 0) continue;
    int64_t step;
    if (strides[d] == INT64_MIN ||
        __builtin_mul_overflow(strides[d], item_size, &step)) {
      throw KernelError(TF_ERROR_UNSUPPORTED,
                        "stride " + std::to_string(strides[d]) + " on dim " +
                            std::to_string(d) + " is too large for ATen");
    }
    strides[d] = -strides[d];
    if (empty || sizes[d] <= 1) continue;
    int64_t span;
    if (__builtin_mul_overflow(sizes[d] - 1, step, &span) ||
        __builtin_add_overflow(offset, span, &offset)) {
      throw KernelError(TF_ERROR_UNSUPPORTED,
                        "the memory of a view with negative strides spans "
                        "more than int64 bytes");
    }
    flip_dims.push_back(static_cast<int64_t>(d));
  }
  return static_cast<char*>(data) + offset;
}

std::string Describe(const tf_tensor& view) {
  return "dtype (code " + std::to_string(view.dtype.code) + ", " +
         std::to_string(view.dtype.bits) + " bits, " +
         std::to_string(view.dtype.lanes) + " lanes) on device type " +
         std::to_string(view.device.device_type);
}

}  // namespace

BoundTensors::BoundTensors(const tf_call& call, KernelPools& pools,
                           Strategy strategy)
    : call_(call) {
  for (int i = 0; i < call.num_inputs; ++i) {
    const tf_arg& arg = call.inputs[i];
    first_bound_of_input_.push_back(static_cast<int>(bound_.size()));
    if (arg.kind == TF_ARG_TENSOR) {
      Bind(*arg.value.tensor, strategy, pools, false);
    } else if (arg.kind == TF_ARG_TENSOR_LIST) {
      for (int64_t j = 0; j < arg.value.list.count; ++j) {
        Bind(arg.value.list.items[j], strategy, pools, false);
      }
    }
  }
  first_bound_of_output_ = static_cast<int>(bound_.size());
  for (int i = 0; i < call.num_outputs; ++i) {
    Bind(call.outputs[i], strategy, pools, true);
  }
}

void BoundTensors::Finish() {
  for (Bound& bound : bound_) {
    if (bound.mirror.defined()) {
      bound.mirror.copy_(bound.fresh.flip(bound.flip_dims));
    }
  }
}

void BoundTensors::Bind(const tf_tensor& view, Strategy strategy,
                        KernelPools& pools, bool is_output) {
  const std::optional<c10::ScalarType> dtype = ScalarTypeOf(view.dtype);
  const std::optional<c10::Device> device = DeviceOf(view.device);
  if (!dtype || !device) {
    throw KernelError(TF_ERROR_UNSUPPORTED,
                      "expected a tensor of an ABI v1 dtype on the CPU or a "
                      "CUDA device, found " +
                          Describe(view) + "; use a plugin that serves it");
  }
  void* data = static_cast<char*>(view.data) + view.byte_offset;
  const c10::IntArrayRef sizes(view.shape, static_cast<size_t>(view.ndim));
  const c10::IntArrayRef strides(view.strides, static_cast<size_t>(view.ndim));
  // The slot is the tensor's position in the call, which a kernel's calls
  // share: a repeated call finds the wrapper it built before in each slot.
  const int slot = static_cast<int>(bound_.size());
  Bound& bound = bound_.emplace_back();

  bool negative = false;
  for (int64_t stride : strides) negative = negative || stride < 0;
  if (negative) {
    // Rare (only DLPack producers make such views), so neither the source
    // nor the pool: a fresh wrapper of the turned-around view, and for an
    // input its flip (a copy), for an output a temporary that Finish()
    // writes back through the flip.
    c10::SmallVector<int64_t, 6> positive(strides.begin(), strides.end());
    c10::SmallVector<int64_t, 4> flip_dims;
    void* start =
        TurnAround(data, static_cast<int64_t>(c10::elementSize(*dtype)), sizes,
                   positive, flip_dims);
    at::Tensor mirror = WrapBlob(start, sizes, positive, *dtype, *device);
    if (flip_dims.empty()) {
      bound.fresh = std::move(mirror);
    } else if (is_output) {
      bound.fresh = at::empty(sizes, mirror.options());
      bound.mirror = std::move(mirror);
      bound.flip_dims = std::move(flip_dims);
    } else {
      bound.fresh = mirror.flip(flip_dims);
    }
    return;
  }

  if (strategy == Strategy::kSource && view.source_kind == TF_SOURCE_ATEN &&
      view.source != nullptr) {
    const auto& source = *static_cast<const at::Tensor*>(view.source);
    if (SourceDescribes(source, data, sizes, strides, *dtype, *device)) {
      bound.borrowed = &source;
      return;
    }
  }
  if (strategy != Strategy::kFromBlob) {
    if (WrapperPool* pool = pools.ForSlot(slot)) {
      bound.lease = pool->Lease(data, sizes, strides, *dtype, *device);
      if (bound.lease) return;
    }
  }
  bound.fresh = WrapBlob(data, sizes, strides, *dtype, *device);
}

at::Tensor& BoundTensors::Input(int index) {
  if (index >= call_.num_inputs || call_.inputs[index].kind != TF_ARG_TENSOR) {
    throw KernelError(TF_ERROR_INTERNAL,
                      "expected a tensor at input " + std::to_string(index) +
                          "; the op table and the host's schema disagree");
  }
  return bound_[first_bound_of_input_[index]].tensor();
}

std::vector<at::Tensor> BoundTensors::InputList(int index) {
  if (index >= call_.num_inputs ||
      call_.inputs[index].kind != TF_ARG_TENSOR_LIST) {
    throw KernelError(TF_ERROR_INTERNAL,
                      "expected a tensor list at input " +
                          std::to_string(index) +
                          "; the op table and the host's schema disagree");
  }
  const int first = first_bound_of_input_[index];
  const auto count = static_cast<int>(call_.inputs[index].value.list.count);
  std::vector<at::Tensor> tensors;
  tensors.reserve(count);
  for (int i = first; i < first + count; ++i) {
    tensors.push_back(bound_[i].tensor());
  }
  return tensors;
}

at::Tensor& BoundTensors::Output(int index) {
  if (index >= call_.num_outputs) {
    throw KernelError(TF_ERROR_INTERNAL,
                      "expected an output " + std::to_string(index) +
                          "; the op table and the host's schema disagree");
  }
  return bound_[first_bound_of_output_ + index].tensor();
}

}  // namespace torchferry::aten
