// torch dtypes as the ABI sees them. A torch dtype either maps to a tf_dtype
// that kernels may receive, or is refused by name: complex, float8, the wide
// unsigned types, quantized and bit types have no kernels in ABI v1, and
// passing their bytes on as something else would compute garbage.
#pragma once

#include <cstdint>
#include <string>

#include "abi/torchferry.h"

namespace torchferry {

// Dense indices for the dtypes the ABI carries; they key the kernel cache.
enum DtypeIndex : int8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kBool,
  kNumDtypes,
  kNoDtype = -1,
};

struct DtypeInfo {
  tf_dtype dtype;
  const char* name;  // torch's spelling, e.g. "float32"
  int32_t torch_code;
  int32_t itemsize;
  bool is_float;
};

namespace dtype_tables {
// torch_code is c10::ScalarType, fixed by torch's stable ABI
// (torch/headeronly/core/ScalarType.h) and checked at start-up against the
// running torch by VerifyTorchDtypeCodes.
inline constexpr DtypeInfo kDtypes[kNumDtypes] = {
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

inline constexpr int kMaxTorchCode = 64;

struct CodeTable {
  DtypeIndex by_code[kMaxTorchCode];
  constexpr CodeTable() : by_code() {
    for (auto& index : by_code) index = kNoDtype;
    for (int i = 0; i < kNumDtypes; ++i) {
      by_code[kDtypes[i].torch_code] = static_cast<DtypeIndex>(i);
    }
  }
};
inline constexpr CodeTable kCodeTable;

}  // namespace dtype_tables

// Both are on the per-tensor path, hence inline.
inline const DtypeInfo& Dtype(DtypeIndex index) {
  return dtype_tables::kDtypes[index];
}
// The index for a c10::ScalarType code, or kNoDtype for a refused dtype.
inline DtypeIndex DtypeFromTorchCode(int32_t code) {
  if (code < 0 || code >= dtype_tables::kMaxTorchCode) return kNoDtype;
  return dtype_tables::kCodeTable.by_code[code];
}
// The index for a DLPack dtype, or kNoDtype.
DtypeIndex DtypeFromDlpack(uint8_t code, uint8_t bits, uint16_t lanes);
// Checks the table's codes against the running torch's aoti_torch_dtype_*()
// functions; returns false with the first disagreement in `error`.
bool VerifyTorchDtypeCodes(void* libtorch_handle, std::string* error);

}  // namespace torchferry
