// TORCHFERRY_LOG and the host services plugins call: log lines on stderr,
// filtered by level; query answers.
#include "loader/log.h"

#include <catch2/catch.hpp>
#include <string>

#include "test_support.h"

using namespace torchferry;
using namespace torchferry::testing;

namespace {

// Restores the process-wide level when a test ends.
struct LevelGuard {
  LogLevel saved = GetLogLevel();
  ~LevelGuard() { SetLogLevel(saved); }
};

std::string LogAtEveryLevel(LogLevel level) {
  SetLogLevel(level);
  StderrCapture capture;
  const tf_host_api* host = HostApi();
  host->log(TF_LOG_DEBUG, "p", "d");
  host->log(TF_LOG_INFO, "p", "i");
  host->log(TF_LOG_WARN, "p", "w");
  host->log(TF_LOG_ERROR, "p", "e");
  return capture.Finish();
}

}  // namespace

TEST_CASE("log level names", "[log]") {
  CHECK(ParseLogLevel("debug") == LogLevel::kDebug);
  CHECK(ParseLogLevel("info") == LogLevel::kInfo);
  CHECK(ParseLogLevel("warn") == LogLevel::kWarn);
  CHECK(ParseLogLevel("error") == LogLevel::kError);
  CHECK(ParseLogLevel("off") == LogLevel::kOff);
  CHECK_FALSE(ParseLogLevel("DEBUG").has_value());
  CHECK_FALSE(ParseLogLevel("").has_value());
}

TEST_CASE("the level filters plugin log lines", "[log]") {
  LevelGuard guard;
  CHECK(LogAtEveryLevel(LogLevel::kDebug) ==
        "torchferry: [p] d\ntorchferry: [p] i\ntorchferry: [p] w\n"
        "torchferry: [p] e\n");
  CHECK(LogAtEveryLevel(LogLevel::kInfo) ==
        "torchferry: [p] i\ntorchferry: [p] w\ntorchferry: [p] e\n");
  CHECK(LogAtEveryLevel(LogLevel::kWarn) ==
        "torchferry: [p] w\ntorchferry: [p] e\n");
  CHECK(LogAtEveryLevel(LogLevel::kError) == "torchferry: [p] e\n");
  CHECK(LogAtEveryLevel(LogLevel::kOff) == "");
}

TEST_CASE("odd log arguments from a plugin are survived", "[log]") {
  LevelGuard guard;
  SetLogLevel(LogLevel::kDebug);
  StderrCapture capture;
  HostApi()->log(-5, nullptr, nullptr);
  HostApi()->log(99, "p", "clamped to error");
  CHECK(capture.Finish() ==
        "torchferry: [?] (null message)\ntorchferry: [p] clamped to error\n");
}

TEST_CASE("debug shows plugins' entry lines and the loader's reasons",
          "[log]") {
  LevelGuard guard;
  SECTION("debug") {
    SetLogLevel(LogLevel::kDebug);
    StderrCapture capture;
    Registry registry;
    registry.LoadFile(Synthetic("good"));
    registry.LoadFile(Synthetic("nullentry"));
    const std::string log = capture.Finish();
    // The good plugin logs the host version it got from query().
    CHECK_THAT(log,
               Catch::Contains("torchferry: [good] entered by host " +
                               RequiredEnv("TF_TEST_HOST_VERSION") + "\n"));
    CHECK_THAT(log, Catch::Contains("torchferry: [loader] loaded native "
                                    "plugin 'good' 1.2.3 (ABI 1.0)"));
    CHECK_THAT(log, Catch::Contains("torchferry: [nullentry] declining: no "
                                    "supported device\n"));
    CHECK_THAT(log, Catch::Contains("torchferry: [loader] skipped "
                                    "torchferry_nullentry.so: the entry "
                                    "function returned NULL"));
  }
  SECTION("warn (the default) shows skips only") {
    SetLogLevel(LogLevel::kWarn);
    StderrCapture capture;
    Registry registry;
    registry.LoadFile(Synthetic("good"));
    registry.LoadFile(Synthetic("major2"));
    const std::string log = capture.Finish();
    CHECK(log == "torchferry: [loader] skipped " +
                     registry.skipped()[0].reason + "\n");
  }
  SECTION("off shows nothing") {
    SetLogLevel(LogLevel::kOff);
    StderrCapture capture;
    Registry registry;
    registry.LoadFile(Synthetic("nullentry"));
    registry.LoadFile(Synthetic("major2"));
    CHECK(capture.Finish().empty());
    CHECK(registry.skipped().size() == 2);
  }
  SECTION("Load applies the options' level") {
    SetLogLevel(LogLevel::kDebug);
    Registry registry;
    registry.Load({{}, "", LogLevel::kError});
    CHECK(GetLogLevel() == LogLevel::kError);
  }
}

TEST_CASE("query answers host.version and keys the host sets", "[log]") {
  const tf_host_api* host = HostApi();
  CHECK(host->struct_size == sizeof(tf_host_api));
  CHECK(host->abi_version_major == TF_ABI_VERSION_MAJOR);
  CHECK(host->abi_version_minor == TF_ABI_VERSION_MINOR);
  REQUIRE(host->query("host.version") != nullptr);
  CHECK(std::string(host->query("host.version")) ==
        RequiredEnv("TF_TEST_HOST_VERSION"));
  CHECK(host->query("no.such.key") == nullptr);
  CHECK(host->query(nullptr) == nullptr);

  SetHostQuery("torch.version", "2.13.0");
  const char* first = host->query("torch.version");
  REQUIRE(first != nullptr);
  CHECK(std::string(first) == "2.13.0");
  SetHostQuery("torch.version", "2.14.1");
  CHECK(std::string(host->query("torch.version")) == "2.14.1");
  // An answer handed out earlier lives on ("until the process ends").
  CHECK(std::string(first) == "2.13.0");
}

// Run alone, with TORCHFERRY_LOG=debug in the environment (see meson.build):
// the level must come from the environment before anything sets it.
TEST_CASE("TORCHFERRY_LOG sets the level at first use", "[.log-env]") {
  CHECK(GetLogLevel() == LogLevel::kDebug);
  StderrCapture capture;
  Registry registry;
  registry.LoadFile(Synthetic("good"));
  CHECK_THAT(capture.Finish(),
             Catch::Contains("torchferry: [good] entered by host"));
}
