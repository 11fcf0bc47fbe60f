// The cpu plugin as the loader sees it: its descriptor, exactly which
// kernels it offers (and which it leaves to the ATen fallback), how it
// answers a host of another ABI major, noop, the rank limit of its strided
// path, and calls from several threads at once.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cpu_plugin.h"
#include "dtype_reference.h"
#include "expect.h"
#include "loader/host_parallel.h"
#include "test_tensor.h"

using namespace torchferry::cpu_test;

namespace {

std::string Key(const std::string& op, tf_dtype d) {
  return op + "/" + DtypeName(d);
}

// abi/ABI.md's v1 ops, with the dtypes this plugin promises for each.
std::set<std::string> ExpectedKernels() {
  std::set<std::string> keys;
  auto add = [&](const std::vector<std::string>& ops,
                 const std::vector<tf_dtype>& dtypes) {
    for (const std::string& op : ops) {
      for (tf_dtype d : dtypes) keys.insert(Key(op, d));
    }
  };
  add({"abs", "neg", "add", "mul", "clamp"}, kArithmeticDtypes);
  add({"exp", "silu", "silu_and_mul", "rms_norm", "add_rms_norm", "softmax",
       "matmul"},
      kFloatDtypes);
  add({"stack", "cast", "noop"}, kAllDtypes);
  // attention
  add({"rotary_embedding", "scaled_dot_product_attention"}, kFloatDtypes);
  // linear
  add({"linear"}, kFloatDtypes);
  add({"embedding", "cat"}, kAllDtypes);  // embedding and cat
  add({"add", "mul", "stack", "cast", "noop", "embedding", "cat"},
      kWideUnsignedDtypes);
  add({"abs", "neg"}, {kU8});
  add({"clamp"}, {kBool});
  return keys;
}

}  // namespace

TEST_CASE("the descriptor names a native cpu plugin of ABI 1", "[plugin]") {
  const torchferry::Plugin& plugin = CpuPlugin();
  CHECK(plugin.name == "cpu");
  CHECK(plugin.kind == TF_PLUGIN_NATIVE);
  CHECK(plugin.abi_major == TF_ABI_VERSION_MAJOR);
  CHECK_FALSE(plugin.version.empty());
  CHECK(CpuRegistry().skipped().empty());
}

TEST_CASE("the plugin offers exactly the promised kernels", "[plugin]") {
  std::set<std::string> offered;
  for (const torchferry::KernelInfo& k : CpuPlugin().kernels) {
    CHECK(k.device_type == TF_DEVICE_CPU);
    CHECK(offered.insert(Key(k.op, k.dtype)).second);  // no duplicates
  }
  CHECK(offered == ExpectedKernels());
  // Every one is reachable through the registry.
  for (const torchferry::KernelInfo& k : CpuPlugin().kernels) {
    INFO(Key(k.op, k.dtype));
    CHECK(FindKernel(k.op, k.dtype) != nullptr);
  }
}

TEST_CASE("narrow integer arithmetic is left to the fallback", "[plugin]") {
  // Except what the fallback cannot serve as the op table lists it (clamp
  // of bool) and the two one-liners of uint8.
  const std::set<std::string> served = {"abs/uint8", "neg/uint8", "clamp/bool"};
  for (const char* op : {"abs", "neg", "add", "mul", "clamp"}) {
    for (tf_dtype d : {kI8, kI16, kU8, kBool}) {
      INFO(Key(op, d));
      CHECK((FindKernel(op, d) != nullptr) == served.count(Key(op, d)) > 0);
    }
  }
  for (const char* op :
       {"exp", "silu", "softmax", "rms_norm", "silu_and_mul", "matmul"}) {
    for (tf_dtype d : {kI32, kI64}) {
      INFO(Key(op, d));
      CHECK(FindKernel(op, d) == nullptr);
    }
  }
}

TEST_CASE("the entry declines a host of another ABI major", "[plugin]") {
  auto entry = reinterpret_cast<tf_plugin_entry_fn>(
      dlsym(CpuPlugin().dl_handle, TF_PLUGIN_ENTRY_SYMBOL));
  REQUIRE(entry != nullptr);
  CHECK(entry(TF_ABI_VERSION_MAJOR + 1, 0, torchferry::HostApi()) == nullptr);
  // A newer minor of this major is served, with the same descriptor.
  CHECK(entry(TF_ABI_VERSION_MAJOR, TF_ABI_VERSION_MINOR + 1,
              torchferry::HostApi()) == CpuPlugin().descriptor);
}

