// The CUDA kernels, on a GPU when there is one: built only against a torch
// with CUDA, and passing with a warning where no device is present. The calls
// name a stream from torch's pool, which must not stay torch's current
// stream after the call.
#include <ATen/Context.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <catch2/catch.hpp>

#include "aten_test_support.h"

namespace torchferry::aten_test {
namespace {

const KernelEntry& CudaKernel(const std::string& op, c10::ScalarType dtype) {
  return Kernel(op, TF_DEVICE_CUDA, dtype);
}

at::Tensor OnDevice(const at::Tensor& t) { return t.to(c10::Device("cuda")); }

}  // namespace

TEST_CASE("CUDA kernels compute on the call's stream", "[cuda]") {
  if (!at::hasCUDA()) {
    WARN("no CUDA device here: the CUDA kernels are registered, not run");
    return;
  }
  const c10::Device device("cuda:0");
  const c10::impl::DeviceGuardImplInterface* cuda =
      c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  const c10::Stream stream = cuda->getStreamFromGlobalPool(device);
  for (const char* strategy : kStrategies) {
    UseStrategy(strategy);
    for (const c10::ScalarType dtype :
         {c10::kFloat, c10::kHalf, c10::kBFloat16}) {
      INFO("strategy " << strategy << ", " << c10::toString(dtype));
      const at::Tensor x = OnDevice(RandomTensor({4, 6}, dtype));
      const at::Tensor y = OnDevice(RandomTensor({1, 6}, dtype));
      const at::Tensor y_broadcast = y.expand({4, 6});
      const at::Tensor sum = at::empty_like(x);
      const at::Tensor softmax = at::empty_like(x.t()).t();  // strided out
      const at::Tensor a = OnDevice(RandomTensor({2, 3, 4}, dtype));
      const at::Tensor b = OnDevice(RandomTensor({4, 5}, dtype));
      const at::Tensor b_batched = b.unsqueeze(0).expand({2, 4, 5});
      const at::Tensor product = at::empty({2, 3, 5}, x.options());
      const c10::Stream current_before = cuda->getStream(device);

      CallBuilder add(true);
      add.Tensor(x).TensorViewOf(y_broadcast, y).FloatAttr(0.5).Output(sum);
      REQUIRE(add.Run(CudaKernel("add", dtype), stream.native_handle()) ==
              TF_OK);
      CallBuilder softmax_call(true);
      softmax_call.Tensor(x).IntAttr(1).Output(softmax);
      REQUIRE(softmax_call.Run(CudaKernel("softmax", dtype),
                               stream.native_handle()) == TF_OK);
      CallBuilder matmul(true);
      matmul.Tensor(a).TensorViewOf(b_batched, b).Output(product);
      INFO(matmul.message());
      REQUIRE(matmul.Run(CudaKernel("matmul", dtype), stream.native_handle()) ==
              TF_OK);

      REQUIRE(cuda->getStream(device) == current_before);
      stream.synchronize();
      const at::Tensor xd = x.cpu().to(c10::kDouble);
      REQUIRE(
          Matches(sum.cpu(), (xd + y.cpu().to(c10::kDouble) * 0.5).to(dtype)));
      const at::Tensor e = (xd - xd.amax({1}, true)).exp();
      REQUIRE(Matches(softmax.cpu(), (e / e.sum({1}, true)).to(dtype)));
      REQUIRE(Matches(
          product.cpu(),
          a.cpu().to(c10::kDouble).matmul(b.cpu().to(c10::kDouble)).to(dtype)));
    }
  }
}

}  // namespace torchferry::aten_test
