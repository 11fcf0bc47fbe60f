// The kernel of each (op, device, dtype), looked up once in the loader's
// registry and kept for the process. Preparation asks it where infer must run
// before out= is checked (a declared op), and hands what it found on in the
// frame; dispatch asks it for every other call.
#pragma once

#include <vector>

#include "abi/torchferry.h"
#include "loader/dtype_table.h"
#include "loader/loader.h"
#include "loader/op_table.h"

namespace torchferry {

class KernelCache {
 public:
  static KernelCache& Get();
  // Once every plugin has loaded: until then no lookup is made or cached.
  void Attach(const Registry* registry) {
    cache_.assign(registry->num_ops() * kDeviceSlots * kNumDtypes, Slot{});
    registry_ = registry;
  }
  bool attached() const { return registry_ != nullptr; }

  // nullptr when no plugin carries the key.
  const KernelEntry* Find(OpId op, const tf_device& device, DtypeIndex dtype);

 private:
  struct Slot {
    const KernelEntry* entry = nullptr;
    bool resolved = false;
  };
  static constexpr int kDeviceSlots = 2;  // cpu, cuda
  std::vector<Slot> cache_;  // [op][device slot][dtype], sized at Attach
  const Registry* registry_ = nullptr;
};

}  // namespace torchferry
