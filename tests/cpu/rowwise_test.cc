// The ops that work along a dimension: silu_and_mul (halves of the last
// dim), rms_norm (a reduction over the last dim) and softmax (over any dim),
// against references in double, on contiguous, transposed, gapped and empty
// tensors.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "cpu_plugin.h"
#include "dtype_reference.h"
#include "expect.h"
#include "test_tensor.h"

using namespace torchferry::cpu_test;

namespace {

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    text += (d ? "," : "") + std::to_string(shape[d]);
  }
  return text + "]";
}

// Reductions: the output's rounding plus a summation's worth of float32.
Tolerance ReductionTolerance(tf_dtype d) {
  if (d.code == TF_DTYPE_BFLOAT) return {1.6e-2, 1e-5};
  if (d.bits == 16) return {2e-3, 1e-6};
  if (d.bits == 32) return {1e-5, 1e-7};
  return {1e-12, 1e-14};
}

const std::vector<Layout> kLayouts = {Layout::kContiguous, Layout::kReversed,
                                      Layout::kGapped};

// The flat index of `idx` in row-major order over `shape`.
int64_t Ravel(const std::vector<int64_t>& idx,
              const std::vector<int64_t>& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

}  // namespace

namespace {

// Softmax along `dim` of x (logical values), stable, in double.
std::vector<double> SoftmaxReference(const TestTensor& x, int dim) {
  const std::vector<int64_t>& shape = x.shape();
  std::vector<double> want(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    std::vector<int64_t> idx = x.Unravel(i);
    if (idx[dim] != 0) continue;  // once per line, from its first element
    double max = -INFINITY;
    for (int64_t k = 0; k < shape[dim]; ++k) {
      idx[dim] = k;
      max = std::max(max, x.Get(Ravel(idx, shape)));
    }
    double sum = 0;
    for (int64_t k = 0; k < shape[dim]; ++k) {
      idx[dim] = k;
      sum += std::exp(x.Get(Ravel(idx, shape)) - max);
    }
    for (int64_t k = 0; k < shape[dim]; ++k) {
      idx[dim] = k;
      const int64_t flat = Ravel(idx, shape);
      want[flat] = std::exp(x.Get(flat) - max) / sum;
    }
  }
  return want;
}

CallResult RunSoftmax(const TestTensor& x, int dim, const TestTensor& out) {
  return CallBuilder().Input(x).AttrInt(dim).Output(out).Run("softmax",
                                                             x.dtype());
}

}  // namespace

TEST_CASE("silu_and_mul matches the reference", "[rowwise]") {
  const std::vector<std::vector<int64_t>> out_shapes = {
      {3, 5}, {2, 3, 17}, {1}, {0, 4}, {4, 0}, {2, 40}};
  uint32_t seed = 1000;
  for (tf_dtype d : kFloatDtypes) {
    for (const auto& out_shape : out_shapes) {
      std::vector<int64_t> x_shape = out_shape;
      x_shape.back() *= 2;
      for (Layout x_layout : kLayouts) {
        for (Layout out_layout : {Layout::kContiguous, Layout::kGapped}) {
          INFO(Describe("silu_and_mul", d,
                        "x " + ShapeText(x_shape) + " " + LayoutName(x_layout) +
                            " -> out " + LayoutName(out_layout)));
          TestTensor x = TestTensor::WithLayout(d, x_shape, x_layout);
          TestTensor out = TestTensor::WithLayout(d, out_shape, out_layout);
          FillRandom(x, -5, 5, seed++);
          const CallResult r =
              CallBuilder().Input(x).Output(out).Run("silu_and_mul", d);
          INFO(r.message);
          REQUIRE(r.status == TF_OK);
          const int64_t half = out_shape.back();
          std::vector<double> want;
          for (int64_t i = 0; i < out.numel(); ++i) {
            std::vector<int64_t> idx = out.Unravel(i);
            const double gate = x.Get(Ravel(idx, x_shape));
            idx.back() += half;
            const double up = x.Get(Ravel(idx, x_shape));
            want.push_back(gate / (1 + std::exp(-gate)) * up);
          }
          ExpectValues(out, want, PointwiseTolerance(d));
        }
      }
    }
  }
}

