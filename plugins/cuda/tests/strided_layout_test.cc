// Checks BuildLayout and StridedLayout::Offsets against plain nested loops:
// merged dims must visit exactly the elements, in the same order, that the
// original shape and strides do. Runs without a GPU.
#include "plugins/cuda/strided_layout.h"

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

using torchferry::cuda::BuildLayout;
using torchferry::cuda::kMaxRank;
using torchferry::cuda::NumElements;
using torchferry::cuda::StridedLayout;

int failures = 0;

// Offsets of every element in row-major order over `shape`, the slow way.
std::vector<int64_t> Reference(const std::vector<int64_t>& shape,
                               const std::vector<int64_t>& strides) {
  std::vector<int64_t> offsets;
  const int64_t numel =
      NumElements(static_cast<int>(shape.size()), shape.data());
  for (int64_t linear = 0; linear < numel; ++linear) {
    int64_t rest = linear, offset = 0;
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      offset += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    offsets.push_back(offset);
  }
  return offsets;
}

void Check(const char* name, const std::vector<int64_t>& shape,
           const std::vector<int64_t>& s0, const std::vector<int64_t>& s1,
           int expected_ndim) {
  const int64_t* strides[2] = {s0.data(), s1.data()};
  StridedLayout<2> layout;
  if (!BuildLayout(static_cast<int>(shape.size()), shape.data(), strides,
                   &layout)) {
    ++failures;
    std::fprintf(stderr, "%s: BuildLayout refused\n", name);
    return;
  }
  if (expected_ndim > 0 && layout.ndim != expected_ndim) {
    ++failures;
    std::fprintf(stderr, "%s: merged into %d dims, expected %d\n", name,
                 layout.ndim, expected_ndim);
  }
  const std::vector<int64_t> want0 = Reference(shape, s0);
  const std::vector<int64_t> want1 = Reference(shape, s1);
  for (size_t i = 0; i < want0.size(); ++i) {
    int64_t got[2];
    layout.Offsets(static_cast<uint32_t>(i), got);
    int64_t got64[2];
    layout.Offsets(static_cast<uint64_t>(i), got64);
    if (got[0] != want0[i] || got[1] != want1[i] || got64[0] != want0[i] ||
        got64[1] != want1[i]) {
      ++failures;
      std::fprintf(
          stderr, "%s: element %zu at (%lld, %lld), expected (%lld, %lld)\n",
          name, i, static_cast<long long>(got[0]),
          static_cast<long long>(got[1]), static_cast<long long>(want0[i]),
          static_cast<long long>(want1[i]));
      return;
    }
  }
}

}  // namespace

int main() {
  // Dense tensors merge into one run of unit stride.
  Check("contiguous", {2, 3, 4}, {12, 4, 1}, {12, 4, 1}, 1);
  Check("scalar", {}, {}, {}, 1);
  Check("ones", {1, 1, 1}, {5, 7, 9}, {1, 1, 1}, 1);
  // A transposed operand keeps two dims.
  Check("transposed", {3, 4}, {4, 1}, {1, 3}, 2);
  // Broadcast (stride 0) merges with its neighbour when both are broadcast.
  Check("broadcast row", {5, 6}, {6, 1}, {0, 1}, 2);
  Check("broadcast all", {5, 6}, {6, 1}, {0, 0}, 1);
  Check("broadcast inner", {2, 3, 4}, {12, 4, 1}, {3, 1, 0}, 2);
  // A slice along the last dim (silu_and_mul's halves) keeps rows apart.
  Check("half rows", {4, 8}, {8, 1}, {16, 1}, 2);
  // The halves of a transposed x (silu_and_mul over x = y.t()).
  Check("transposed halves", {4, 4}, {4, 1}, {1, 4}, 2);
  // Size-1 dims vanish whatever their stride.
  Check("size one", {4, 1, 8}, {8, 99, 1}, {8, 0, 1}, 1);
  // Ten dims of which pairs merge: fits in kMaxRank.
  {
    std::vector<int64_t> shape(10, 2), dense(10), every_other(10);
    int64_t stride = 1;
    for (int d = 9; d >= 0; --d) {
      dense[d] = stride;
      stride *= 2;
    }
    for (int d = 0; d < 10; ++d) every_other[d] = dense[d] * 2;
    Check("ten dims", shape, dense, every_other, 1);
  }
  // Nine dims that cannot merge are kept, nine of them; one dim more than
  // kMaxRank is refused.
  for (const int n : {9, kMaxRank, kMaxRank + 1}) {
    std::vector<int64_t> shape(static_cast<size_t>(n), 2), s0(shape.size()),
        s1(shape.size());
    for (int d = 0; d < n; ++d) {
      // Gaps everywhere in s0 (each stride 4x the one inside it, whose
      // extent is 2x), s1 dense; the strides repeat every 9 dims, so that
      // deep shapes keep them small.
      const int k = (n - 1 - d) % 9;
      s0[static_cast<size_t>(d)] = int64_t{1} << (2 * k + 1);
      s1[static_cast<size_t>(d)] = int64_t{1} << k;
    }
    const int64_t* strides[2] = {s0.data(), s1.data()};
    StridedLayout<2> layout;
    const bool built = BuildLayout(n, shape.data(), strides, &layout);
    if (built != (n <= kMaxRank) || (built && layout.ndim != n)) {
      ++failures;
      std::fprintf(stderr, "%d unmergeable dims: built %d, ndim %d\n", n,
                   static_cast<int>(built), built ? layout.ndim : -1);
    }
  }
  std::printf("strided layout: %d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
