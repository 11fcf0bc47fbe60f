#include "loader/known_values.h"

#include <fmt/format.h>

#include "loader/dtype_table.h"

namespace torchferry {

bool IsKnownDeviceType(int32_t device_type) {
  switch (device_type) {
    case TF_DEVICE_CPU:
    case TF_DEVICE_CUDA:
    case TF_DEVICE_CUDA_HOST:
    case TF_DEVICE_ROCM:
      return true;
    default:
      return false;
  }
}

namespace {

const char* KnownDtypeName(tf_dtype dtype) {
  const DtypeIndex index = DtypeFromDlpack(dtype.code, dtype.bits, dtype.lanes);
  return index == kNoDtype ? nullptr : Dtype(index).name;
}

}  // namespace

bool IsKnownDtype(tf_dtype dtype) { return KnownDtypeName(dtype) != nullptr; }

std::string DtypeName(tf_dtype dtype) {
  if (const char* name = KnownDtypeName(dtype)) return name;
  return fmt::format("dtype(code={}, bits={}, lanes={})", dtype.code,
                     dtype.bits, dtype.lanes);
}

std::string DeviceName(int32_t device_type) {
  switch (device_type) {
    case TF_DEVICE_CPU:
      return "cpu";
    case TF_DEVICE_CUDA:
      return "cuda";
    case TF_DEVICE_CUDA_HOST:
      return "cuda_host";
    case TF_DEVICE_ROCM:
      return "rocm";
    case TF_DEVICE_META:
      return "meta";
  }
  return fmt::format("device_type {}", device_type);
}

std::string StatusName(tf_status status) {
  switch (status) {
    case TF_OK:
      return "TF_OK";
    case TF_ERROR_INVALID_ARGUMENT:
      return "TF_ERROR_INVALID_ARGUMENT";
    case TF_ERROR_UNSUPPORTED:
      return "TF_ERROR_UNSUPPORTED";
    case TF_ERROR_OUT_OF_MEMORY:
      return "TF_ERROR_OUT_OF_MEMORY";
    case TF_ERROR_DEVICE:
      return "TF_ERROR_DEVICE";
    case TF_ERROR_INTERNAL:
      return "TF_ERROR_INTERNAL";
    case TF_ERROR_OUT_OF_RANGE:
      return "TF_ERROR_OUT_OF_RANGE";
  }
  return fmt::format("status {}", status);
}

}  // namespace torchferry