TEST_CASE("rms_norm matches the reference", "[rowwise]") {
  const std::vector<std::vector<int64_t>> shapes = {
      {4, 37}, {2, 3, 16}, {1, 1}, {64}, {3, 300}, {0, 8}, {3, 0}};
  uint32_t seed = 2000;
  for (tf_dtype d : kFloatDtypes) {
    for (const auto& shape : shapes) {
      const int64_t n = shape.back();
      for (Layout x_layout : kLayouts) {
        for (Layout w_layout : {Layout::kContiguous, Layout::kGapped}) {
          const Layout out_layout = x_layout == Layout::kGapped
                                        ? Layout::kContiguous
                                        : Layout::kGapped;
          INFO(Describe("rms_norm", d,
                        ShapeText(shape) + " x " + LayoutName(x_layout) +
                            ", weight " + LayoutName(w_layout) + ", out " +
                            LayoutName(out_layout)));
          TestTensor x = TestTensor::WithLayout(d, shape, x_layout);
          TestTensor w = TestTensor::WithLayout(d, {n}, w_layout);
          TestTensor out = TestTensor::WithLayout(d, shape, out_layout);
          FillRandom(x, -3, 3, seed++);
          FillRandom(w, 0.5, 1.5, seed++);
          const double eps = 1e-6;
          const CallResult r =
              CallBuilder().Input(x).Input(w).AttrFloat(eps).Output(out).Run(
                  "rms_norm", d);
          INFO(r.message);
          REQUIRE(r.status == TF_OK);
          std::vector<double> want(static_cast<size_t>(x.numel()));
          for (int64_t row = 0; n > 0 && row < x.numel() / n; ++row) {
            double sum = 0;
            for (int64_t j = 0; j < n; ++j) {
              sum += x.Get(row * n + j) * x.Get(row * n + j);
            }
            const double scale = 1 / std::sqrt(sum / n + eps);
            for (int64_t j = 0; j < n; ++j) {
              want[row * n + j] = x.Get(row * n + j) * scale * w.Get(j);
            }
          }
          ExpectValues(out, want, ReductionTolerance(d));
        }
      }
    }
  }
}

TEST_CASE("rms_norm and softmax read broadcast inputs", "[rowwise]") {
  for (tf_dtype d : kFloatDtypes) {
    // One row seen four times (stride 0 over rows), and one value seen
    // along every row (stride 0 along the reduced dim).
    for (int dim : {0, 1}) {
      INFO(Describe("rms_norm/softmax", d,
                    "x broadcast over dim " + std::to_string(dim)));
      TestTensor x = TestTensor::Broadcast(d, {4, 21}, {dim});
      FillRandom(x, -3, 3, 40 + dim);
      TestTensor w = TestTensor::Contiguous(d, {21});
      FillRandom(w, 0.5, 1.5, 50);
      TestTensor out = TestTensor::Contiguous(d, {4, 21});
      REQUIRE(CallBuilder()
                  .Input(x)
                  .Input(w)
                  .AttrFloat(1e-6)
                  .Output(out)
                  .Run("rms_norm", d)
                  .status == TF_OK);
      std::vector<double> want;
      for (int64_t row = 0; row < 4; ++row) {
        double sum = 0;
        for (int64_t j = 0; j < 21; ++j)
          sum += std::pow(x.Get(row * 21 + j), 2);
        for (int64_t j = 0; j < 21; ++j) {
          want.push_back(x.Get(row * 21 + j) / std::sqrt(sum / 21 + 1e-6) *
                         w.Get(j));
        }
      }
      ExpectValues(out, want, ReductionTolerance(d));

      for (int softmax_dim : {0, 1}) {
        INFO("softmax dim " << softmax_dim);
        REQUIRE(RunSoftmax(x, softmax_dim, out).status == TF_OK);
        ExpectValues(out, SoftmaxReference(x, softmax_dim),
                     ReductionTolerance(d));
      }
    }
  }
}

