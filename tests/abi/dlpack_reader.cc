#include "dlpack_reader.h"

#include <dlpack/dlpack.h>

DLPackReading ReadAsDLTensor(const void* tensor) {
  const auto* dl = static_cast<const DLTensor*>(tensor);
  DLPackReading r;
  r.data = dl->data;
  r.device_type = static_cast<int32_t>(dl->device.device_type);
  r.device_id = dl->device.device_id;
  r.ndim = dl->ndim;
  r.code = dl->dtype.code;
  r.bits = dl->dtype.bits;
  r.lanes = dl->dtype.lanes;
  r.shape.assign(dl->shape, dl->shape + dl->ndim);
  r.strides.assign(dl->strides, dl->strides + dl->ndim);
  r.byte_offset = dl->byte_offset;
  return r;
}
