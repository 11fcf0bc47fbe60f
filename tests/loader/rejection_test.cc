// Every synthetic plugin with a flaw is rejected for that flaw: its Skipped
// entry names the file and carries a message no other flaw produces.
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "loader/loader.h"
#include "loader/log.h"
#include "loader/op_table.h"
#include "test_support.h"

using namespace torchferry;
using namespace torchferry::testing;

namespace {

struct Flaw {
  std::string stem;
  std::string reason;  // a substring only this flaw's message has
};

const std::vector<Flaw>& Flaws() {
  static const std::vector<Flaw> flaws = {
      {"noentry", "no entry symbol 'torchferry_plugin_entry'"},
      {"nullentry", "the entry function returned NULL"},
      {"major2",
       "ABI major version mismatch: host speaks 1.x, plugin was built for "
       "2.0; rebuild the plugin against torchferry ABI 1"},
      {"smallplugin", "tf_plugin.struct_size is " +
                          std::to_string(offsetof(tf_plugin, kernels)) +
                          "; expected at least " +
                          std::to_string(TF_PLUGIN_V1_0_SIZE) +
                          ", the ABI 1.0 size"},
      {"smallkernel", "kernels[0].struct_size is " +
                          std::to_string(offsetof(tf_kernel, fn)) +
                          "; expected at least ABI 1.0's " +
                          std::to_string(sizeof(tf_kernel))},
      {"mixedkernelsize",
       "kernels[1].struct_size is " + std::to_string(sizeof(tf_kernel)) +
           " but kernels[0].struct_size is " +
           std::to_string(sizeof(tf_kernel) + sizeof(int64_t))},
      {"nullfn", "kernels[1] ('neg', cpu, float32): fn is NULL"},
      {"baddtype", "unknown dtype (code 3, bits 32, lanes 1)"},
      {"badlanes", "unknown dtype (code 2, bits 32, lanes 4)"},
      {"baddevice", "unknown device type 7"},
      {"metadevice", "unknown device type 0"},
      {"dupkernel", "kernels[2] ('abs', cpu, float32): duplicate kernel"},
      {"initfail",
       "init of plugin 'initfail' failed with TF_ERROR_DEVICE: simulated init "
       "failure: no accelerator found"},
      {"badname", "invalid plugin name 'Bad Name!'; expected [a-z0-9_]"},
      {"badkind", "plugin 'badkind' has kind 7; expected TF_PLUGIN_NATIVE"},
      {"nullkernels",
       "plugin 'nullkernels' has num_kernels = 2 but kernels "
       "is NULL"},
      {"unknownop", "kernels[1] ('gelu', cpu, float32): unknown op 'gelu'"},
      {"notelf", "torchferry_notelf.so: cannot load the library: "},
      {"missingdep",
       "libtorchferry_test_absent.so.1: cannot open shared "
       "object file"},
      {"initmutate",
       "plugin 'initmutate' changed its descriptor during init: it no longer "
       "validates: plugin 'initmutate': kernels[0] ('abs', cpu, float32): fn "
       "is NULL"},
  };
  return flaws;
}

}  // namespace

TEST_CASE("each flawed plugin is rejected with its own reason", "[rejection]") {
  for (const Flaw& flaw : Flaws()) {
    DYNAMIC_SECTION(flaw.stem) {
      Registry registry;
      const std::string path = Synthetic(flaw.stem);
      CHECK(registry.LoadFile(path) == nullptr);
      CHECK(registry.plugins().empty());
      REQUIRE(registry.skipped().size() == 1);
      const Skipped& skipped = registry.skipped()[0];
      CHECK(skipped.path == path);
      const std::string file = "torchferry_" + flaw.stem + ".so";
      CHECK(skipped.reason.rfind(file, 0) == 0);  // starts with the file
      CHECK_THAT(skipped.reason, Catch::Contains(flaw.reason));
      // No other flaw's message fits this one: each reason is its own.
      for (const Flaw& other : Flaws()) {
        if (&other != &flaw) {
          CHECK_THAT(skipped.reason, !Catch::Contains(other.reason));
        }
      }
    }
  }
}

TEST_CASE("a dlopen failure carries dlerror's text", "[rejection]") {
  Registry registry;
  registry.LoadFile(Synthetic("notelf"));
  REQUIRE(registry.skipped().size() == 1);
  // glibc says "invalid ELF header" or "file too short" for a text file.
  const std::string& reason = registry.skipped()[0].reason;
  CHECK((reason.find("invalid ELF header") != std::string::npos ||
         reason.find("file too short") != std::string::npos));
}

