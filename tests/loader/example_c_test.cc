// The plain-C example plugin computes abs and add correctly over any strides,
// against a reference computed here element by element.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <vector>

#include "loader/loader.h"
#include "loader/op_table.h"
#include "test_support.h"

using namespace torchferry;
using namespace torchferry::testing;

namespace {

const KernelEntry& Kernel(const Registry& registry, const char* op) {
  const KernelEntry* entry = registry.Find(op, TF_DEVICE_CPU, kF32);
  REQUIRE(entry != nullptr);
  REQUIRE(entry->plugin->name == "example_c");
  return *entry;
}

std::vector<float> Iota(size_t n, float start, float step) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("example_c loads and serves abs and add", "[example_c]") {
  Registry registry;
  const Plugin* plugin =
      registry.LoadFile(RequiredEnv("TF_TEST_EXAMPLE_C_PLUGIN"));
  REQUIRE(plugin != nullptr);
  CHECK(plugin->kind == TF_PLUGIN_NATIVE);
  REQUIRE(plugin->kernels.size() == 3);
  CHECK(plugin->kernels[2].op == "example::axpby");
  REQUIRE(plugin->declared_ops == std::vector<std::string>{"example::axpby"});
  REQUIRE(registry.declared_ops().size() == 1);
  CHECK(registry.declared_ops()[0].spelling ==
        "example::axpby(Tensor x, Tensor y, *, float a, float b) -> Tensor");
  CHECK(registry.OpIndexOf("example::axpby") == static_cast<int>(kNumOps));
  CHECK(registry.num_ops() == kNumOps + 1);
  const KernelEntry* axpby =
      registry.Find("example::axpby", TF_DEVICE_CPU, kF32);
  REQUIRE(axpby != nullptr);
  CHECK(axpby->infer != nullptr);
  CHECK(Kernel(registry, "abs").infer == nullptr);
  const KernelEntry& abs = Kernel(registry, "abs");
  const KernelEntry& add = Kernel(registry, "add");
  ErrorSink sink;

  SECTION("abs of a transposed (non-contiguous) view") {
    std::vector<float> storage = Iota(12, -6.0f, 1.0f);     // a 3x4 matrix
    std::vector<int64_t> shape = {4, 3}, strides = {1, 4};  // its transpose
    std::vector<int64_t> out_strides = {3, 1};
    std::vector<float> out(12, 99.0f);
    tf_tensor x = View(storage.data(), shape, strides);
    tf_tensor o = View(out.data(), shape, out_strides);
    REQUIRE(CallKernel(abs, {TensorArg(&x)}, {}, {o}, &sink) == TF_OK);
    for (int64_t i = 0; i < 4; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        CHECK(out[i * 3 + j] == std::fabs(storage[j * 4 + i]));
      }
    }
  }
  SECTION("abs in place") {
    std::vector<float> x = {-1.0f, 2.0f, -3.0f, -0.5f};
    std::vector<int64_t> shape = {2, 2}, strides = {2, 1};
    tf_tensor v = View(x.data(), shape, strides);
    REQUIRE(CallKernel(abs, {TensorArg(&v)}, {}, {v}, &sink) == TF_OK);
    CHECK(x == std::vector<float>{1.0f, 2.0f, 3.0f, 0.5f});
  }
  SECTION("abs of a 0-dim tensor and of an empty one") {
    float x = -4.0f, out = 0.0f;
    std::vector<int64_t> none;
    tf_tensor xv = View(&x, none, none);
    tf_tensor ov = View(&out, none, none);
    REQUIRE(CallKernel(abs, {TensorArg(&xv)}, {}, {ov}, &sink) == TF_OK);
    CHECK(out == 4.0f);

    float untouched = 7.0f;
    std::vector<int64_t> shape = {3, 0, 2}, strides = {0, 2, 1};
    tf_tensor ev = View(&untouched, shape, strides);
    REQUIRE(CallKernel(abs, {TensorArg(&ev)}, {}, {ev}, &sink) == TF_OK);
    CHECK(untouched == 7.0f);
  }
  SECTION("add with a broadcast row and alpha") {
    std::vector<float> x = Iota(6, -3.0f, 1.25f);  // [2, 3]
    std::vector<float> y = {10.0f, -20.0f, 0.5f};  // [3], broadcast over rows
    std::vector<float> out(6);
    std::vector<int64_t> shape = {2, 3}, x_strides = {3, 1}, y_strides = {0, 1},
                         out_strides = {3, 1};
    tf_tensor xv = View(x.data(), shape, x_strides);
    tf_tensor yv = View(y.data(), shape, y_strides);
    tf_tensor ov = View(out.data(), shape, out_strides);
    REQUIRE(CallKernel(add, {TensorArg(&xv), TensorArg(&yv)}, {FloatArg(0.5)},
                       {ov}, &sink) == TF_OK);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        CHECK(out[i * 3 + j] == Approx(x[i * 3 + j] + 0.5f * y[j]));
      }
    }
  }
  SECTION("add of a column-broadcast x into a strided output") {
    std::vector<float> x = {1.0f, 2.0f};  // [2, 1] broadcast to [2, 3]
    std::vector<float> y = Iota(6, 0.0f, 1.0f);
    std::vector<float> out(12, -1.0f);  // every other element of a [2, 6]
    std::vector<int64_t> shape = {2, 3}, x_strides = {1, 0}, y_strides = {3, 1},
                         out_strides = {6, 2};
    tf_tensor xv = View(x.data(), shape, x_strides);
    tf_tensor yv = View(y.data(), shape, y_strides);
    tf_tensor ov = View(out.data(), shape, out_strides);
    REQUIRE(CallKernel(add, {TensorArg(&xv), TensorArg(&yv)}, {FloatArg(-2.0)},
                       {ov}, &sink) == TF_OK);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        CHECK(out[i * 6 + j * 2] == x[i] - 2.0f * y[i * 3 + j]);
        CHECK(out[i * 6 + j * 2 + 1] == -1.0f);  // gaps untouched
      }
    }
  }
}

TEST_CASE("in a folder, the CPU plugin sorts first and shadows example_c",
          "[example_c]") {
  const std::string cpu = RequiredEnv("TF_TEST_CPU_PLUGIN");
  if (!std::filesystem::exists(cpu)) {
    WARN("the CPU plugin is not built (" << cpu << "); nothing to compare");
    return;
  }
  TempDir dir;
  dir.Link("torchferry_example_c.so", RequiredEnv("TF_TEST_EXAMPLE_C_PLUGIN"));
  dir.Link("torchferry_cpu.so", cpu);
  Registry registry;
  registry.Load({{dir.str()}, "", LogLevel::kWarn});
  const Plugin* cpu_plugin = registry.plugins().at(0).get();
  for (const char* op : {"abs", "add"}) {
    const KernelEntry* entry = registry.Find(op, TF_DEVICE_CPU, kF32);
    REQUIRE(entry != nullptr);
    CHECK(entry->plugin == cpu_plugin);
  }
  int shadowed = 0;
  for (const Shadowed& s : registry.shadowed()) {
    if (s.loser == "example_c") {
      CHECK(s.winner == cpu_plugin->name);
      ++shadowed;
    }
  }
  CHECK(shadowed == 2);
}
