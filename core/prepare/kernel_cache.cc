#include "core/prepare/kernel_cache.h"

#include <string_view>

namespace torchferry {

KernelCache& KernelCache::Get() {
  static KernelCache* cache = new KernelCache();
  return *cache;
}

const KernelEntry* KernelCache::Find(OpId op, const tf_device& device,
                                     DtypeIndex dtype) {
  const int device_slot = device.device_type == TF_DEVICE_CUDA ? 1 : 0;
  if (registry_ == nullptr) return nullptr;  // still loading: cache nothing
  const size_t index =
      (static_cast<size_t>(op) * kDeviceSlots + device_slot) * kNumDtypes +
      static_cast<size_t>(dtype);
  if (index >= cache_.size()) return nullptr;  // an op the registry lacks
  Slot& slot = cache_[index];
  if (!slot.resolved) {
    // The registry numbers ops as OpId does: built-in ones first, then the
    // declared ones in the order plugins declared them.
    const size_t number = static_cast<size_t>(op);
    const std::string_view name =
        number < kNumOps
            ? OpName(op)
            : std::string_view(
                  registry_->declared_ops()[number - kNumOps].name);
    // Filled under the GIL, which every op call holds while dispatching.
    slot.entry = registry_->Find(name, device.device_type, Dtype(dtype).dtype);
    slot.resolved = true;
  }
  return slot.entry;
}

}  // namespace torchferry