TEST_CASE("a plugin of a newer minor with larger structs loads",
          "[rejection]") {
  Registry registry;
  StderrCapture capture;
  const LogLevel before = GetLogLevel();
  SetLogLevel(LogLevel::kDebug);
  const Plugin* plugin = registry.LoadFile(Synthetic("newerminor"));
  SetLogLevel(before);
  const std::string log = capture.Finish();
  REQUIRE(plugin != nullptr);
  CHECK(registry.skipped().empty());
  CHECK(plugin->name == "newerminor");
  CHECK(plugin->abi_major == TF_ABI_VERSION_MAJOR);
  CHECK(plugin->abi_minor == TF_ABI_VERSION_MINOR + 1);
  // The op this host does not know is left out, the others serve.
  REQUIRE(plugin->kernels.size() == 2);
  CHECK(plugin->kernels[0].op == "abs");
  CHECK(plugin->kernels[1].op == "exp");
  REQUIRE(registry.Find("abs", TF_DEVICE_CPU, kF32) != nullptr);
  CHECK(registry.Find("abs", TF_DEVICE_CPU, kF32)->plugin == plugin);
  CHECK(registry.Find("exp", TF_DEVICE_CPU, kF32) != nullptr);
  CHECK_THAT(log, Catch::Contains(fmt::format(
                      "op 'op_from_the_future' is unknown to this host (ABI "
                      "1.{}, plugin 1.{}); kernel skipped",
                      TF_ABI_VERSION_MINOR, TF_ABI_VERSION_MINOR + 1)));
}

TEST_CASE("bad plugins leave the host and the good plugins working",
          "[rejection]") {
  Registry registry;
  for (const Flaw& flaw : Flaws()) registry.LoadFile(Synthetic(flaw.stem));
  const Plugin* good = registry.LoadFile(Synthetic("good"));
  const Plugin* kernelerror = registry.LoadFile(Synthetic("kernelerror"));

  REQUIRE(good != nullptr);
  REQUIRE(kernelerror != nullptr);
  CHECK(registry.skipped().size() == Flaws().size());
  CHECK(registry.plugins().size() == 2);

  // None of the rejected plugins' kernels made it into the registry: abs is
  // good's, and nothing answers for ops only a rejected plugin declared.
  const KernelEntry* abs = registry.Find("abs", TF_DEVICE_CPU, kF32);
  REQUIRE(abs != nullptr);
  CHECK(abs->plugin == good);
  CHECK(registry.Find("exp", TF_DEVICE_CPU, kF32) == nullptr);

  std::vector<float> x = {-1.5f, 2.0f, -0.0f};
  std::vector<float> out(3, 99.0f);
  std::vector<int64_t> shape = {3}, strides = {1};
  tf_tensor xv = View(x.data(), shape, strides);
  tf_tensor ov = View(out.data(), shape, strides);
  ErrorSink sink;
  REQUIRE(CallKernel(*abs, {TensorArg(&xv)}, {}, {ov}, &sink) == TF_OK);
  CHECK(out == std::vector<float>{1.5f, 2.0f, 0.0f});
}

TEST_CASE("an init that rewrites the validated descriptor is refused",
          "[rejection]") {
  const std::vector<std::pair<std::string, std::string>> mutations = {
      {"fn", "kernels[0] ('abs', cpu, float32): fn is NULL"},
      {"fn_swap", "kernels[0].fn changed from 0x"},
      {"kernel_data", "kernels[0].kernel_data changed from 0x"},
      {"count", "the kernels changed from 1 to 2"},
      {"op",
       "kernels[0] changed from (abs, cpu, float32) to (exp, cpu, "
       "float32)"},
      {"name", "name changed from 'initmutate' to 'renamed'"},
      {"version", "version changed from '0.0.1' to '6.6.6'"},
  };
  for (const auto& [how, change] : mutations) {
    DYNAMIC_SECTION(how) {
      ::setenv("TF_TEST_INITMUTATE", how.c_str(), 1);
      Registry registry;
      const Plugin* plugin = registry.LoadFile(Synthetic("initmutate"));
      ::unsetenv("TF_TEST_INITMUTATE");
      CHECK(plugin == nullptr);
      CHECK(registry.Find("abs", TF_DEVICE_CPU, kF32) == nullptr);
      CHECK(registry.Find("exp", TF_DEVICE_CPU, kF32) == nullptr);
      REQUIRE(registry.skipped().size() == 1);
      CHECK(registry.skipped()[0].name == "initmutate");
      CHECK_THAT(registry.skipped()[0].reason,
                 Catch::StartsWith("torchferry_initmutate.so: plugin "
                                   "'initmutate' changed its descriptor during "
                                   "init: ") &&
                     Catch::Contains(change) &&
                     Catch::Contains("must stay unchanged while the library "
                                     "is loaded"));
    }
  }
}

TEST_CASE("text that is not UTF-8 is kept byte for byte", "[rejection]") {
  SECTION("a version and a set_option message") {
    Registry registry;
    const Plugin* plugin = registry.LoadFile(Synthetic("latin1"));
    REQUIRE(plugin != nullptr);
    CHECK(plugin->version == "caf\xe9 1.0");
    ErrorSink sink;
    CHECK(registry.SetOption("latin1", "k", "v", &sink) ==
          TF_ERROR_INVALID_ARGUMENT);
    CHECK(sink.message == "option refus\xe9 (Latin-1 text)");
  }
  SECTION("an init failure message") {
    ::setenv("TF_TEST_LATIN1_INIT", "fail", 1);
    Registry registry;
    CHECK(registry.LoadFile(Synthetic("latin1")) == nullptr);
    ::unsetenv("TF_TEST_LATIN1_INIT");
    REQUIRE(registry.skipped().size() == 1);
    CHECK_THAT(registry.skipped()[0].reason,
               Catch::EndsWith("no caf\xe9 machine found (\xff\xfe)"));
  }
}
