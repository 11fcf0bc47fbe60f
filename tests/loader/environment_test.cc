// loader/environment.h: the one table of TORCHFERRY_* variables, and the
// reads and the ignored-variable list that derive from it.
#include "loader/environment.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "loader/loader.h"

using namespace torchferry;

TEST_CASE("the environment table lists each variable once, by its enum value",
          "[environment]") {
  const std::vector<EnvVarInfo>& table = EnvironmentTable();
  std::set<std::string> names;
  for (size_t i = 0; i < table.size(); ++i) {
    // EnvironmentEntry() indexes by the enum's value.
    CHECK(static_cast<size_t>(table[i].var) == i);
    CHECK(&EnvironmentEntry(table[i].var) == &table[i]);
    CHECK(std::string(table[i].name).rfind("TORCHFERRY_", 0) == 0);
    CHECK(std::string(table[i].meaning).size() > 0);
    CHECK(names.insert(table[i].name).second);
  }
  CHECK(EnvironmentEntry(EnvVar::kAtenStrategy).var == EnvVar::kAtenStrategy);
}

TEST_CASE("a privileged process ignores exactly the code-selecting variables",
          "[environment]") {
  for (const EnvVarInfo& entry : EnvironmentTable()) {
    ::setenv(entry.name, "set", 1);
  }
  CHECK(IgnoredEnvironmentVariables(false).empty());
  std::vector<std::string> expected;
  for (const EnvVarInfo& entry : EnvironmentTable()) {
    CHECK(std::string(ReadEnvironment(entry.var, false)) == "set");
    std::vector<std::string> ignored;
    const char* value = ReadEnvironment(entry.var, true, &ignored);
    if (entry.selects_code) {
      CHECK(value == nullptr);
      CHECK(ignored == std::vector<std::string>{entry.name});
      expected.emplace_back(entry.name);
    } else {
      CHECK(std::string(value) == "set");
      CHECK(ignored.empty());
    }
  }
  CHECK(IgnoredEnvironmentVariables(true) ==
        std::vector<std::string>{"TORCHFERRY_PLUGIN_PATH", "TORCHFERRY_PLUGINS",
                                 "TORCHFERRY_BRIDGE", "TORCHFERRY_TENSOR_META",
                                 "TORCHFERRY_PARALLEL"});
  CHECK(IgnoredEnvironmentVariables(true) == expected);
  // Unset variables are not reported as ignored.
  for (const EnvVarInfo& entry : EnvironmentTable()) ::unsetenv(entry.name);
  CHECK(IgnoredEnvironmentVariables(true).empty());
  CHECK(ReadEnvironment(EnvVar::kLog, false) == nullptr);
}
