#include "core/dtypes.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace torchferry {
namespace {

// torch_code is c10::ScalarType, fixed by torch's stable ABI
// (torch/headeronly/core/ScalarType.h) and checked at start-up against the
// running torch by VerifyTorchDtypeCodes.
constexpr DtypeInfo kDtypes[kNumDtypes] = {
    {{TF_DTYPE_FLOAT, 32, 1}, "float32", 6, 4, true},
    {{TF_DTYPE_FLOAT, 64, 1}, "float64", 7, 8, true},
    {{TF_DTYPE_FLOAT, 16, 1}, "float16", 5, 2, true},
    {{TF_DTYPE_BFLOAT, 16, 1}, "bfloat16", 15, 2, true},
    {{TF_DTYPE_INT, 8, 1}, "int8", 1, 1, false},
    {{TF_DTYPE_INT, 16, 1}, "int16", 2, 2, false},
    {{TF_DTYPE_INT, 32, 1}, "int32", 3, 4, false},
    {{TF_DTYPE_INT, 64, 1}, "int64", 4, 8, false},
    {{TF_DTYPE_UINT, 8, 1}, "uint8", 0, 1, false},
    {{TF_DTYPE_BOOL, 8, 1}, "bool", 11, 1, false},
};

constexpr int kMaxTorchCode = 64;

struct CodeTable {
  DtypeIndex by_code[kMaxTorchCode];
  constexpr CodeTable() : by_code() {
    for (auto& index : by_code) index = kNoDtype;
    for (int i = 0; i < kNumDtypes; ++i) {
      by_code[kDtypes[i].torch_code] = static_cast<DtypeIndex>(i);
    }
  }
};
constexpr CodeTable kCodeTable;

}  // namespace

const DtypeInfo& Dtype(DtypeIndex index) { return kDtypes[index]; }

DtypeIndex DtypeFromTorchCode(int32_t code) {
  if (code < 0 || code >= kMaxTorchCode) return kNoDtype;
  return kCodeTable.by_code[code];
}

DtypeIndex DtypeFromDlpack(uint8_t code, uint8_t bits, uint16_t lanes) {
  if (lanes != 1) return kNoDtype;
  for (int i = 0; i < kNumDtypes; ++i) {
    if (kDtypes[i].dtype.code == code && kDtypes[i].dtype.bits == bits) {
      return static_cast<DtypeIndex>(i);
    }
  }
  return kNoDtype;
}

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
