// Who serves a key when several plugins offer it: native beats fallback
// whatever the order, otherwise the first found; the losers are listed.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "loader/loader.h"
#include "test_support.h"

using namespace torchferry;
using namespace torchferry::testing;

namespace {

std::string ServerOf(const Registry& registry, const char* op) {
  const KernelEntry* entry = registry.Find(op, TF_DEVICE_CPU, kF32);
  return entry != nullptr ? entry->plugin->name : "(none)";
}

// "op:loser>winner" for every shadowed kernel, in order.
std::vector<std::string> ShadowedList(const Registry& registry) {
  std::vector<std::string> list;
  for (const Shadowed& s : registry.shadowed()) {
    list.push_back(s.kernel.op + ":" + s.loser + ">" + s.winner);
  }
  return list;
}

void LoadAll(Registry& registry, const std::vector<std::string>& stems) {
  for (const std::string& stem : stems) {
    REQUIRE(registry.LoadFile(Synthetic(stem)) != nullptr);
  }
}

}  // namespace

TEST_CASE("a native kernel beats a fallback kernel in either order",
          "[precedence]") {
  SECTION("fallback found first") {
    Registry registry;
    LoadAll(registry, {"fallback", "good"});
    CHECK(ServerOf(registry, "abs") == "good");
    CHECK(ServerOf(registry, "mul") == "fallback");
    CHECK(ShadowedList(registry) ==
          std::vector<std::string>{"abs:fallback>good"});
  }
  SECTION("native found first") {
    Registry registry;
    LoadAll(registry, {"good", "fallback"});
    CHECK(ServerOf(registry, "abs") == "good");
    CHECK(ServerOf(registry, "mul") == "fallback");
    CHECK(ShadowedList(registry) ==
          std::vector<std::string>{"abs:fallback>good"});
  }
}

TEST_CASE("between plugins of one kind the first found wins", "[precedence]") {
  SECTION("natives") {
    Registry a;
    LoadAll(a, {"good", "native2"});
    CHECK(ServerOf(a, "abs") == "good");
    CHECK(ServerOf(a, "exp") == "native2");
    CHECK(ShadowedList(a) == std::vector<std::string>{"abs:native2>good"});

    Registry b;
    LoadAll(b, {"native2", "good"});
    CHECK(ServerOf(b, "abs") == "native2");
    CHECK(ShadowedList(b) == std::vector<std::string>{"abs:good>native2"});
  }
  SECTION("fallbacks") {
    Registry registry;
    LoadAll(registry, {"fallback2", "fallback"});
    CHECK(ServerOf(registry, "abs") == "fallback2");
    CHECK(ServerOf(registry, "mul") == "fallback2");
    CHECK(ShadowedList(registry) ==
          std::vector<std::string>{"abs:fallback>fallback2",
                                   "mul:fallback>fallback2"});
  }
}

TEST_CASE("a native arriving last takes over from every fallback",
          "[precedence]") {
  Registry registry;
  LoadAll(registry, {"fallback", "fallback2", "native2", "good"});
  CHECK(ServerOf(registry, "abs") == "native2");
  CHECK(ServerOf(registry, "mul") == "fallback");
  CHECK(ServerOf(registry, "exp") == "native2");
  CHECK(ServerOf(registry, "add") == "good");
  // fallback2 lost abs to fallback first; once native2 took over, the record
  // names the kernel that actually serves.
  CHECK(ShadowedList(registry) ==
        std::vector<std::string>{"abs:fallback2>native2",
                                 "mul:fallback2>fallback",
                                 "abs:fallback>native2", "abs:good>native2"});
  for (const Shadowed& s : registry.shadowed()) {
    CHECK(s.kernel.device_type == TF_DEVICE_CPU);
    CHECK(s.kernel.dtype.code == TF_DTYPE_FLOAT);
    CHECK(s.kernel.dtype.bits == 32);
  }
}

TEST_CASE("Find answers only the exact key", "[precedence]") {
  Registry registry;
  LoadAll(registry, {"good"});
  CHECK(registry.Find("abs", TF_DEVICE_CPU, kF32) != nullptr);
  CHECK(registry.Find("abs", TF_DEVICE_CUDA, kF32) == nullptr);
  CHECK(registry.Find("abs", TF_DEVICE_CPU, {TF_DTYPE_FLOAT, 64, 1}) ==
        nullptr);
  CHECK(registry.Find("abs", TF_DEVICE_CPU, {TF_DTYPE_INT, 32, 1}) == nullptr);
  CHECK(registry.Find("abs", TF_DEVICE_CPU, {TF_DTYPE_FLOAT, 32, 2}) ==
        nullptr);
  CHECK(registry.Find("exp", TF_DEVICE_CPU, kF32) == nullptr);
  CHECK(registry.Find("not_an_op", TF_DEVICE_CPU, kF32) == nullptr);
  CHECK(registry.Find("", TF_DEVICE_CPU, kF32) == nullptr);
  // A device type that differs only in high bits must not collide.
  CHECK(registry.Find("abs", TF_DEVICE_CPU + (1 << 16), kF32) == nullptr);
  const Plugin* good = registry.FindPlugin("good");
  REQUIRE(good != nullptr);
  CHECK(good->version == "1.2.3");
  CHECK(good->kind == TF_PLUGIN_NATIVE);
  CHECK(good->kernels.size() == 3);
  CHECK(registry.FindPlugin("nosuch") == nullptr);
}
