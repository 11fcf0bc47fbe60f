// No exception leaves a kernel: what ATen or the plugin throws comes back as
// a status and a message through the host's error sink.
#include <ATen/ops/empty.h>

#include <catch2/catch.hpp>

#include "aten_test_support.h"

namespace torchferry::aten_test {

TEST_CASE("an ATen error becomes a status and a message", "[errors]") {
  // The host never sends these shapes (it checks matmul's inner sizes); the
  // kernel must still answer rather than throw.
  const at::Tensor a = RandomTensor({2, 3, 4}, c10::kFloat);
  const at::Tensor b = RandomTensor({2, 5, 6}, c10::kFloat);
  const at::Tensor out = at::empty({2, 3, 6});
  for (const char* strategy : kStrategies) {
    UseStrategy(strategy);
    CallBuilder call(true);
    call.Tensor(a).Tensor(b).Output(out);
    REQUIRE(call.Run(CpuKernel("matmul", c10::kFloat)) ==
            TF_ERROR_INVALID_ARGUMENT);
    REQUIRE_THAT(call.message(),
                 Catch::StartsWith("matmul on cpu: ATen rejected the "
                                   "arguments: "));
  }
}

TEST_CASE("a view ATen cannot represent is unsupported, not a crash",
          "[errors]") {
  const at::Tensor x = RandomTensor({4}, c10::kFloat);
  const at::Tensor out = at::empty({4});
  std::unique_ptr<OwnedView> odd = MakeView(x, nullptr);
  odd->view.dtype.lanes = 2;
  tf_arg input{};
  input.kind = TF_ARG_TENSOR;
  input.value.tensor = &odd->view;
  std::unique_ptr<OwnedView> out_view = MakeView(out, nullptr);
  const KernelEntry& kernel = CpuKernel("abs", c10::kFloat);
  tf_call call{};
  call.struct_size = sizeof(tf_call);
  call.inputs = &input;
  call.num_inputs = 1;
  call.outputs = &out_view->view;
  call.num_outputs = 1;
  call.kernel_data = kernel.kernel_data;
  call.host = HostApi();
  ErrorSink sink;
  call.error_sink = &sink;
  REQUIRE(kernel.fn(&call) == TF_ERROR_UNSUPPORTED);
  REQUIRE(sink.status == TF_ERROR_UNSUPPORTED);
  REQUIRE_THAT(sink.message, Catch::Contains("2 lanes") &&
                                 Catch::Contains("use a plugin that serves"));
}

}  // namespace torchferry::aten_test
