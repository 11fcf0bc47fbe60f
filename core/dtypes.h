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

const DtypeInfo& Dtype(DtypeIndex index);
// The index for a c10::ScalarType code, or kNoDtype for a refused dtype.
DtypeIndex DtypeFromTorchCode(int32_t code);
// The index for a DLPack dtype, or kNoDtype.
DtypeIndex DtypeFromDlpack(uint8_t code, uint8_t bits, uint16_t lanes);
// Checks the table's codes against the running torch's aoti_torch_dtype_*()
// functions; returns false with the first disagreement in `error`.
bool VerifyTorchDtypeCodes(void* libtorch_handle, std::string* error);

}  // namespace torchferry