TEST_CASE("rms_norm of a zero row is zero, not NaN", "[rowwise]") {
  for (tf_dtype d : kFloatDtypes) {
    INFO(DtypeName(d));
    TestTensor x = TestTensor::Contiguous(d, {2, 9});
    x.Fill([](int64_t i) { return i < 9 ? 0.0 : 1.0; });
    TestTensor w = TestTensor::Contiguous(d, {9});
    w.Fill([](int64_t) { return 2.0; });
    TestTensor out = TestTensor::Contiguous(d, {2, 9});
    REQUIRE(CallBuilder()
                .Input(x)
                .Input(w)
                .AttrFloat(1e-5)
                .Output(out)
                .Run("rms_norm", d)
                .status == TF_OK);
    std::vector<double> want(18, 0.0);
    for (int i = 9; i < 18; ++i) want[i] = 2.0 / std::sqrt(1.0 + 1e-5);
    ExpectValues(out, want, ReductionTolerance(d));
  }
}

TEST_CASE("add_rms_norm writes the rounded sum, then its norm", "[rowwise]") {
  const std::vector<std::vector<int64_t>> shapes = {
      {4, 37}, {2, 3, 16}, {1, 1}, {3, 300}, {0, 8}};
  uint32_t seed = 3000;
  for (tf_dtype d : kFloatDtypes) {
    for (const auto& shape : shapes) {
      const int64_t n = shape.back();
      for (Layout layout : kLayouts) {
        INFO(Describe("add_rms_norm", d,
                      ShapeText(shape) + " residual " + LayoutName(layout)));
        TestTensor x = TestTensor::Contiguous(d, shape);
        TestTensor residual = TestTensor::WithLayout(d, shape, layout);
        TestTensor w = TestTensor::Contiguous(d, {n});
        TestTensor out = TestTensor::WithLayout(d, shape, Layout::kGapped);
        FillRandom(x, -3, 3, seed++);
        FillRandom(residual, -3, 3, seed++);
        FillRandom(w, 0.5, 1.5, seed++);
        // The sum rounds to the dtype once, as torch's add; the norm reads
        // that rounded sum.
        std::vector<double> sum(static_cast<size_t>(x.numel()));
        for (int64_t i = 0; i < x.numel(); ++i) {
          sum[i] = RoundTo(d, residual.Get(i) + x.Get(i));
        }
        const double eps = 1e-5;
        const CallResult r = CallBuilder()
                                 .Input(x)
                                 .Input(w)
                                 .AttrFloat(eps)
                                 .Output(out)
                                 .Output(residual)
                                 .Run("add_rms_norm", d);
        INFO(r.message);
        REQUIRE(r.status == TF_OK);
        ExpectValues(residual, sum, kExact);
        std::vector<double> want(sum.size());
        for (int64_t row = 0; n > 0 && row < x.numel() / n; ++row) {
          double squares = 0;
          for (int64_t j = 0; j < n; ++j) {
            squares += sum[row * n + j] * sum[row * n + j];
          }
          const double scale = 1 / std::sqrt(squares / n + eps);
          for (int64_t j = 0; j < n; ++j) {
            want[row * n + j] = sum[row * n + j] * scale * w.Get(j);
          }
        }
        ExpectValues(out, want, ReductionTolerance(d));
      }
    }
  }
}

TEST_CASE("softmax matches the reference along every dim", "[rowwise]") {
  // Shapes with more than 64 neighbouring lines exercise the kernel's
  // column chunks; [1] is how a 0-dim tensor arrives.
  const std::vector<std::vector<int64_t>> shapes = {
      {3, 5, 7}, {2, 70, 3}, {4, 130}, {1}, {9}, {0, 5}, {5, 1, 3}, {2, 600}};
  uint32_t seed = 3000;
  for (tf_dtype d : kFloatDtypes) {
    for (const auto& shape : shapes) {
      for (int dim = 0; dim < static_cast<int>(shape.size()); ++dim) {
        for (Layout x_layout : kLayouts) {
          for (Layout out_layout : {Layout::kContiguous, Layout::kReversed}) {
            INFO(Describe("softmax", d,
                          ShapeText(shape) + " dim " + std::to_string(dim) +
                              " x " + LayoutName(x_layout) + ", out " +
                              LayoutName(out_layout)));
            TestTensor x = TestTensor::WithLayout(d, shape, x_layout);
            TestTensor out = TestTensor::WithLayout(d, shape, out_layout);
            FillRandom(x, -8, 8, seed++);
            const CallResult r = RunSoftmax(x, dim, out);
            INFO(r.message);
            REQUIRE(r.status == TF_OK);
            ExpectValues(out, SoftmaxReference(x, dim), ReductionTolerance(d));
          }
        }
      }
    }
  }
}

