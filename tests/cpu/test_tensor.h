// A tensor for the kernel tests: its own storage, any shape, strides and
// storage offset, and a tf_tensor view of it built the way the host builds
// one. Storage outside the view is filled with a guard byte so a test can
// prove that a kernel wrote nothing it should not have.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "abi/torchferry.h"

namespace torchferry::cpu_test {

// How a test lays a logical shape out in memory.
enum class Layout {
  kContiguous,  // row-major, compact
  kReversed,    // dims stored in reverse order (a transpose for 2-D)
  kGapped,      // row-major with a gap after every dim and a storage offset
};

std::string LayoutName(Layout layout);

class TestTensor {
 public:
  // The element at index idx lives at storage element
  // `offset + sum(idx[d] * strides[d])`; storage is sized to fit.
  TestTensor(tf_dtype dtype, std::vector<int64_t> shape,
             std::vector<int64_t> strides, int64_t offset);

  static TestTensor Contiguous(tf_dtype dtype, std::vector<int64_t> shape);
  static TestTensor WithLayout(tf_dtype dtype, std::vector<int64_t> shape,
                               Layout layout);
  // Stride 0 on every dim listed in `broadcast`, as the host passes an
  // operand broadcast to a larger shape.
  static TestTensor Broadcast(tf_dtype dtype, std::vector<int64_t> shape,
                              const std::vector<int>& broadcast);

  tf_dtype dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t numel() const;

  // Elements by logical row-major index (what torch's flatten would give).
  double Get(int64_t index) const;
  void Set(int64_t index, double value);  // rounds to the dtype
  uint64_t GetBits(int64_t index) const;
  void SetBits(int64_t index, uint64_t bits);
  // Sets every element to fill(index); for a broadcast tensor the last
  // write to each shared element wins.
  void Fill(const std::function<double(int64_t)>& fill);
  std::vector<double> Values() const;

  // The multi-index of a logical index, and back.
  std::vector<int64_t> Unravel(int64_t index) const;

  // The view a kernel sees; valid while this tensor lives and keeps its
  // shape. TF_TENSOR_CONTIGUOUS is set by torch's rule (size-1 dims may have
  // any stride).
  tf_tensor View() const;

  // True when no byte outside the view's elements changed since
  // construction.
  bool GuardIntact() const;

 private:
  int64_t StorageIndex(int64_t index) const;
  std::vector<bool> CoveredElements() const;

  tf_dtype dtype_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  int64_t offset_;
  std::vector<unsigned char> storage_;
};

}  // namespace torchferry::cpu_test