TEST_CASE("noop accepts any number of tensors", "[plugin]") {
  TestTensor a = TestTensor::Contiguous(kF32, {2, 3});
  TestTensor b = TestTensor::WithLayout(kI8, {4}, Layout::kGapped);
  TestTensor c = TestTensor::Contiguous(kBool, {});
  CHECK(CallBuilder().Run("noop", kF32).status == TF_OK);
  CHECK(CallBuilder().Input(a).Run("noop", kF32).status == TF_OK);
  CHECK(CallBuilder().Input(b).Input(a).Input(c).Run("noop", kI8).status ==
        TF_OK);
  CHECK(a.GuardIntact());
  // A non-tensor input is the host's bug, reported rather than followed.
  const CallResult r = CallBuilder().Input(a).InputInt(3).Run("noop", kF32);
  CHECK(r.status == TF_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(r.message, Catch::Contains("input 1"));
}

TEST_CASE("the strided path takes every rank up to TF_MAX_NDIM", "[plugin]") {
  // Twenty dims that merge with none of their neighbours (reversed strides),
  // then TF_MAX_NDIM dims, twelve of them not 1.
  std::vector<int64_t> shape20(20, 2);
  std::vector<int64_t> shape64(TF_MAX_NDIM, 1);
  for (int d = 0; d < 12; ++d) shape64[static_cast<size_t>(d * 5)] = 2;
  for (const std::vector<int64_t>& shape : {shape20, shape64}) {
    TestTensor x = TestTensor::WithLayout(kF32, shape, Layout::kReversed);
    FillRandom(x, -3, 3, 1);
    TestTensor out = TestTensor::Contiguous(kF32, shape);
    REQUIRE(CallBuilder().Input(x).Output(out).Run("neg", kF32).status ==
            TF_OK);
    std::vector<double> want;
    for (double v : x.Values()) want.push_back(-v);
    ExpectValues(out, want, kExact);
    CHECK(out.GuardIntact());
  }

  // Deeper than the host ever passes: refused, never walked.
  std::vector<int64_t> shape65 = shape64;
  shape65.push_back(2);
  TestTensor x65 = TestTensor::WithLayout(kF32, shape65, Layout::kReversed);
  TestTensor out65 = TestTensor::Contiguous(kF32, shape65);
  const CallResult r = CallBuilder().Input(x65).Output(out65).Run("neg", kF32);
  CHECK(r.status == TF_ERROR_UNSUPPORTED);
  CHECK_THAT(r.message,
             Catch::Contains("at most 64") && Catch::Contains("got 65"));
  CHECK(out65.GuardIntact());
}

TEST_CASE("kernels run concurrently from several threads", "[plugin]") {
  constexpr int kThreads = 4;
  std::vector<TestTensor> xs, outs;
  for (int t = 0; t < kThreads; ++t) {
    xs.push_back(TestTensor::WithLayout(kF32, {64, 33}, Layout::kReversed));
    FillRandom(xs.back(), -4, 4, 100 + t);
    outs.push_back(TestTensor::Contiguous(kF32, {64, 33}));
  }
  std::vector<tf_status> statuses(kThreads, -1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      tf_status s = TF_OK;
      for (int i = 0; i < 50 && s == TF_OK; ++i) {
        s = CallBuilder()
                .Input(xs[t])
                .AttrInt(1)
                .Output(outs[t])
                .Run("softmax", kF32)
                .status;
      }
      statuses[t] = s;
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(statuses[t] == TF_OK);
    // Each row of its own softmax sums to 1.
    for (int64_t row = 0; row < 64; ++row) {
      double sum = 0;
      for (int64_t j = 0; j < 33; ++j) sum += outs[t].Get(row * 33 + j);
      CHECK(sum == Approx(1.0).epsilon(1e-5));
    }
  }
}

// torch's pool (tf_host_api.parallel_for's torch backend) may report a
// failure after some shares ran. A kernel cannot run again (an in-place op
// would apply twice), so the call must fail with a message, not return
// TF_OK over an output that may be partly written. A stand-in for torch's
// three functions runs every share, then reports failure.
namespace {
int32_t FailingTorchParallelFor(int64_t begin, int64_t end, int64_t,
                                tf_parallel_fn fn, void* ctx) {
  fn(begin, end, ctx);
  return 1;  // an AOTITorchError: failure
}
int32_t TwoThreads(uint32_t* out) {
  *out = 2;
  return 0;
}
int32_t ThreadZero(uint32_t* out) {
  *out = 0;
  return 0;
}
}  // namespace

TEST_CASE("a failure of the host's parallel_for fails the call", "[plugin]") {
  CpuPlugin();  // loaded first: its entry takes the host's service
  torchferry::TorchParallel failing;
  failing.parallel_for = &FailingTorchParallelFor;
  failing.get_num_threads = &TwoThreads;
  failing.get_thread_idx = &ThreadZero;
  std::string error;
  REQUIRE(torchferry::InstallParallel(failing, "torch", &error));
  // 1 << 17 elements: above the plugin's threshold for splitting.
  TestTensor x = TestTensor::Contiguous(kF32, {128, 1024});
  TestTensor out = TestTensor::Contiguous(kF32, {128, 1024});
  x.Fill([](int64_t i) { return static_cast<double>(i % 7); });
  const CallResult failed =
      CallBuilder().Input(x).Input(x).Output(out).AttrFloat(1).Run("add", kF32);
  // Back to a working backend before any REQUIRE can leave this test.
  REQUIRE(torchferry::InstallParallel({}, "serial", &error));
  CHECK(failed.status == TF_ERROR_INTERNAL);
  CHECK(failed.message.find("parallel_for failed") != std::string::npos);
  // The next call starts clean: nothing of the failure is left over.
  const CallResult next =
      CallBuilder().Input(x).Input(x).Output(out).AttrFloat(1).Run("add", kF32);
  CHECK(next.status == TF_OK);
  CHECK(out.Get(5) == 10.0);
  // Small calls never reach the service.
  REQUIRE(torchferry::InstallParallel(failing, "torch", &error));
  TestTensor small = TestTensor::Contiguous(kF32, {64});
  TestTensor small_out = TestTensor::Contiguous(kF32, {64});
  small.Fill([](int64_t i) { return static_cast<double>(i); });
  const CallResult quick = CallBuilder()
                               .Input(small)
                               .Input(small)
                               .Output(small_out)
                               .AttrFloat(1)
                               .Run("add", kF32);
  REQUIRE(torchferry::InstallParallel({}, "serial", &error));
  CHECK(quick.status == TF_OK);
}
