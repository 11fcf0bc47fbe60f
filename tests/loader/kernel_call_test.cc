// Calling loaded kernels: an error a kernel sets reaches the caller intact,
// and set_option reaches the plugin.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "loader/loader.h"
#include "test_support.h"

using namespace torchferry;
using namespace torchferry::testing;

namespace {

// Built here, independently of the plugin's source, byte for byte.
std::string ExpectedKernelErrorMessage() {
  std::string digits;
  for (int i = 0; i < 7; ++i) digits += "0123456789";
  return "simulated failure: x has a NaN at index 3 "
         "\xc3\xa9\xe2\x9c\x93 | " +
         digits + digits + digits + digits + " | end";
}

std::vector<float> CallAbs(const KernelEntry& abs, std::vector<float> x) {
  std::vector<float> out(x.size(), -1.0f);
  std::vector<int64_t> shape = {static_cast<int64_t>(x.size())};
  std::vector<int64_t> strides = {1};
  tf_tensor xv = View(x.data(), shape, strides);
  tf_tensor ov = View(out.data(), shape, strides);
  ErrorSink sink;
  REQUIRE(CallKernel(abs, {TensorArg(&xv)}, {}, {ov}, &sink) == TF_OK);
  return out;
}

}  // namespace

TEST_CASE("a kernel's error message arrives intact", "[kernel]") {
  Registry registry;
  REQUIRE(registry.LoadFile(Synthetic("kernelerror")) != nullptr);
  const KernelEntry* neg = registry.Find("neg", TF_DEVICE_CPU, kF32);
  REQUIRE(neg != nullptr);
  CHECK(neg->plugin->name == "kernelerror");

  std::vector<float> x = {1, 2, 3}, out(3);
  std::vector<int64_t> shape = {3}, strides = {1};
  tf_tensor xv = View(x.data(), shape, strides);
  tf_tensor ov = View(out.data(), shape, strides);
  ErrorSink sink;
  CHECK(CallKernel(*neg, {TensorArg(&xv)}, {}, {ov}, &sink) ==
        TF_ERROR_INVALID_ARGUMENT);
  CHECK(sink.status == TF_ERROR_INVALID_ARGUMENT);
  CHECK(sink.message == ExpectedKernelErrorMessage());
  CHECK(sink.message.size() > 300);
}

TEST_CASE("set_error copies the message and returns the status", "[kernel]") {
  ErrorSink sink;
  std::string message = "temporary";
  CHECK(HostApi()->set_error(&sink, TF_ERROR_DEVICE, message.c_str()) ==
        TF_ERROR_DEVICE);
  message.assign("overwritten");
  CHECK(sink.message == "temporary");
  CHECK(sink.status == TF_ERROR_DEVICE);
  // A NULL sink or message must not crash a kernel that passes one.
  CHECK(HostApi()->set_error(nullptr, TF_ERROR_INTERNAL, "x") ==
        TF_ERROR_INTERNAL);
  CHECK(HostApi()->set_error(&sink, TF_ERROR_INTERNAL, nullptr) ==
        TF_ERROR_INTERNAL);
  CHECK(sink.message.empty());
}

TEST_CASE("set_option reaches the plugin", "[kernel]") {
  Registry registry;
  REQUIRE(registry.LoadFile(Synthetic("good")) != nullptr);
  REQUIRE(registry.LoadFile(Synthetic("native2")) != nullptr);
  const KernelEntry* abs = registry.Find("abs", TF_DEVICE_CPU, kF32);
  REQUIRE(abs != nullptr);
  REQUIRE(abs->plugin->name == "good");
  ErrorSink sink;

  SECTION("a valid option changes what the kernel computes") {
    REQUIRE(registry.SetOption("good", "scale", "3", &sink) == TF_OK);
    CHECK(sink.message.empty());
    CHECK(CallAbs(*abs, {-1.0f, 2.0f, -3.5f}) ==
          std::vector<float>{3.0f, 6.0f, 10.5f});
  }
  SECTION("the plugin's own error for an unknown key") {
    CHECK(registry.SetOption("good", "speed", "fast", &sink) ==
          TF_ERROR_INVALID_ARGUMENT);
    CHECK(sink.message == "unknown option 'speed'; expected 'scale'");
  }
  SECTION("the plugin's own error for a bad value") {
    CHECK(registry.SetOption("good", "scale", "three", &sink) ==
          TF_ERROR_INVALID_ARGUMENT);
    CHECK(sink.message == "option 'scale' expects a number, got 'three'");
  }
  SECTION("an unknown plugin") {
    CHECK(registry.SetOption("nosuch", "scale", "1", &sink) ==
          TF_ERROR_INVALID_ARGUMENT);
    CHECK_THAT(sink.message, Catch::Contains("no plugin named 'nosuch'"));
    CHECK_THAT(sink.message, Catch::Contains("good, native2"));
  }
  SECTION("a plugin without options") {
    CHECK(registry.SetOption("native2", "scale", "1", &sink) ==
          TF_ERROR_UNSUPPORTED);
    CHECK_THAT(sink.message,
               Catch::Contains("plugin 'native2' takes no options"));
  }
  CHECK(registry.SetOption("good", "scale", "1", nullptr) == TF_OK);
  CHECK(CallAbs(*abs, {-2.0f}) == std::vector<float>{2.0f});
}
