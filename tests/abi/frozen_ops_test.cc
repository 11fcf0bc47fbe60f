// Each frozen minor's built-in ops (tests/abi/v1_N/ops.txt) against
// loader/op_table.h: an op's index is part of every plugin's contract, so the
// ops of 1.N stay where they were, under the same names, dated 1.N or earlier,
// and no op is dated 1.N that 1.N did not have (the open minor, today's, may
// still append).
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "abi/torchferry.h"
#include "loader/op_table.h"

namespace torchferry {
namespace {

std::vector<std::string> FrozenOps(uint32_t minor) {
  const char* dir = std::getenv("TF_TEST_FROZEN_ABI_DIR");
  REQUIRE(dir != nullptr);
  const std::string path =
      std::string(dir) + "/v1_" + std::to_string(minor) + "/ops.txt";
  std::ifstream in(path);
  INFO(path);
  REQUIRE(in.good());
  std::vector<std::string> ops;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') ops.push_back(line);
  }
  return ops;
}

TEST_CASE("each frozen minor's ops keep their names, places and dates",
          "[abi]") {
  for (uint32_t minor = 0; minor <= TF_ABI_VERSION_MINOR; ++minor) {
    const std::vector<std::string> frozen = FrozenOps(minor);
    INFO("ABI 1." << minor << ": tests/abi/v1_" << minor << "/ops.txt");
    REQUIRE(frozen.size() <= kNumOps);
    for (size_t i = 0; i < frozen.size(); ++i) {
      INFO("op " << i);
      CHECK(std::string(OpName(static_cast<OpId>(i))) == frozen[i]);
      CHECK(kOpTable[i].minor <= minor);
    }
    const bool released = minor < TF_ABI_VERSION_MINOR;
    for (size_t i = frozen.size(); i < kNumOps; ++i) {
      INFO("op " << i << " (" << OpName(static_cast<OpId>(i))
                 << ") is past ABI 1." << minor << "'s list");
      // An op appended since the open minor's copy was taken carries its date.
      if (released) {
        CHECK(kOpTable[i].minor > minor);
      } else {
        CHECK(kOpTable[i].minor == minor);
      }
    }
  }
}

TEST_CASE("a host knows exactly the ops of its minor and older", "[abi]") {
  for (uint32_t minor = 0; minor <= TF_ABI_VERSION_MINOR; ++minor) {
    const std::vector<std::string> frozen = FrozenOps(minor);
    for (size_t i = 0; i < kNumOps; ++i) {
      const bool in_frozen = i < frozen.size();
      // The open minor may hold ops appended after its copy was taken.
      if (!in_frozen && minor == TF_ABI_VERSION_MINOR) continue;
      INFO("ABI 1." << minor << ", op " << OpName(static_cast<OpId>(i)));
      CHECK(OpKnownAtMinor(static_cast<int>(i), minor) == in_frozen);
    }
  }
}

}  // namespace
}  // namespace torchferry
