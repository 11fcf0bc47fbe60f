// What the plugin registers: every v1 op on the CPU, on CUDA exactly when
// the torch it was built against has CUDA, as a fallback plugin.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "aten_test_support.h"
#include "loader/op_table.h"

namespace torchferry::aten_test {

TEST_CASE("the plugin is a fallback that covers every v1 op",
          "[registration]") {
  const Plugin& plugin = AtenPlugin();
  REQUIRE(plugin.name == "aten");
  REQUIRE(plugin.kind == TF_PLUGIN_FALLBACK);
  REQUIRE_THAT(plugin.version, Catch::Contains(BuiltTorchVersion()));
  std::set<std::string> cpu_ops;
  std::set<std::string> cuda_ops;
  for (const KernelInfo& kernel : plugin.kernels) {
    (kernel.device_type == TF_DEVICE_CUDA ? cuda_ops : cpu_ops)
        .insert(kernel.op);
  }
  std::set<std::string> v1_ops;
  for (size_t i = 0; i < kNumOps; ++i) {
    v1_ops.insert(std::string(OpName(static_cast<OpId>(i))));
  }
  REQUIRE(cpu_ops == v1_ops);
#if TORCHFERRY_TEST_TORCH_HAS_CUDA
  REQUIRE(cuda_ops == v1_ops);
#else
  REQUIRE(cuda_ops.empty());
#endif
}

TEST_CASE("the int dtypes the CPU plugin lacks are covered", "[registration]") {
  for (const char* op : {"abs", "neg", "add", "mul", "clamp"}) {
    for (const c10::ScalarType dtype : {c10::kChar, c10::kShort}) {
      CpuKernel(op, dtype);
    }
  }
  for (const char* op : {"add", "mul", "clamp"}) CpuKernel(op, c10::kByte);
}

}  // namespace torchferry::aten_test
