// Reads a tensor view through DLPack's own struct, in its own translation
// unit, the way a DLPack-literate plugin would: the compiler cannot see that
// the bytes were written as a tf_tensor.
#pragma once

#include <cstdint>
#include <vector>

struct DLPackReading {
  void* data;
  int32_t device_type;
  int32_t device_id;
  int32_t ndim;
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  uint64_t byte_offset;
};

DLPackReading ReadAsDLTensor(const void* tensor);
