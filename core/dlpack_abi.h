// The DLPack structs the generic `__dlpack__` path consumes, as dlpack.h 1.x
// lays them out. Declared here so the core builds without a particular
// dlpack.h; tests/abi checks tf_tensor against Debian's real header.
#pragma once

#include <cstdint>

namespace torchferry::dlpack {

struct Device {
  int32_t device_type;
  int32_t device_id;
};
struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct ManagedTensor {
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};
struct PackVersion {
  uint32_t major;
  uint32_t minor;
};
constexpr uint64_t kFlagReadOnly = 1ull << 0;
struct ManagedTensorVersioned {
  PackVersion version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;
  Tensor dl_tensor;
};

}  // namespace torchferry::dlpack
