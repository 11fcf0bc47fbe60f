// The compatibility matrix in C++: tests/plugins/compat/compat.c built
// against each frozen header and today's, validated as a host of each minor
// validates it, and its kernels called. A host of minor m keeps what m knows
// and leaves out, with a note naming it and both versions, what a newer
// plugin brings beyond m; a plugin of the host's minor or older that names
// something the host lacks is refused. docs/vendors.md shows the same matrix.
#include <dlfcn.h>

#include <catch2/catch.hpp>
#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "loader/loader.h"
#include "loader/op_table.h"
#include "loader/validate.h"
#include "test_support.h"

using namespace torchferry;
using namespace torchferry::testing;

namespace {

// The compat plugin built against `label`'s header ("v1_0", ..., "current").
const tf_plugin* CompatDescriptor(const std::string& label, std::string* path) {
  std::string env = "TF_TEST_COMPAT_" + label;
  for (char& c : env) c = static_cast<char>(std::toupper(c));
  *path = RequiredEnv(env.c_str());
  void* handle = dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(handle != nullptr);
  auto entry = reinterpret_cast<tf_plugin_entry_fn>(
      dlsym(handle, TF_PLUGIN_ENTRY_SYMBOL));
  REQUIRE(entry != nullptr);
  return entry(TF_ABI_VERSION_MAJOR, TF_ABI_VERSION_MINOR, HostApi());
}

std::vector<std::string> Ops(const ValidationResult& v) {
  std::vector<std::string> ops;
  for (const ValidatedKernel& k : v.kernels) ops.push_back(KernelOpName(v, k));
  return ops;
}

// Calls a validated neg kernel on [1, -2, 3] and returns what it wrote.
std::vector<float> CallNeg(const ValidationResult& v) {
  for (const ValidatedKernel& k : v.kernels) {
    if (KernelOpName(v, k) != "neg") continue;
    std::vector<float> x = {1, -2, 3}, out(3, 0.0f);
    std::vector<int64_t> shape = {3}, strides = {1};
    tf_tensor xv = View(x.data(), shape, strides);
    tf_tensor ov = View(out.data(), shape, strides);
    ErrorSink sink;
    KernelEntry entry{k.fn, k.kernel_data, nullptr, nullptr};
    REQUIRE(CallKernel(entry, {TensorArg(&xv)}, {}, {ov}, &sink) == TF_OK);
    return out;
  }
  return {};
}

}  // namespace

TEST_CASE("plugins of every minor load and serve in today's host", "[compat]") {
  const std::map<std::string, std::vector<std::string>> expected = {
      {"v1_0", {"neg"}},
      {"v1_1", {"neg", "compat_v1_1::twice"}},
      {"v1_2", {"neg", "compat_v1_2::twice", "embedding", "noop"}},
      {"current", {"neg", "compat_current::twice", "embedding", "noop"}},
  };
  for (const auto& [label, ops] : expected) {
    std::string path;
    const tf_plugin* p = CompatDescriptor(label, &path);
    INFO(path);
    const ValidationResult v = ValidateDescriptor(p, path);
    REQUIRE(v.ok);
    CHECK(v.abi_minor == (label == "current"
                              ? TF_ABI_VERSION_MINOR
                              : static_cast<uint32_t>(label[3] - '0')));
    CHECK(Ops(v) == ops);
    CHECK(v.notes.empty());
    CHECK(CallNeg(v) == std::vector<float>{-1, 2, -3});
  }
}

