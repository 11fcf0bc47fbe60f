// Translation between the ABI's DLPack codes and ATen's scalar types and
// devices. Inline because every tensor of every call goes through it.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <optional>

#include "abi/torchferry.h"

namespace torchferry::aten {

// nullopt for a dtype that ABI v1 does not define (lanes != 1, odd widths).
inline std::optional<c10::ScalarType> ScalarTypeOf(tf_dtype dtype) {
  if (dtype.lanes != 1) return std::nullopt;
  switch (dtype.code) {
    case TF_DTYPE_FLOAT:
      if (dtype.bits == 32) return c10::ScalarType::Float;
      if (dtype.bits == 64) return c10::ScalarType::Double;
      if (dtype.bits == 16) return c10::ScalarType::Half;
      break;
    case TF_DTYPE_BFLOAT:
      if (dtype.bits == 16) return c10::ScalarType::BFloat16;
      break;
    case TF_DTYPE_INT:
      if (dtype.bits == 8) return c10::ScalarType::Char;
      if (dtype.bits == 16) return c10::ScalarType::Short;
      if (dtype.bits == 32) return c10::ScalarType::Int;
      if (dtype.bits == 64) return c10::ScalarType::Long;
      break;
    case TF_DTYPE_UINT:
      if (dtype.bits == 8) return c10::ScalarType::Byte;
      if (dtype.bits == 16) return c10::ScalarType::UInt16;
      if (dtype.bits == 32) return c10::ScalarType::UInt32;
      if (dtype.bits == 64) return c10::ScalarType::UInt64;
      break;
    case TF_DTYPE_BOOL:
      if (dtype.bits == 8) return c10::ScalarType::Bool;
      break;
  }
  return std::nullopt;
}

// CUDA_HOST (pinned) memory is CPU memory to ATen. nullopt for a device this
// plugin does not serve.
inline std::optional<c10::Device> DeviceOf(tf_device device) {
  switch (device.device_type) {
    case TF_DEVICE_CPU:
    case TF_DEVICE_CUDA_HOST:
      return c10::Device(c10::DeviceType::CPU);
    case TF_DEVICE_CUDA:
      return c10::Device(c10::DeviceType::CUDA,
                         static_cast<c10::DeviceIndex>(device.device_id));
  }
  return std::nullopt;
}

// The ABI's dtypes, in the order the kernel table lists them.
inline constexpr tf_dtype kFloat32{TF_DTYPE_FLOAT, 32, 1};
inline constexpr tf_dtype kFloat64{TF_DTYPE_FLOAT, 64, 1};
inline constexpr tf_dtype kFloat16{TF_DTYPE_FLOAT, 16, 1};
inline constexpr tf_dtype kBFloat16{TF_DTYPE_BFLOAT, 16, 1};
inline constexpr tf_dtype kInt8{TF_DTYPE_INT, 8, 1};
inline constexpr tf_dtype kInt16{TF_DTYPE_INT, 16, 1};
inline constexpr tf_dtype kInt32{TF_DTYPE_INT, 32, 1};
inline constexpr tf_dtype kInt64{TF_DTYPE_INT, 64, 1};
inline constexpr tf_dtype kUInt8{TF_DTYPE_UINT, 8, 1};
inline constexpr tf_dtype kBool{TF_DTYPE_BOOL, 8, 1};
inline constexpr tf_dtype kUInt16{TF_DTYPE_UINT, 16, 1};
inline constexpr tf_dtype kUInt32{TF_DTYPE_UINT, 32, 1};
inline constexpr tf_dtype kUInt64{TF_DTYPE_UINT, 64, 1};

}  // namespace torchferry::aten
