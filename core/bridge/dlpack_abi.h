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

// The DLPack C exchange API (DLPack 1.2/1.3), which a producer's type
// offers as the capsule `__dlpack_c_exchange_api__` ("dlpack_exchange_api");
// torch >= 2.10 does. Only the functions the bridge calls are typed; the
// others keep their place. A table of another major version may lead, by
// prev_api, to an older one of the major this host reads.
struct ExchangeApiHeader {
  PackVersion version;
  ExchangeApiHeader* prev_api;
};
struct ExchangeApi {
  ExchangeApiHeader header;
  void* managed_tensor_allocator;
  int (*managed_tensor_from_py_object_no_sync)(void* py_object,
                                               ManagedTensorVersioned** out);
  void* managed_tensor_to_py_object_no_sync;
  // Non-owning: fills `out` with shape and strides that stay valid while the
  // object lives and is not changed. May be NULL (then the bridge does not
  // take the path). 0 on success, else -1 with a Python exception set.
  int (*dltensor_from_py_object_no_sync)(void* py_object, Tensor* out);
  void* current_work_stream;
};

}  // namespace torchferry::dlpack