TEST_CASE("today's plugin loads in a host of each older minor", "[compat]") {
  std::string path;
  const tf_plugin* p = CompatDescriptor("current", &path);
  SECTION("1.1: the 1.2 op and dtype are left out with a note") {
    const ValidationResult v = ValidateDescriptor(p, path, 1, 1);
    REQUIRE(v.ok);
    CHECK(Ops(v) == std::vector<std::string>{"neg", "compat_current::twice"});
    REQUIRE(v.notes.size() == 2);
    CHECK_THAT(v.notes[0],
               Catch::Contains("op 'embedding' is unknown to this host (ABI "
                               "1.1, plugin 1.2; it came in ABI 1.2); kernel "
                               "skipped"));
    CHECK_THAT(v.notes[1],
               Catch::Contains("dtype uint16 is unknown to this host (ABI 1.1, "
                               "plugin 1.2; it came in ABI 1.2); kernel "
                               "skipped"));
    CHECK(CallNeg(v) == std::vector<float>{-1, 2, -3});
  }
  SECTION("1.0: declared ops too, which came in 1.1") {
    const ValidationResult v = ValidateDescriptor(p, path, 1, 0);
    REQUIRE(v.ok);
    CHECK(Ops(v) == std::vector<std::string>{"neg"});
    CHECK(v.ops.empty());
    REQUIRE(v.notes.size() == 3);
    CHECK_THAT(v.notes[0],
               Catch::Contains("declared op 'compat_current::twice' is "
                               "unknown to this host (ABI 1.0, plugin 1.2; "
                               "declared ops came in ABI 1.1)"));
    CHECK_THAT(v.notes[1], Catch::Contains("op 'embedding'"));
    CHECK_THAT(v.notes[2], Catch::Contains("dtype uint16"));
    CHECK(CallNeg(v) == std::vector<float>{-1, 2, -3});
  }
  SECTION("1.2: everything") {
    const ValidationResult v = ValidateDescriptor(p, path, 1, 2);
    REQUIRE(v.ok);
    CHECK(v.kernels.size() == 4);
    CHECK(v.notes.empty());
  }
}

namespace {

tf_status Ok(const tf_call*) { return TF_OK; }

// A plugin that says 1.`minor` and serves `op` keyed by `dtype`.
struct OneKernelPlugin {
  tf_kernel kernel;
  tf_plugin plugin;
  OneKernelPlugin(uint32_t minor, const char* op, tf_dtype dtype) {
    kernel = {sizeof(tf_kernel), op, TF_DEVICE_CPU, dtype, Ok, nullptr};
    plugin = {};
    plugin.struct_size = sizeof(tf_plugin);
    plugin.abi_version_major = TF_ABI_VERSION_MAJOR;
    plugin.abi_version_minor = minor;
    plugin.name = "onekernel";
    plugin.version = "1";
    plugin.kind = TF_PLUGIN_NATIVE;
    plugin.kernels = &kernel;
    plugin.num_kernels = 1;
  }
};

}  // namespace

TEST_CASE("a plugin of the host's minor naming what the host lacks is refused",
          "[compat]") {
  // A 1.1 plugin serving linear (1.2) in a 1.1 host: it claims a minor that
  // does not have the op. Every build that says 1.1 now agrees on that.
  OneKernelPlugin linear(1, "linear", kF32);
  ValidationResult v = ValidateDescriptor(&linear.plugin, "linear.so", 1, 1);
  CHECK_FALSE(v.ok);
  CHECK_THAT(v.error, Catch::Contains("op 'linear' came in ABI 1.2, after "
                                      "this host's 1.1 and the plugin's "
                                      "1.1"));
  // A newer host knows the op, whatever minor the plugin says.
  CHECK(ValidateDescriptor(&linear.plugin, "linear.so", 1, 2).ok);

  const tf_dtype u16 = {TF_DTYPE_UINT, 16, 1};
  OneKernelPlugin wide(1, "mul", u16);
  v = ValidateDescriptor(&wide.plugin, "wide.so", 1, 1);
  CHECK_FALSE(v.ok);
  CHECK_THAT(v.error, Catch::Contains("unknown dtype (code 1, bits 16, lanes "
                                      "1); expected one of the dtypes of ABI "
                                      "1.1"));
  CHECK(ValidateDescriptor(&wide.plugin, "wide.so", 1, 2).ok);

  // A typo in a plugin of today's minor.
  OneKernelPlugin typo(TF_ABI_VERSION_MINOR, "lineer", kF32);
  v = ValidateDescriptor(&typo.plugin, "typo.so");
  CHECK_FALSE(v.ok);
  CHECK_THAT(v.error, Catch::Contains("unknown op 'lineer'"));
  // The same typo from a newer minor is an op this host does not know yet.
  OneKernelPlugin future(TF_ABI_VERSION_MINOR + 1, "lineer", kF32);
  v = ValidateDescriptor(&future.plugin, "future.so");
  CHECK(v.ok);
  REQUIRE(v.notes.size() == 1);
  CHECK_THAT(v.notes[0], Catch::Contains("op 'lineer' is unknown to this "
                                         "host"));
}
