// How long one kernel call takes under each wrapper strategy, on a tensor
// small enough that wrapping, not arithmetic, decides: the measurement behind
// the plugin's default strategy. Hidden from the test run; `meson test
// --benchmark --suite aten` runs it. It prints the best of several timed
// blocks, in nanoseconds per call.
#include <ATen/ops/abs.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "aten_test_support.h"

namespace torchferry::aten_test {
namespace {

constexpr int kCallsPerBlock = 20000;
constexpr int kBlocks = 7;

double BestNanosPerCall(const std::function<void()>& call) {
  for (int i = 0; i < kCallsPerBlock / 10; ++i) call();  // warm up
  double best = 1e30;
  for (int block = 0; block < kBlocks; ++block) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kCallsPerBlock; ++i) call();
    const std::chrono::duration<double, std::nano> elapsed =
        std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count() / kCallsPerBlock);
  }
  return best;
}

// The call struct is built once, as the host's would be reused; only the
// kernel runs in the loop.
double TimeKernel(const std::string& op, const at::Tensor& x,
                  const at::Tensor& out, bool with_source) {
  CallBuilder call(with_source);
  call.Tensor(x);
  if (out.defined()) call.Output(out);
  const KernelEntry& kernel = CpuKernel(op, x.scalar_type());
  if (call.Run(kernel) != TF_OK) {
    std::fprintf(stderr, "%s failed: %s\n", op.c_str(), call.message().c_str());
    std::exit(1);
  }
  return BestNanosPerCall([&] { call.Run(kernel); });
}

}  // namespace

TEST_CASE("time per call of each strategy", "[.benchmark]") {
  const at::Tensor x = RandomTensor({8, 64}, c10::kFloat);
  const at::Tensor out = at::empty({8, 64});
  std::printf("abs float32 [8, 64], ns per call (best of %d x %d)\n", kBlocks,
              kCallsPerBlock);
  std::printf("  %-28s %8.0f\n", "ATen at::abs_out directly",
              BestNanosPerCall([&] {
                at::Tensor o = out;
                at::abs_out(o, x);
              }));
  for (const char* strategy : kStrategies) {
    UseStrategy(strategy);
    for (const bool with_source : {true, false}) {
      const std::string label =
          std::string(strategy) +
          (with_source ? " (source given)" : " (no source)");
      std::printf("  %-28s %8.0f   noop %6.0f\n", label.c_str(),
                  TimeKernel("abs", x, out, with_source),
                  TimeKernel("noop", x, at::Tensor(), with_source));
    }
  }
}

}  // namespace torchferry::aten_test
