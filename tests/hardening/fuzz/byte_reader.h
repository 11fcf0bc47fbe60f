// Reads a fuzzer's input from the front, one field at a time; past the end
// every read yields zeros. Fields read from the front keep hand-made seeds
// (tests/hardening/make_corpus.py) easy to write and to read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace torchferry::fuzz {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), left_(size) {}

  uint8_t U8() {
    if (left_ == 0) return 0;
    --left_;
    return *data_++;
  }
  template <typename T>
  T Raw() {
    T value{};
    unsigned char bytes[sizeof(T)] = {};
    for (size_t i = 0; i < sizeof(T); ++i) bytes[i] = U8();
    std::memcpy(&value, bytes, sizeof(T));
    return value;
  }
  // A value in [0, n); n > 0.
  uint32_t Pick(uint32_t n) { return U8() % n; }
  bool Bit() { return U8() & 1; }
  // `length` bytes as a string (may hold NULs).
  std::string Bytes(size_t length) {
    std::string s;
    for (size_t i = 0; i < length; ++i) s.push_back(static_cast<char>(U8()));
    return s;
  }
  size_t left() const { return left_; }

 private:
  const uint8_t* data_;
  size_t left_;
};

}  // namespace torchferry::fuzz
