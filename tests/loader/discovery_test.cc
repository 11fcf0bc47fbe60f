// Where plugins are looked for, in which order, and which the user selected.
#include "loader/discovery.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "loader/environment.h"
#include "loader/loader.h"
#include "test_support.h"

using namespace torchferry;
using namespace torchferry::testing;

namespace {

std::vector<std::string> LoadedNames(const Registry& registry) {
  std::vector<std::string> names;
  for (const auto& plugin : registry.plugins()) names.push_back(plugin->name);
  return names;
}

void Touch(const std::filesystem::path& path) { std::ofstream(path) << "x"; }

}  // namespace

TEST_CASE("PluginStem drops the folder, the prefix and .so", "[discovery]") {
  CHECK(PluginStem("/a/b/torchferry_cpu.so") == "cpu");
  CHECK(PluginStem("torchferry_example_c.so") == "example_c");
  CHECK(PluginStem("/x/libother.so") == "libother");
  CHECK(PluginStem("/x/torchferry_.so") == "");
}

TEST_CASE("selection globs", "[discovery]") {
  CHECK(IsSelected("", "cpu"));
  CHECK(IsSelected("cpu,aten", "cpu"));
  CHECK(IsSelected("cpu,aten", "aten"));
  CHECK_FALSE(IsSelected("cpu,aten", "cuda"));
  CHECK_FALSE(IsSelected("-cpu", "cpu"));
  CHECK(IsSelected("-cpu", "cuda"));
  CHECK(IsSelected("*,-example_c", "cpu"));
  CHECK_FALSE(IsSelected("*,-example_c", "example_c"));
  CHECK_FALSE(IsSelected("-example_c,*", "example_c"));  // exclusion wins
  CHECK(IsSelected("c*", "cuda"));
  CHECK_FALSE(IsSelected("c*", "aten"));
  CHECK(IsSelected(" cpu , aten ", "aten"));  // spaces around globs
  CHECK(IsSelected("fallback?", "fallback2"));
  CHECK_FALSE(IsSelected("fallback?", "fallback"));
  CHECK_FALSE(IsSelected("-*", "cpu"));
  CHECK(IsSelected(",,", "cpu"));  // no glob at all: everything
}

TEST_CASE("search path lists split on colons", "[discovery]") {
  CHECK(SplitSearchPath("") == std::vector<std::string>{});
  CHECK(SplitSearchPath("/a") == std::vector<std::string>{"/a"});
  CHECK(SplitSearchPath("/a::/b:") == std::vector<std::string>{"/a", "/b"});
}

TEST_CASE("a folder contributes its torchferry_*.so entries, sorted",
          "[discovery]") {
  TempDir dir;
  for (const char* name :
       {"torchferry_b.so", "torchferry_a.so", "torchferry_c.so.txt", "other.so",
        "torchferry_.so", "xtorchferry_d.so"}) {
    Touch(dir.path() / name);
  }
  // Listed whatever it is: opening it says it is a folder (see below).
  std::filesystem::create_directory(dir.path() / "torchferry_dir.so");
  const std::string d = dir.str();
  CHECK(ListPluginFiles({d}) ==
        std::vector<std::string>{d + "/torchferry_a.so", d + "/torchferry_b.so",
                                 d + "/torchferry_dir.so"});
  // A file entry is taken as is, in its place in the order; a missing entry
  // is left out and reported.
  const std::string other = d + "/other.so";
  std::vector<Skipped> unusable;
  CHECK(ListPluginFiles({other, d + "/missing", d}, &unusable) ==
        std::vector<std::string>{other, d + "/torchferry_a.so",
                                 d + "/torchferry_b.so",
                                 d + "/torchferry_dir.so"});
  REQUIRE(unusable.size() == 1);
  CHECK(unusable[0].path == d + "/missing");
  CHECK_THAT(unusable[0].reason,
             Catch::Contains("plugin search path entry '" + d +
                             "/missing' does not exist"));
}