TEST_CASE("softmax of a line longer than the kernel keeps in float32",
          "[rowwise]") {
  // Past 8192 elements the 16-bit kernels recompute each exponential
  // instead of keeping the line in a float32 buffer.
  for (tf_dtype d : kFloatDtypes) {
    INFO(DtypeName(d));
    TestTensor x = TestTensor::Contiguous(d, {2, 9000});
    FillRandom(x, -8, 8, 3500);
    TestTensor out = TestTensor::Contiguous(d, {2, 9000});
    REQUIRE(RunSoftmax(x, 1, out).status == TF_OK);
    ExpectValues(out, SoftmaxReference(x, 1), ReductionTolerance(d));
  }
}

TEST_CASE("softmax is stable for large inputs and poisoned by NaN",
          "[rowwise]") {
  for (tf_dtype d : kFloatDtypes) {
    INFO(DtypeName(d));
    // Row 0 would overflow exp without subtracting the max; row 1 holds
    // -inf, whose share is exactly 0; row 2 holds a NaN.
    TestTensor x = TestTensor::Contiguous(d, {3, 4});
    const std::vector<double> values = {1000,      1001, 1002, 1003,  //
                                        -INFINITY, 0,    1,    2,     //
                                        0,         NAN,  1,    2};
    x.Fill([&](int64_t i) { return values[i]; });
    for (int dim : {1, 0}) {
      INFO("dim " << dim);
      TestTensor out = TestTensor::Contiguous(d, {3, 4});
      REQUIRE(RunSoftmax(x, dim, out).status == TF_OK);
      std::vector<double> want = SoftmaxReference(x, dim);
      if (dim == 1) {
        CHECK(out.Get(4) == 0.0);
        for (int i = 8; i < 12; ++i) CHECK(std::isnan(out.Get(i)));
      }
      ExpectValues(out, want, ReductionTolerance(d));
    }
  }
}

// The same inside the vector loops (rows of 100: three whole pairs of 16
// lanes and a tail; rows of 5000, which 16-bit lines widen and compare in
// one pass): -inf among finite values, shares whose exponentials are
// subnormal (x - max near -100) or underflow to 0, and a NaN in the middle
// of a vector.
TEST_CASE("softmax's vector loops keep -inf, tiny shares and NaN",
          "[rowwise]") {
  for (tf_dtype d : kFloatDtypes) {
    for (const int64_t kN : {100, 5000}) {
      INFO(DtypeName(d) << " rows of " << kN);
      TestTensor x = TestTensor::Contiguous(d, {3, kN});
      x.Fill([&](int64_t i) {
        const int64_t row = i / kN;
        const int64_t j = i % kN;
        if (row == 0) return j % 7 == 3 ? -INFINITY : 0.05 * j;
        if (row == 1) return j == 40 ? 0.0 : -90.0 - 0.5 * (j % 30);
        return j == 21 ? NAN : 0.01 * j;
      });
      TestTensor out = TestTensor::Contiguous(d, {3, kN});
      REQUIRE(RunSoftmax(x, 1, out).status == TF_OK);
      for (int64_t j = 0; j < kN; ++j) {
        if (j % 7 == 3) CHECK(out.Get(j) == 0.0);
        CHECK(std::isnan(out.Get(2 * kN + j)));
      }
      std::vector<double> want = SoftmaxReference(x, 1);
      for (int64_t j = 0; j < kN; ++j) want[2 * kN + j] = NAN;
      ExpectValues(out, want, ReductionTolerance(d));
    }
  }
}

TEST_CASE("softmax refuses a dim out of range", "[rowwise]") {
  TestTensor x = TestTensor::Contiguous(kF32, {2, 3});
  TestTensor out = TestTensor::Contiguous(kF32, {2, 3});
  const CallResult r = RunSoftmax(x, 2, out);
  CHECK(r.status == TF_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(r.message, Catch::Contains("[0, 2)"));
}
