// The built cpu plugin, loaded once through the loader, and a builder for
// the tf_call structs the host would pass its kernels.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "abi/torchferry.h"
#include "loader/loader.h"
#include "test_tensor.h"

namespace torchferry::cpu_test {

// The plugin at $TF_TEST_CPU_PLUGIN (meson test sets it), loaded on first
// use; throws with the loader's reason when it does not load.
const Registry& CpuRegistry();
const Plugin& CpuPlugin();

// The cpu plugin's kernel for (op, CPU, dtype), or nullptr.
const KernelEntry* FindKernel(const std::string& op, tf_dtype dtype);

struct CallResult {
  tf_status status;
  std::string message;  // what the kernel passed to set_error, if anything
};

// Collects inputs, attributes and outputs in the op's order (abi/ABI.md),
// then calls the kernel as the host does: its own error sink, the loader's
// host table. Tensors are captured as views when added; they must outlive
// the call.
class CallBuilder {
 public:
  CallBuilder& Input(const TestTensor& t);
  CallBuilder& InputNone();
  CallBuilder& InputInt(int64_t value);
  CallBuilder& InputFloat(double value);
  CallBuilder& InputList(const std::vector<const TestTensor*>& tensors);
  CallBuilder& AttrInt(int64_t value);
  CallBuilder& AttrFloat(double value);
  CallBuilder& Output(const TestTensor& t);

  // Calls the cpu plugin's kernel for (op, dtype); throws when it has none.
  CallResult Run(const std::string& op, tf_dtype dtype) const;

 private:
  std::deque<tf_tensor> views_;  // deque: addresses stay put as it grows
  std::deque<std::vector<tf_tensor>> lists_;
  std::vector<tf_arg> inputs_;
  std::vector<tf_arg> attrs_;
  std::vector<tf_tensor> outputs_;
};

}  // namespace torchferry::cpu_test
