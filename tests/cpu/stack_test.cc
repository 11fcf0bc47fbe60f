// stack for every dtype and every dim, with inputs of mixed layouts (the
// strided copy) and all-contiguous ones (the block copy), against an index
// by index reference.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu_plugin.h"
#include "dtype_reference.h"
#include "expect.h"
#include "test_tensor.h"

using namespace torchferry::cpu_test;

namespace {

// out[..., t, ...] (t at `dim`) is xs[t][...].
std::vector<double> StackReference(const std::vector<TestTensor>& xs, int dim,
                                   const TestTensor& out) {
  std::vector<double> want;
  const std::vector<int64_t>& shape = xs[0].shape();
  for (int64_t i = 0; i < out.numel(); ++i) {
    std::vector<int64_t> idx = out.Unravel(i);
    const int64_t t = idx[dim];
    idx.erase(idx.begin() + dim);
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
    want.push_back(xs[t].Get(flat));
  }
  return want;
}

void CheckStack(tf_dtype d, const std::vector<int64_t>& shape, int dim,
                const std::vector<Layout>& input_layouts, Layout out_layout,
                uint32_t seed) {
  std::string layouts;
  for (Layout l : input_layouts) layouts += LayoutName(l) + " ";
  INFO(Describe("stack", d,
                std::to_string(shape.size()) + "-d inputs " + layouts +
                    "at dim " + std::to_string(dim) + " -> out " +
                    LayoutName(out_layout)));
  std::vector<TestTensor> xs;
  for (Layout l : input_layouts) {
    xs.push_back(TestTensor::WithLayout(d, shape, l));
    FillRandom(xs.back(), -50, 50, seed++);
  }
  std::vector<int64_t> out_shape = shape;
  out_shape.insert(out_shape.begin() + dim,
                   static_cast<int64_t>(input_layouts.size()));
  TestTensor out = TestTensor::WithLayout(d, out_shape, out_layout);
  std::vector<const TestTensor*> pointers;
  for (const TestTensor& x : xs) pointers.push_back(&x);
  const CallResult r =
      CallBuilder().InputList(pointers).AttrInt(dim).Output(out).Run("stack",
                                                                     d);
  INFO(r.message);
  REQUIRE(r.status == TF_OK);
  ExpectValues(out, StackReference(xs, dim, out), kExact);
}

}  // namespace

TEST_CASE("stack joins tensors of every dtype along every dim", "[stack]") {
  const std::vector<std::vector<int64_t>> shapes = {
      {3, 4}, {}, {2, 0}, {2, 3, 5}, {6}};
  uint32_t seed = 7000;
  for (tf_dtype d : kAllDtypes) {
    for (const auto& shape : shapes) {
      for (int dim = 0; dim <= static_cast<int>(shape.size()); ++dim) {
        // Mixed layouts: the strided path.
        CheckStack(d, shape, dim,
                   {Layout::kContiguous, Layout::kReversed, Layout::kGapped},
                   Layout::kContiguous, seed);
        CheckStack(d, shape, dim, {Layout::kGapped, Layout::kContiguous},
                   Layout::kReversed, seed + 10);
        // All contiguous: the block copy.
        CheckStack(d, shape, dim,
                   {Layout::kContiguous, Layout::kContiguous,
                    Layout::kContiguous, Layout::kContiguous},
                   Layout::kContiguous, seed + 20);
        // One input.
        CheckStack(d, shape, dim, {Layout::kReversed}, Layout::kContiguous,
                   seed + 30);
        seed += 40;
      }
    }
  }
}

TEST_CASE("stack takes a broadcast input", "[stack]") {
  for (tf_dtype d : {kF32, kBF16, kI64, kBool}) {
    INFO(DtypeName(d));
    TestTensor a = TestTensor::Broadcast(d, {4, 5}, {0});
    TestTensor b = TestTensor::Contiguous(d, {4, 5});
    FillRandom(a, -9, 9, 1);
    FillRandom(b, -9, 9, 2);
    TestTensor out = TestTensor::Contiguous(d, {4, 2, 5});
    REQUIRE(CallBuilder()
                .InputList({&a, &b})
                .AttrInt(1)
                .Output(out)
                .Run("stack", d)
                .status == TF_OK);
    std::vector<TestTensor> xs;
    xs.push_back(a);
    xs.push_back(b);
    ExpectValues(out, StackReference(xs, 1, out), kExact);
  }
}
