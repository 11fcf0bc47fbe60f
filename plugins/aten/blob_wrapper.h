// The one way this plugin builds an at::Tensor over memory it does not own.
#pragma once

#include <ATen/core/Tensor.h>

namespace torchferry::aten {

// A non-owning wrapper: its DataPtr has no deleter and no context, so the
// wrapper never frees or keeps alive the caller's memory, and building it
// allocates nothing but the TensorImpl and StorageImpl. `device` is passed
// explicitly so that ATen does not ask the driver which device owns `data`.
//
// Sizes and strides must be non-negative (ATen has no negative strides;
// tensor_binding.cc turns such views around first), and the extent they span
// must fit in int64 bytes: anything else throws KernelError before ATen is
// asked. ATen cannot be left to refuse it: torch 2.13's TensorMaker sizes the
// storage in a noexcept function, so its own c10::Error there ends the
// process (std::terminate) instead of reaching our catch.
at::Tensor WrapBlob(void* data, c10::IntArrayRef sizes,
                    c10::IntArrayRef strides, c10::ScalarType dtype,
                    c10::Device device);

}  // namespace torchferry::aten
