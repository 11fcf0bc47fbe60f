#include "core/bridge/dtypes.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace torchferry {
using dtype_tables::kDtypes;

bool VerifyTorchDtypeCodes(void* libtorch_handle, std::string* error) {
  for (const DtypeInfo& info : kDtypes) {
    std::string symbol = fmt::format("aoti_torch_dtype_{}", info.name);
    auto fn =
        reinterpret_cast<int32_t (*)()>(dlsym(libtorch_handle, symbol.c_str()));
    if (fn == nullptr) {
      *error = fmt::format("libtorch lacks {}", symbol);
      return false;
    }
    if (fn() != info.torch_code) {
      *error = fmt::format(
          "torch's code for {} is {}, expected {}; this torch changed its "
          "stable dtype codes and torchferry must be updated",
          info.name, fn(), info.torch_code);
      return false;
    }
  }
  return true;
}

}  // namespace torchferry
