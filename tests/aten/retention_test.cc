// The plugin never keeps caller memory past a call: after large tensors went
// through every strategy, each is referenced by its owner alone, no pool
// entry points anywhere, and once the owner drops them the memory goes back.
#include <ATen/ops/empty.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "aten_test_support.h"

namespace torchferry::aten_test {
namespace {

constexpr int64_t kElements = int64_t{8} << 20;  // 32 MiB of float32
constexpr int64_t kSlack = int64_t{16} << 20;

void RequireOnlyOwner(const at::Tensor& t, const char* name) {
  INFO(name);
  REQUIRE(t.use_count() == 1);
  REQUIRE(t.storage().use_count() == 1);
}

void RequirePoolsIdle(const std::string& op) {
  INFO(op);
  const aten::PoolCensus census =
      StateOf(CpuKernel(op, c10::kFloat)).pools.Census();
  REQUIRE(census.leased == 0);
  REQUIRE(census.holding_data == 0);
}

// About 200 MiB live at its peak, all of it gone when it returns.
void PushLargeTensorsThrough(const char* strategy) {
  UseStrategy(strategy);
  const at::Tensor x = RandomTensor({kElements}, c10::kFloat);
  const at::Tensor lo = RandomTensor({kElements}, c10::kFloat);
  const at::Tensor hi = RandomTensor({kElements}, c10::kFloat);
  const at::Tensor out = at::empty({kElements});
  const at::Tensor stacked = at::empty({2, kElements});
  for (const bool with_source : {true, false}) {
    CallBuilder abs(with_source);
    abs.Tensor(x).Output(out);
    REQUIRE(abs.Run(CpuKernel("abs", c10::kFloat)) == TF_OK);
    CallBuilder clamp(with_source);
    clamp.Tensor(x).Tensor(lo).Tensor(hi).Output(out);
    REQUIRE(clamp.Run(CpuKernel("clamp", c10::kFloat)) == TF_OK);
    // Handles of their own, as the caller's list would hold; gone with it.
    const std::vector<at::Tensor> items{x, out};
    CallBuilder stack(with_source);
    stack.List(items).IntAttr(0).Output(stacked);
    REQUIRE(stack.Run(CpuKernel("stack", c10::kFloat)) == TF_OK);
  }
  REQUIRE(stacked[0].equal(x));
  RequireOnlyOwner(x, "x");
  RequireOnlyOwner(lo, "lo");
  RequireOnlyOwner(hi, "hi");
  RequireOnlyOwner(out, "out");
  RequireOnlyOwner(stacked, "stacked");
  for (const char* op : {"abs", "clamp", "stack"}) RequirePoolsIdle(op);
}

}  // namespace

TEST_CASE("no strategy keeps caller memory after a call", "[retention]") {
  for (const char* strategy : kStrategies) {
    INFO("strategy " << strategy);
    // The first round builds the pool entries and ATen's lazy state; the
    // second must then leave memory where it found it. Blocks this large
    // are mmap'd by the allocator and unmapped when freed, so a tensor
    // kept alive by the plugin would show as 32 MiB or more.
    PushLargeTensorsThrough(strategy);
    const int64_t baseline = ResidentBytes();
    PushLargeTensorsThrough(strategy);
    const int64_t after = ResidentBytes();
    INFO("resident before " << baseline << " bytes, after " << after);
    REQUIRE(after - baseline < kSlack);
  }
}

}  // namespace torchferry::aten_test
