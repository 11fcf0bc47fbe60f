// The torch release the plugin was compiled against, and the check that the
// running torch is the same release. torch's C++ API (at::Tensor's layout,
// the signatures of at::*_out) is only stable within one release, so a
// plugin built for another one must refuse to load rather than crash.
#pragma once

#include <string>
#include <string_view>

namespace torchferry::aten {

// TORCHFERRY_ATEN_TORCH_VERSION comes from the build: torch.__version__ of
// the build Python, e.g. "2.13.0+cpu".
inline constexpr char kBuiltTorchVersion[] = TORCHFERRY_ATEN_TORCH_VERSION;

// The X.Y.Z release of a torch version: "2.14.1+cu130" -> "2.14.1",
// "2.15.0a0+git1234" -> "2.15.0". Local builds (+cpu, +cu130) of one release
// share its C++ API.
std::string_view ReleaseOf(std::string_view version);

// Empty when `running` (host->query("torch.version"), maybe NULL or "") is the
// release `built`; otherwise the reason to refuse, naming both.
std::string TorchVersionMismatch(std::string_view built, const char* running);

}  // namespace torchferry::aten
