// The dtypes the host carries, in ONE table: the loader names and accepts
// kernel dtypes from it, core maps torch's and DLPack's dtypes onto it, and
// messages spell dtypes as it does. A dtype not here reaches no kernel.
#pragma once

#include <cstdint>

#include "abi/torchferry.h"

namespace torchferry {

// Dense indices for the dtypes the ABI carries; they key the kernel cache.
// Append only: a new dtype goes after the last, never between.
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
  kUInt16,
  kUInt32,
  kUInt64,
  kNumDtypes,
  kNoDtype = -1,
};

struct DtypeInfo {
  tf_dtype dtype;
  const char* name;  // torch's spelling, e.g. "float32"
  int32_t torch_code;
  int32_t itemsize;
  bool is_float;
  // The ABI minor from which a kernel may be keyed by it (1.x): a host of an
  // older minor does not know it.
  uint32_t minor = 0;
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
    {{TF_DTYPE_UINT, 16, 1}, "uint16", 27, 2, false, 2},
    {{TF_DTYPE_UINT, 32, 1}, "uint32", 28, 4, false, 2},
    {{TF_DTYPE_UINT, 64, 1}, "uint64", 29, 8, false, 2},
};

}  // namespace dtype_tables

inline constexpr const DtypeInfo& Dtype(DtypeIndex index) {
  return dtype_tables::kDtypes[index];
}

// The index for a tf_dtype (a DLPack dtype), or kNoDtype.
constexpr DtypeIndex DtypeFromDlpack(uint8_t code, uint8_t bits,
                                     uint16_t lanes) {
  if (lanes != 1) return kNoDtype;
  for (int i = 0; i < kNumDtypes; ++i) {
    if (dtype_tables::kDtypes[i].dtype.code == code &&
        dtype_tables::kDtypes[i].dtype.bits == bits) {
      return static_cast<DtypeIndex>(i);
    }
  }
  return kNoDtype;
}

// Whether a host of ABI minor `host_minor` knows the dtype.
constexpr bool DtypeKnownAtMinor(DtypeIndex index, uint32_t host_minor) {
  return index != kNoDtype && Dtype(index).minor <= host_minor;
}

}  // namespace torchferry
