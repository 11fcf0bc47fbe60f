// Which device types, dtypes and statuses ABI v1 knows, and how to name them
// in messages. A plugin kernel keyed by anything else is rejected.
#pragma once

#include <cstdint>
#include <string>

#include "abi/torchferry.h"

namespace torchferry {

// CPU, CUDA, CUDA host and ROCm. META is a host-side placeholder that never
// reaches a kernel, so no kernel may be registered for it.
bool IsKnownDeviceType(int32_t device_type);

// The dtypes of loader/dtype_table.h (float16/32/64, bfloat16,
// int8/16/32/64, uint8/16/32/64 and bool of 8 bits), lanes 1.
bool IsKnownDtype(tf_dtype dtype);

// "float32", "bool", ...; an unknown dtype reads "dtype(code=3, bits=32,
// lanes=1)" so that a message shows exactly what was found.
std::string DtypeName(tf_dtype dtype);

// "cpu", "cuda", ...; an unknown one reads "device_type 7".
std::string DeviceName(int32_t device_type);

// "TF_OK", "TF_ERROR_DEVICE", ...; an unknown one reads "status 42".
std::string StatusName(tf_status status);

}  // namespace torchferry