TEST_CASE("each search path error says what the entry is", "[discovery]") {
  TempDir dir;
  const std::string d = dir.str();
  const std::string loop = dir.Link("loop", "loop");
  const std::string dangling = dir.Link("dangling", d + "/nothing");
  Touch(dir.path() / "file");
  std::vector<Skipped> unusable;
  CHECK(ListPluginFiles({loop, dangling, d + "/file/below", d + "/missing"},
                        &unusable)
            .empty());
  REQUIRE(unusable.size() == 4);
  CHECK_THAT(unusable[0].reason,
             Catch::Contains("'" + loop + "' is a symbolic link loop"));
  CHECK_THAT(unusable[1].reason,
             Catch::Contains("is a symbolic link to something that does not "
                             "exist"));
  CHECK_THAT(unusable[2].reason, Catch::Contains("is not a folder"));
  CHECK_THAT(unusable[3].reason, Catch::Contains("' does not exist"));
  // Through Load, the same reasons are skipped entries, and logged.
  StderrCapture captured;
  Registry registry;
  registry.Load({{loop}, "", LogLevel::kWarn});
  const std::string log = captured.Finish();
  REQUIRE(registry.skipped().size() == 1);
  CHECK(registry.skipped()[0].path == loop);
  CHECK_THAT(registry.skipped()[0].reason,
             Catch::Contains("is a symbolic link loop") &&
                 !Catch::Contains("does not exist"));
  CHECK_THAT(log, Catch::Contains("is a symbolic link loop"));
}

TEST_CASE("only regular files are opened, and nothing blocks", "[discovery]") {
  TempDir dir;
  const std::string d = dir.str();
  REQUIRE(::mkfifo((d + "/torchferry_fifo.so").c_str(), 0600) == 0);
  REQUIRE(::mkfifo((d + "/pipe").c_str(), 0600) == 0);
  std::filesystem::create_directory(dir.path() / "torchferry_dir.so");
  dir.Link("torchferry_loop.so", "torchferry_loop.so");
  dir.Link("torchferry_dangling.so", d + "/nothing");
  dir.Link("torchferry_good.so", Synthetic("good"));
  Registry registry;
  // A FIFO with no writer would block a plain open() (and dlopen) forever.
  registry.Load({{d, d + "/pipe", "/dev/null"}, "", LogLevel::kOff});
  CHECK(LoadedNames(registry) == std::vector<std::string>{"good"});
  std::map<std::string, std::string> why;
  for (const Skipped& s : registry.skipped()) why[s.path] = s.reason;
  CHECK_THAT(
      why[d + "/torchferry_fifo.so"],
      Catch::Contains("torchferry_fifo.so: cannot load the library: " + d +
                      "/torchferry_fifo.so is a FIFO (named pipe); "
                      "expected a regular file"));
  CHECK_THAT(why[d + "/pipe"], Catch::Contains("is a FIFO (named pipe)"));
  CHECK_THAT(why[d + "/torchferry_dir.so"], Catch::Contains("is a folder"));
  CHECK_THAT(why[d + "/torchferry_loop.so"],
             Catch::Contains("is a symbolic link loop"));
  CHECK_THAT(why[d + "/torchferry_dangling.so"],
             Catch::Contains("symbolic link to something that does not exist"));
  CHECK_THAT(why["/dev/null"], Catch::Contains("is a character device"));
  CHECK(why.size() == 6);
}

