// The element types this plugin carries, named once so that every op
// dispatches on the same closed set.
#pragma once

#include <cstddef>

#include "abi/torchferry.h"

namespace torchferry::cuda {

enum class Dtype {
  kBool,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kUnknown,
};

inline Dtype DtypeOf(tf_dtype dtype) {
  if (dtype.lanes != 1) return Dtype::kUnknown;
  switch (dtype.code) {
    case TF_DTYPE_BOOL:
      return dtype.bits == 8 ? Dtype::kBool : Dtype::kUnknown;
    case TF_DTYPE_UINT:
      switch (dtype.bits) {
        case 8:
          return Dtype::kUInt8;
        case 16:
          return Dtype::kUInt16;
        case 32:
          return Dtype::kUInt32;
        case 64:
          return Dtype::kUInt64;
      }
      return Dtype::kUnknown;
    case TF_DTYPE_INT:
      switch (dtype.bits) {
        case 8:
          return Dtype::kInt8;
        case 16:
          return Dtype::kInt16;
        case 32:
          return Dtype::kInt32;
        case 64:
          return Dtype::kInt64;
      }
      return Dtype::kUnknown;
    case TF_DTYPE_FLOAT:
      switch (dtype.bits) {
        case 16:
          return Dtype::kFloat16;
        case 32:
          return Dtype::kFloat32;
        case 64:
          return Dtype::kFloat64;
      }
      return Dtype::kUnknown;
    case TF_DTYPE_BFLOAT:
      return dtype.bits == 16 ? Dtype::kBFloat16 : Dtype::kUnknown;
  }
  return Dtype::kUnknown;
}

inline const char* DtypeName(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBool:
      return "bool";
    case Dtype::kUInt8:
      return "uint8";
    case Dtype::kUInt16:
      return "uint16";
    case Dtype::kUInt32:
      return "uint32";
    case Dtype::kUInt64:
      return "uint64";
    case Dtype::kInt8:
      return "int8";
    case Dtype::kInt16:
      return "int16";
    case Dtype::kInt32:
      return "int32";
    case Dtype::kInt64:
      return "int64";
    case Dtype::kFloat16:
      return "float16";
    case Dtype::kBFloat16:
      return "bfloat16";
    case Dtype::kFloat32:
      return "float32";
    case Dtype::kFloat64:
      return "float64";
    case Dtype::kUnknown:
      break;
  }
  return "an unknown dtype";
}

inline size_t ElementSize(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBool:
    case Dtype::kUInt8:
    case Dtype::kInt8:
      return 1;
    case Dtype::kInt16:
    case Dtype::kUInt16:
    case Dtype::kFloat16:
    case Dtype::kBFloat16:
      return 2;
    case Dtype::kInt32:
    case Dtype::kUInt32:
    case Dtype::kFloat32:
      return 4;
    case Dtype::kInt64:
    case Dtype::kUInt64:
    case Dtype::kFloat64:
      return 8;
    case Dtype::kUnknown:
      break;
  }
  return 0;
}

inline tf_dtype AbiDtype(Dtype dtype) {
  switch (dtype) {
    case Dtype::kBool:
      return tf_dtype{TF_DTYPE_BOOL, 8, 1};
    case Dtype::kUInt8:
      return tf_dtype{TF_DTYPE_UINT, 8, 1};
    case Dtype::kUInt16:
      return tf_dtype{TF_DTYPE_UINT, 16, 1};
    case Dtype::kUInt32:
      return tf_dtype{TF_DTYPE_UINT, 32, 1};
    case Dtype::kUInt64:
      return tf_dtype{TF_DTYPE_UINT, 64, 1};
    case Dtype::kInt8:
      return tf_dtype{TF_DTYPE_INT, 8, 1};
    case Dtype::kInt16:
      return tf_dtype{TF_DTYPE_INT, 16, 1};
    case Dtype::kInt32:
      return tf_dtype{TF_DTYPE_INT, 32, 1};
    case Dtype::kInt64:
      return tf_dtype{TF_DTYPE_INT, 64, 1};
    case Dtype::kFloat16:
      return tf_dtype{TF_DTYPE_FLOAT, 16, 1};
    case Dtype::kBFloat16:
      return tf_dtype{TF_DTYPE_BFLOAT, 16, 1};
    case Dtype::kFloat32:
      return tf_dtype{TF_DTYPE_FLOAT, 32, 1};
    case Dtype::kFloat64:
      return tf_dtype{TF_DTYPE_FLOAT, 64, 1};
    case Dtype::kUnknown:
      break;
  }
  return tf_dtype{0, 0, 0};
}

}  // namespace torchferry::cuda
