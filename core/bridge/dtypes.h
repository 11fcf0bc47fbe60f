// torch dtypes as the ABI sees them (the table itself: loader/dtype_table.h).
// A torch dtype either maps to a tf_dtype that kernels may receive, or is
// refused by name: complex, float8, quantized and bit types have no kernels
// in ABI v1, and passing their bytes on as something else would compute
// garbage.
#pragma once

#include <cstdint>
#include <string>

#include "abi/torchferry.h"
#include "loader/dtype_table.h"

namespace torchferry {

namespace dtype_tables {

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

// The index for a c10::ScalarType code (on the per-tensor path, hence inline),
// or kNoDtype for a refused dtype.
inline DtypeIndex DtypeFromTorchCode(int32_t code) {
  if (code < 0 || code >= dtype_tables::kMaxTorchCode) return kNoDtype;
  return dtype_tables::kCodeTable.by_code[code];
}
// Checks the table's codes against the running torch's aoti_torch_dtype_*()
// functions; returns false with the first disagreement in `error`.
bool VerifyTorchDtypeCodes(void* libtorch_handle, std::string* error);

}  // namespace torchferry