TEST_CASE("search order decides between plugins of one kind", "[discovery]") {
  SECTION("sorted by name within a folder") {
    TempDir dir;
    dir.Link("torchferry_b.so", Synthetic("good"));
    dir.Link("torchferry_a.so", Synthetic("native2"));
    Registry registry;
    registry.Load({{dir.str()}, "", LogLevel::kWarn});
    CHECK(LoadedNames(registry) == std::vector<std::string>{"native2", "good"});
    CHECK(registry.Find("abs", TF_DEVICE_CPU, kF32)->plugin->name == "native2");
  }
  SECTION("path entries in order: a file, then a folder") {
    TempDir dir;
    dir.Link("torchferry_a.so", Synthetic("native2"));
    Registry registry;
    registry.Load({{Synthetic("good"), dir.str()}, "", LogLevel::kWarn});
    CHECK(LoadedNames(registry) == std::vector<std::string>{"good", "native2"});
    CHECK(registry.Find("abs", TF_DEVICE_CPU, kF32)->plugin->name == "good");
  }
  SECTION("path entries in order: a folder, then a file") {
    TempDir dir;
    dir.Link("torchferry_z.so", Synthetic("native2"));
    Registry registry;
    registry.Load({{dir.str(), Synthetic("good")}, "", LogLevel::kWarn});
    CHECK(LoadedNames(registry) == std::vector<std::string>{"native2", "good"});
    CHECK(registry.Find("abs", TF_DEVICE_CPU, kF32)->plugin->name == "native2");
  }
}

TEST_CASE("a plugin name loaded twice is skipped the second time",
          "[discovery]") {
  TempDir dir;
  // A real copy, so the second file is a second library with the same name.
  const std::filesystem::path copy = dir.path() / "torchferry_good_copy.so";
  std::filesystem::copy_file(Synthetic("good"), copy);
  Registry registry;
  registry.Load({{Synthetic("good"), dir.str()}, "", LogLevel::kWarn});
  CHECK(LoadedNames(registry) == std::vector<std::string>{"good"});
  REQUIRE(registry.skipped().size() == 1);
  CHECK(registry.skipped()[0].path == copy.string());
  CHECK(registry.skipped()[0].name == "good");
  CHECK_THAT(registry.skipped()[0].reason,
             Catch::Contains("plugin 'good' is already loaded from " +
                             Synthetic("good")));
}

TEST_CASE("TORCHFERRY_PLUGINS selects before opening", "[discovery]") {
  const std::string dir = SyntheticDir();
  SECTION("an include list") {
    Registry registry;
    registry.Load({{dir}, "good,native2", LogLevel::kWarn});
    CHECK(LoadedNames(registry) == std::vector<std::string>{"good", "native2"});
    // The others are reported as not selected, and were never opened: no
    // flaw of theirs shows up.
    for (const Skipped& s : registry.skipped()) {
      CHECK_THAT(s.reason, Catch::Contains("is not selected by "
                                           "TORCHFERRY_PLUGINS='good,"
                                           "native2'"));
    }
  }
  SECTION("a glob") {
    Registry registry;
    registry.Load({{dir}, "fallback*", LogLevel::kWarn});
    CHECK(LoadedNames(registry) ==
          std::vector<std::string>{"fallback", "fallback2"});
  }
  SECTION("everything but some") {
    Registry registry;
    registry.Load(
        {{dir}, "*,-good,-native2,-fallback*,-latin1", LogLevel::kError});
    CHECK(LoadedNames(registry) ==
          std::vector<std::string>{"kernelerror", "newerminor"});
    CHECK(registry.FindPlugin("good") == nullptr);
  }
  SECTION("exclusions alone") {
    Registry registry;
    registry.Load(
        {{dir}, "-kernelerror,-newerminor,-latin1", LogLevel::kError});
    CHECK(LoadedNames(registry) ==
          std::vector<std::string>{"fallback", "fallback2", "good", "native2"});
  }
  SECTION("the whole folder, flaws and all") {
    Registry registry;
    registry.Load({{dir}, "", LogLevel::kError});
    CHECK(LoadedNames(registry) ==
          std::vector<std::string>{"fallback", "fallback2", "good",
                                   "kernelerror", "latin1", "native2",
                                   "newerminor"});
    CHECK(registry.skipped().size() == 20);
    CHECK(registry.Find("abs", TF_DEVICE_CPU, kF32)->plugin->name == "good");
  }
}

