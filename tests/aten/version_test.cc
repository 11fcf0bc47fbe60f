// The plugin runs only under the torch release it was built against: under
// any other (or none reported) the loader skips it with a reason that names
// both versions and says what to do.
#include <catch2/catch.hpp>
#include <string>

#include "aten_test_support.h"
#include "plugins/aten/torch_version.h"

namespace torchferry::aten_test {
namespace {

std::string BuiltRelease() {
  const std::string built = BuiltTorchVersion();
  return built.substr(0, built.find('+'));
}

// Loads the plugin into a fresh registry while the host reports `reported`
// as its torch version; the version the other tests rely on is restored.
struct LoadResult {
  bool loaded;
  std::string reason;
};
LoadResult LoadUnder(const std::string& reported) {
  const std::string path = AtenPlugin().path;
  SetHostQuery("torch.version", reported);
  Registry registry;
  const Plugin* plugin = registry.LoadFile(path);
  SetHostQuery("torch.version", BuiltTorchVersion());
  if (plugin != nullptr) return {true, ""};
  REQUIRE(!registry.skipped().empty());
  return {false, registry.skipped().back().reason};
}

}  // namespace

TEST_CASE("another torch release is refused with both versions named",
          "[version]") {
  const LoadResult result = LoadUnder("2.99.1+cu999");
  REQUIRE_FALSE(result.loaded);
  INFO(result.reason);
  REQUIRE_THAT(result.reason,
               Catch::Contains("built against torch " + BuiltRelease() +
                               ", running under torch 2.99.1; rebuild the "
                               "aten plugin for this torch"));
}

TEST_CASE("a host that reports no torch version is refused", "[version]") {
  const LoadResult result = LoadUnder("");
  REQUIRE_FALSE(result.loaded);
  REQUIRE_THAT(result.reason,
               Catch::Contains("built against torch " + BuiltRelease()) &&
                   Catch::Contains("reports no torch version"));
}

TEST_CASE("another local build of the same release is accepted", "[version]") {
  REQUIRE(LoadUnder(BuiltRelease() + "+cu999").loaded);
  REQUIRE(LoadUnder(BuiltRelease()).loaded);
  // And the plugin still serves after a refusal.
  REQUIRE_FALSE(LoadUnder("1.13.1").loaded);
  REQUIRE(LoadUnder(BuiltTorchVersion()).loaded);
}

TEST_CASE("the release part of a torch version is X.Y.Z", "[version]") {
  CHECK(aten::ReleaseOf("2.14.1+cu130") == "2.14.1");
  CHECK(aten::ReleaseOf("2.13.0") == "2.13.0");
  CHECK(aten::ReleaseOf("2.15.0a0+git1234abc") == "2.15.0");
  CHECK(aten::ReleaseOf("2.14.") == "2.14");
  CHECK(aten::ReleaseOf("nightly") == "");
  CHECK(aten::TorchVersionMismatch("2.13.0+cpu", "2.13.0+cu130").empty());
  CHECK_FALSE(aten::TorchVersionMismatch("2.13.0+cpu", "2.13.1").empty());
  CHECK_FALSE(aten::TorchVersionMismatch("2.13.0", "2.13").empty());
  CHECK_THAT(aten::TorchVersionMismatch("2.13.0", "nightly"),
             Catch::Contains("running under torch nightly"));
}

}  // namespace torchferry::aten_test
