#include "torch_version.h"

namespace torchferry::aten {

std::string_view ReleaseOf(std::string_view version) {
  // Digits and dots from the start, without a dot that ends them ("2.14." of
  // "2.14.rc1" is not a release).
  size_t end = 0;
  while (
      end < version.size() &&
      ((version[end] >= '0' && version[end] <= '9') || version[end] == '.')) {
    ++end;
  }
  while (end > 0 && version[end - 1] == '.') --end;
  return version.substr(0, end);
}

std::string TorchVersionMismatch(std::string_view built, const char* running) {
  const std::string_view built_release = ReleaseOf(built);
  if (running == nullptr || *running == '\0') {
    return "built against torch " + std::string(built_release) +
           ", but the host reports no torch version (import torch before "
           "loading plugins); the aten plugin only runs under the torch it "
           "was built for";
  }
  const std::string_view running_release = ReleaseOf(running);
  if (!built_release.empty() && built_release == running_release) return {};
  // A version without a release part is quoted whole rather than dropped.
  const std::string_view shown =
      running_release.empty() ? std::string_view(running) : running_release;
  return "built against torch " + std::string(built_release) +
         ", running under torch " + std::string(shown) +
         "; rebuild the aten plugin for this torch (python -m torchferry "
         "build-aten)";
}

}  // namespace torchferry::aten