TEST_CASE("options from the environment", "[discovery]") {
  ::setenv("TORCHFERRY_PLUGIN_PATH", "/first::/second", 1);
  ::setenv("TORCHFERRY_PLUGINS", "cpu,-aten", 1);
  ::setenv("TORCHFERRY_LOG", "error", 1);
  LoaderOptions options = LoaderOptions::FromEnvironment("/package/plugins");
  CHECK(options.search_path ==
        std::vector<std::string>{"/first", "/second", "/package/plugins"});
  CHECK(options.selection == "cpu,-aten");
  CHECK(options.log_level == LogLevel::kError);

  ::setenv("TORCHFERRY_LOG", "loud", 1);
  CHECK(LoaderOptions::FromEnvironment("").log_level == LogLevel::kWarn);
  ::unsetenv("TORCHFERRY_PLUGIN_PATH");
  ::unsetenv("TORCHFERRY_PLUGINS");
  ::unsetenv("TORCHFERRY_LOG");
  options = LoaderOptions::FromEnvironment("/package/plugins");
  CHECK(options.search_path == std::vector<std::string>{"/package/plugins"});
  CHECK(options.selection.empty());
  CHECK(options.ignored_environment.empty());
}

TEST_CASE("a privileged process ignores the variables that choose code",
          "[discovery]") {
  ::setenv("TORCHFERRY_PLUGIN_PATH", "/attacker", 1);
  ::setenv("TORCHFERRY_PLUGINS", "evil", 1);
  ::setenv("TORCHFERRY_LOG", "error", 1);
  // The test runs unprivileged: SecureExecution() is false, the default.
  CHECK_FALSE(SecureExecution());
  CHECK(std::string(ReadEnvironment(EnvVar::kPlugins)) == "evil");
  LoaderOptions options = LoaderOptions::FromEnvironment("/package/plugins");
  CHECK(options.search_path ==
        std::vector<std::string>{"/attacker", "/package/plugins"});
  CHECK(options.selection == "evil");
  CHECK(options.ignored_environment.empty());

  options = LoaderOptions::FromEnvironment(
      "/package/plugins", {{"vendor = v:f (v)", "/vendor/plugins"}}, {},
      /*secure=*/true);
  CHECK(options.search_path ==
        std::vector<std::string>{"/vendor/plugins", "/package/plugins"});
  CHECK(options.selection.empty());
  CHECK(
      options.ignored_environment ==
      std::vector<std::string>{"TORCHFERRY_PLUGIN_PATH", "TORCHFERRY_PLUGINS"});
  // The log level chooses no code: still read.
  CHECK(options.log_level == LogLevel::kError);

  // Unset variables are not reported as ignored.
  ::unsetenv("TORCHFERRY_PLUGIN_PATH");
  ::unsetenv("TORCHFERRY_PLUGINS");
  ::unsetenv("TORCHFERRY_LOG");
  options = LoaderOptions::FromEnvironment("/package/plugins", {}, {}, true);
  CHECK(options.ignored_environment.empty());
}

TEST_CASE("one file reached twice is loaded once", "[discovery]") {
  TempDir dir;
  // The same file through a second path entry and through a symlink.
  const std::filesystem::path link = dir.path() / "torchferry_good_link.so";
  std::filesystem::create_symlink(Synthetic("good"), link);
  Registry registry;
  registry.Load(
      {{Synthetic("good"), Synthetic("good"), dir.str()}, "", LogLevel::kWarn});
  CHECK(LoadedNames(registry) == std::vector<std::string>{"good"});
  // Each further path is listed, saying it is the same file, not a second
  // plugin of the same name.
  REQUIRE(registry.skipped().size() == 2);
  CHECK(registry.skipped()[0].path == Synthetic("good"));
  CHECK(registry.skipped()[1].path == link.string());
  for (const Skipped& s : registry.skipped()) {
    CHECK_THAT(s.reason, Catch::Contains("the file '" + Synthetic("good") +
                                         "' reached again on the search "
                                         "path; loaded once"));
    CHECK_THAT(s.reason, !Catch::Contains("already loaded"));
  }
}
