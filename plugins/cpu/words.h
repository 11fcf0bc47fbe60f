// Kernels that only move elements (stack, cat, embedding) copy them as
// unsigned words of the element's width: one instantiation per width serves
// every dtype.
#pragma once

#include <cstddef>
#include <cstdint>

namespace torchferry::cpu {

template <size_t kBytes>
struct UnsignedOfSize;
template <>
struct UnsignedOfSize<1> {
  using type = uint8_t;
};
template <>
struct UnsignedOfSize<2> {
  using type = uint16_t;
};
template <>
struct UnsignedOfSize<4> {
  using type = uint32_t;
};
template <>
struct UnsignedOfSize<8> {
  using type = uint64_t;
};

template <typename T>
using WordOf = typename UnsignedOfSize<sizeof(T)>::type;

}  // namespace torchferry::cpu
