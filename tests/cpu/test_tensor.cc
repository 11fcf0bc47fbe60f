#include "test_tensor.h"

#include <cstring>
#include <stdexcept>

#include "dtype_reference.h"

namespace torchferry::cpu_test {
namespace {

constexpr unsigned char kGuard = 0xA5;

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = step;
    step *= shape[d] > 0 ? shape[d] : 1;
  }
  return strides;
}

}  // namespace

std::string LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kReversed:
      return "reversed";
    case Layout::kGapped:
      return "gapped+offset";
  }
  return "?";
}

TestTensor::TestTensor(tf_dtype dtype, std::vector<int64_t> shape,
                       std::vector<int64_t> strides, int64_t offset)
    : dtype_(dtype),
      shape_(std::move(shape)),
      strides_(std::move(strides)),
      offset_(offset) {
  if (shape_.size() != strides_.size()) {
    throw std::invalid_argument("TestTensor: shape and strides differ in rank");
  }
  int64_t last = offset_;
  bool empty = false;
  for (size_t d = 0; d < shape_.size(); ++d) {
    if (shape_[d] == 0) empty = true;
    if (shape_[d] > 0) last += (shape_[d] - 1) * strides_[d];
  }
  // One guard element after the view's last element too.
  const int64_t elements = empty ? offset_ + 1 : last + 2;
  storage_.assign(static_cast<size_t>(elements) * ElementSize(dtype_), kGuard);
}

TestTensor TestTensor::Contiguous(tf_dtype dtype, std::vector<int64_t> shape) {
  std::vector<int64_t> strides = RowMajorStrides(shape);
  return TestTensor(dtype, std::move(shape), std::move(strides), 0);
}

TestTensor TestTensor::WithLayout(tf_dtype dtype, std::vector<int64_t> shape,
                                  Layout layout) {
  switch (layout) {
    case Layout::kContiguous:
      return Contiguous(dtype, std::move(shape));
    case Layout::kReversed: {
      std::vector<int64_t> strides(shape.size());
      int64_t step = 1;
      for (size_t d = 0; d < shape.size(); ++d) {
        strides[d] = step;
        step *= shape[d] > 0 ? shape[d] : 1;
      }
      return TestTensor(dtype, std::move(shape), std::move(strides), 0);
    }
    case Layout::kGapped: {
      std::vector<int64_t> strides(shape.size());
      int64_t step = 2;  // the innermost dim skips every other element
      for (size_t d = shape.size(); d-- > 0;) {
        strides[d] = step;
        step *= (shape[d] > 0 ? shape[d] : 1) + 1;
      }
      return TestTensor(dtype, std::move(shape), std::move(strides), 3);
    }
  }
  throw std::invalid_argument("WithLayout: unknown layout");
}

TestTensor TestTensor::Broadcast(tf_dtype dtype, std::vector<int64_t> shape,
                                 const std::vector<int>& broadcast) {
  std::vector<int64_t> compact = shape;
  for (int d : broadcast) compact[d] = 1;
  std::vector<int64_t> strides = RowMajorStrides(compact);
  for (int d : broadcast) strides[d] = 0;
  return TestTensor(dtype, std::move(shape), std::move(strides), 1);
}

int64_t TestTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape_) n *= s;
  return n;
}

std::vector<int64_t> TestTensor::Unravel(int64_t index) const {
  std::vector<int64_t> idx(shape_.size());
  for (size_t d = shape_.size(); d-- > 0;) {
    idx[d] = index % shape_[d];
    index /= shape_[d];
  }
  return idx;
}

int64_t TestTensor::StorageIndex(int64_t index) const {
  if (index < 0 || index >= numel()) {
    throw std::out_of_range("TestTensor: element index out of range");
  }
  const std::vector<int64_t> idx = Unravel(index);
  int64_t at = offset_;
  for (size_t d = 0; d < idx.size(); ++d) at += idx[d] * strides_[d];
  return at;
}

uint64_t TestTensor::GetBits(int64_t index) const {
  uint64_t bits = 0;  // little-endian: the low bytes hold the element
  std::memcpy(&bits, &storage_[StorageIndex(index) * ElementSize(dtype_)],
              ElementSize(dtype_));
  return bits;
}

void TestTensor::SetBits(int64_t index, uint64_t bits) {
  std::memcpy(&storage_[StorageIndex(index) * ElementSize(dtype_)], &bits,
              ElementSize(dtype_));
}

double TestTensor::Get(int64_t index) const {
  return Decode(dtype_, GetBits(index));
}

void TestTensor::Set(int64_t index, double value) {
  SetBits(index, Encode(dtype_, value));
}

void TestTensor::Fill(const std::function<double(int64_t)>& fill) {
  for (int64_t i = 0; i < numel(); ++i) Set(i, fill(i));
}

std::vector<double> TestTensor::Values() const {
  std::vector<double> values(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) values[i] = Get(i);
  return values;
}

tf_tensor TestTensor::View() const {
  tf_tensor t{};
  // As the host does: the offset is folded into data, byte_offset is 0.
  t.data = const_cast<unsigned char*>(storage_.data()) +
           offset_ * ElementSize(dtype_);
  t.device = {TF_DEVICE_CPU, 0};
  t.ndim = static_cast<int32_t>(shape_.size());
  t.dtype = dtype_;
  t.shape = const_cast<int64_t*>(shape_.data());
  t.strides = const_cast<int64_t*>(strides_.data());
  t.byte_offset = 0;
  t.source = nullptr;
  t.source_kind = TF_SOURCE_NONE;
  // torch's rule: compact row-major, where size-1 dims may have any stride
  // and a tensor with no elements always counts as contiguous.
  bool contiguous = true;
  if (numel() > 0) {
    int64_t expected = 1;
    for (size_t d = shape_.size(); d-- > 0;) {
      if (shape_[d] != 1 && strides_[d] != expected) contiguous = false;
      expected *= shape_[d];
    }
  }
  t.flags = contiguous ? TF_TENSOR_CONTIGUOUS : 0u;
  return t;
}

std::vector<bool> TestTensor::CoveredElements() const {
  std::vector<bool> covered(storage_.size() / ElementSize(dtype_), false);
  for (int64_t i = 0; i < numel(); ++i) covered[StorageIndex(i)] = true;
  return covered;
}

bool TestTensor::GuardIntact() const {
  const std::vector<bool> covered = CoveredElements();
  const size_t size = ElementSize(dtype_);
  for (size_t e = 0; e < covered.size(); ++e) {
    if (covered[e]) continue;
    for (size_t b = 0; b < size; ++b) {
      if (storage_[e * size + b] != kGuard) return false;
    }
  }
  return true;
}

}  // namespace torchferry::cpu_test
