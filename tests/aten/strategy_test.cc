// What each wrapper strategy promises beyond correct results: the pool
// follows every call's data, the source strategy uses the caller's tensor
// only when it describes the view, leases nest and run concurrently, and the
// strategy is chosen by option or environment.
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "aten_test_support.h"
#include "plugins/aten/wrapper_pool.h"

namespace torchferry::aten_test {
namespace {

tf_status Unary(const std::string& op, const at::Tensor& x,
                const at::Tensor& out, bool with_source) {
  CallBuilder call(with_source);
  call.Tensor(x).Output(out);
  return call.Run(CpuKernel(op, x.scalar_type()));
}

tf_status Abs(const at::Tensor& x, const at::Tensor& out, bool with_source) {
  return Unary("abs", x, out, with_source);
}

at::Tensor Floats(std::vector<int64_t> sizes) {
  return RandomTensor(sizes, c10::kFloat);
}

// The tests that count pool entries each use a kernel and a shape of their
// own: [ops] leaves four entries per slot (one per layout), well below the
// capacity, so a wrapper the call needs is always built and counted.
at::Tensor Doubles(std::vector<int64_t> sizes) {
  return RandomTensor(sizes, c10::kDouble);
}

int BuiltIn(const std::string& op) {
  return StateOf(CpuKernel(op, c10::kDouble)).pools.Census().built;
}

}  // namespace

TEST_CASE("results follow the data when calls alternate between buffers",
          "[strategies]") {
  // Same shapes, different buffers: a pooled wrapper rebound to the wrong
  // pointer, or a result cached per wrapper, would show here.
  for (const char* strategy : kStrategies) {
    UseStrategy(strategy);
    for (const bool with_source : {true, false}) {
      INFO("strategy " << strategy << (with_source ? ", with" : ", without")
                       << " source");
      const at::Tensor a = Floats({4, 6});
      const at::Tensor b = Floats({4, 6});
      const at::Tensor out_a = at::empty({4, 6});
      const at::Tensor out_b = at::empty({4, 6});
      for (int round = 0; round < 4; ++round) {
        INFO("round " << round);
        REQUIRE(Abs(a, out_a, with_source) == TF_OK);
        REQUIRE(Abs(b, out_b, with_source) == TF_OK);
        // And into the other output: the output slot alternates too.
        REQUIRE(Abs(a, out_b, with_source) == TF_OK);
        REQUIRE(out_a.equal(a.abs()));
        REQUIRE(out_b.equal(a.abs()));
        REQUIRE(Abs(b, out_b, with_source) == TF_OK);
        REQUIRE(out_b.equal(b.abs()));
        // New values in the same buffers.
        a.mul_(-1.5);
        b.add_(1.0);
      }
    }
  }
}

TEST_CASE("the source strategy checks that the source describes the view",
          "[strategies]") {
  UseStrategy("source");

  SECTION("a source with other data is not used") {
    const at::Tensor a = Floats({5, 5});
    const at::Tensor b = Floats({5, 5});
    const at::Tensor out = at::empty({5, 5});
    CallBuilder call(true);
    call.TensorViewOf(b, a).Output(out);
    REQUIRE(call.Run(CpuKernel("abs", c10::kFloat)) == TF_OK);
    REQUIRE(out.equal(b.abs()));
  }

  SECTION("a source with the same data but other strides is not used") {
    const at::Tensor x = Floats({5, 5});
    const at::Tensor x_t = x.t();
    const at::Tensor out = at::empty({5, 5});
    CallBuilder call(true);
    call.TensorViewOf(x_t, x).Output(out);
    REQUIRE(call.Run(CpuKernel("abs", c10::kFloat)) == TF_OK);
    REQUIRE(out.equal(x_t.abs()));
  }

  SECTION("a source with the same data but another shape is not used") {
    const at::Tensor x = Floats({4, 6});
    const at::Tensor x_flat = x.view({24});
    const at::Tensor out = at::empty({24});
    CallBuilder call(true);
    call.TensorViewOf(x_flat, x).Output(out);
    const tf_status status = call.Run(CpuKernel("abs", c10::kFloat));
    INFO(call.message());
    REQUIRE(status == TF_OK);
    REQUIRE(out.equal(x_flat.abs()));
  }

  SECTION("a source of another dtype is not used") {
    const at::Tensor x = Floats({6});
    const at::Tensor as_ints = x.view(c10::kInt);
    const at::Tensor out = at::empty({6}, at::TensorOptions(c10::kInt));
    CallBuilder call(true);
    call.TensorViewOf(as_ints, x).Output(out);
    REQUIRE(call.Run(CpuKernel("abs", c10::kInt)) == TF_OK);
    REQUIRE(out.equal(as_ints.abs()));
  }

  SECTION("a matching source is used as is, and no wrapper is built") {
    const at::Tensor x = Doubles({7, 11});
    const at::Tensor out = at::empty_like(x);
    const int built_before = BuiltIn("exp");
    REQUIRE(Unary("exp", x, out, true) == TF_OK);
    REQUIRE(out.equal(x.exp()));
    REQUIRE(BuiltIn("exp") == built_before);
    // Without the source the same call needs wrappers: the census sees it.
    REQUIRE(Unary("exp", x, out, false) == TF_OK);
    REQUIRE(BuiltIn("exp") == built_before + 2);
  }
}

TEST_CASE("a call nested inside a held lease takes another entry",
          "[strategies]") {
  UseStrategy("pool");
  const KernelEntry& kernel = CpuKernel("abs", c10::kDouble);
  aten::WrapperPool* inputs = StateOf(kernel).pools.ForSlot(0);
  REQUIRE(inputs != nullptr);
  const at::Tensor held_data = Doubles({5, 9});
  const at::Tensor x = Doubles({5, 9});
  const at::Tensor out = at::empty_like(x);
  const int built_before = inputs->Census().built;
  {
    // As if an outer call of the same kernel were still running.
    aten::PoolLease outer =
        inputs->Lease(held_data.data_ptr(), held_data.sizes(),
                      held_data.strides(), c10::kDouble, c10::Device("cpu"));
    REQUIRE(outer);
    REQUIRE(Abs(x, out, false) == TF_OK);
    REQUIRE(out.equal(x.abs()));
    // The inner call built its own entry of the same shape ...
    REQUIRE(inputs->Census().built == built_before + 2);
    // ... and the outer lease still sees its own data.
    REQUIRE(outer.tensor().data_ptr() == held_data.data_ptr());
    REQUIRE(outer.tensor().equal(held_data));
    REQUIRE(inputs->Census().leased == 1);
  }
  const aten::PoolCensus after = inputs->Census();
  REQUIRE(after.leased == 0);
  REQUIRE(after.holding_data == 0);
}

TEST_CASE("a pool hands out distinct entries up to its capacity", "[pool]") {
  // The test's own pool: the same code the plugin runs, on a fresh pool.
  aten::WrapperPool pool;
  const at::Tensor data = Floats({3, 4});
  const c10::Device cpu("cpu");
  std::vector<aten::PoolLease> leases;
  for (int i = 0; i < aten::WrapperPool::kEntriesPerSlot; ++i) {
    leases.push_back(pool.Lease(data.data_ptr(), data.sizes(), data.strides(),
                                c10::kFloat, cpu));
    REQUIRE(leases.back());
  }
  for (size_t i = 0; i < leases.size(); ++i) {
    for (size_t j = i + 1; j < leases.size(); ++j) {
      REQUIRE(leases[i].tensor().unsafeGetTensorImpl() !=
              leases[j].tensor().unsafeGetTensorImpl());
    }
  }
  // Full: the caller falls back to a throwaway wrapper.
  REQUIRE_FALSE(pool.Lease(data.data_ptr(), data.sizes(), data.strides(),
                           c10::kFloat, cpu));
  REQUIRE(pool.Census().leased == aten::WrapperPool::kEntriesPerSlot);

  // A moved lease moves the claim; ending it frees exactly one entry, which
  // the next lease of that shape reuses rather than building another.
  aten::PoolLease moved = std::move(leases.back());
  leases.pop_back();
  REQUIRE(moved);
  c10::TensorImpl* freed = moved.tensor().unsafeGetTensorImpl();
  moved = aten::PoolLease();
  REQUIRE(pool.Census().leased == aten::WrapperPool::kEntriesPerSlot - 1);
  const at::Tensor other = Floats({3, 4});
  aten::PoolLease reused = pool.Lease(other.data_ptr(), other.sizes(),
                                      other.strides(), c10::kFloat, cpu);
  REQUIRE(reused);
  REQUIRE(reused.tensor().unsafeGetTensorImpl() == freed);
  REQUIRE(reused.tensor().equal(other));

  leases.clear();
  reused = aten::PoolLease();
  const aten::PoolCensus census = pool.Census();
  REQUIRE(census.built == aten::WrapperPool::kEntriesPerSlot);
  REQUIRE(census.leased == 0);
  REQUIRE(census.holding_data == 0);
}

TEST_CASE("a pool built full of one shape refuses others", "[pool]") {
  aten::WrapperPool pool;
  const c10::Device cpu("cpu");
  std::vector<at::Tensor> shapes;
  for (int i = 0; i < aten::WrapperPool::kEntriesPerSlot; ++i) {
    shapes.push_back(Floats({i + 1}));
    REQUIRE(pool.Lease(shapes.back().data_ptr(), shapes.back().sizes(),
                       shapes.back().strides(), c10::kFloat, cpu));
  }
  const at::Tensor novel = Floats({100});
  REQUIRE_FALSE(pool.Lease(novel.data_ptr(), novel.sizes(), novel.strides(),
                           c10::kFloat, cpu));
  // Neither another dtype nor other strides match a built entry.
  REQUIRE_FALSE(pool.Lease(shapes[0].data_ptr(), shapes[0].sizes(),
                           shapes[0].strides(), c10::kInt, cpu));
  const std::vector<int64_t> wide_stride{2};
  REQUIRE_FALSE(pool.Lease(shapes[0].data_ptr(), shapes[0].sizes(), wide_stride,
                           c10::kFloat, cpu));
  // Each built shape still is found.
  for (const at::Tensor& t : shapes) {
    aten::PoolLease lease =
        pool.Lease(t.data_ptr(), t.sizes(), t.strides(), c10::kFloat, cpu);
    REQUIRE(lease);
    REQUIRE(lease.tensor().equal(t));
  }
}

TEST_CASE("concurrent calls of one kernel each get their own wrappers",
          "[strategies]") {
  constexpr int kThreads = 4;
  constexpr int kCalls = 200;
  for (const char* strategy : kStrategies) {
    UseStrategy(strategy);
    INFO("strategy " << strategy);
    // Catch's assertions are not thread-safe: threads only count failures.
    const KernelEntry& kernel = CpuKernel("abs", c10::kFloat);
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&failures, &kernel, t] {
        const at::Tensor x = Floats({8, 16});
        const at::Tensor out = at::empty({8, 16});
        for (int i = 0; i < kCalls; ++i) {
          x.fill_(static_cast<double>(-(t * kCalls + i)));
          CallBuilder call(/*with_source=*/i % 2 == 0);
          call.Tensor(x).Output(out);
          if (call.Run(kernel) != TF_OK || !out.equal(x.abs())) {
            failures.fetch_add(1);
          }
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    REQUIRE(failures.load() == 0);
    const aten::PoolCensus census =
        StateOf(CpuKernel("abs", c10::kFloat)).pools.Census();
    REQUIRE(census.leased == 0);
    REQUIRE(census.holding_data == 0);
  }
}

TEST_CASE("set_option takes the strategy and explains what it refuses",
          "[options]") {
  const tf_plugin* descriptor = AtenPlugin().descriptor;
  REQUIRE(descriptor->set_option != nullptr);
  for (const char* strategy : kStrategies) {
    ErrorSink sink;
    REQUIRE(descriptor->set_option("strategy", strategy, &sink) == TF_OK);
  }
  ErrorSink bad_value;
  REQUIRE(descriptor->set_option("strategy", "fastest", &bad_value) ==
          TF_ERROR_INVALID_ARGUMENT);
  REQUIRE(bad_value.status == TF_ERROR_INVALID_ARGUMENT);
  REQUIRE_THAT(bad_value.message,
               Catch::Contains("from_blob, source or pool") &&
                   Catch::Contains("'fastest'"));
  ErrorSink bad_key;
  REQUIRE(descriptor->set_option("colour", "blue", &bad_key) ==
          TF_ERROR_INVALID_ARGUMENT);
  REQUIRE_THAT(bad_key.message, Catch::Contains("unknown option 'colour'") &&
                                    Catch::Contains("'strategy'"));
}

TEST_CASE("init picks the default strategy: the caller's tensor first",
          "[options]") {
  // A fresh load runs init again, which resets the strategy; meson runs this
  // with TORCHFERRY_ATEN_STRATEGY empty.
  UseStrategy("from_blob");
  Registry registry;
  REQUIRE(registry.LoadFile(AtenPlugin().path) != nullptr);
  const at::Tensor x = Doubles({7, 13});
  const at::Tensor out = at::empty_like(x);
  const int built_before = BuiltIn("neg");
  REQUIRE(Unary("neg", x, out, true) == TF_OK);
  REQUIRE(out.equal(x.neg()));
  REQUIRE(BuiltIn("neg") == built_before);
  // Views without a source fall back to the pool.
  REQUIRE(Unary("neg", x, out, false) == TF_OK);
  REQUIRE(BuiltIn("neg") == built_before + 2);
}

TEST_CASE("TORCHFERRY_ATEN_STRATEGY chooses the strategy at init",
          "[.strategy-env]") {
  // Run by meson with TORCHFERRY_ATEN_STRATEGY=pool: even a matching source
  // goes through the pool.
  const at::Tensor x = Doubles({7, 17});
  const at::Tensor out = at::empty_like(x);
  const int built_before = BuiltIn("silu");
  REQUIRE(Unary("silu", x, out, true) == TF_OK);
  REQUIRE(BuiltIn("silu") == built_before + 2);
}

}  // namespace torchferry::aten_test
