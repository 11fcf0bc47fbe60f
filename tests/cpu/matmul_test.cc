// matmul against a double reference: batched, with transposed and gapped
// operands, a batch broadcast by stride 0, sizes around the kernel's row
// block and column chunk, and empty or k = 0 products.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "cpu_plugin.h"
#include "dtype_reference.h"
#include "expect.h"
#include "test_tensor.h"

using namespace torchferry::cpu_test;

namespace {

struct Dims {
  int64_t batch, m, k, n;
};

std::string DimsText(const Dims& s) {
  return "B" + std::to_string(s.batch) + " m" + std::to_string(s.m) + " k" +
         std::to_string(s.k) + " n" + std::to_string(s.n);
}

// A [B, rows, cols] operand laid out as asked; `shared` makes it one matrix
// seen by every batch (stride 0), as the host passes a 2-D operand beside a
// 3-D one.
TestTensor Operand(tf_dtype d, int64_t batch, int64_t rows, int64_t cols,
                   Layout layout, bool shared) {
  if (!shared) return TestTensor::WithLayout(d, {batch, rows, cols}, layout);
  TestTensor one = TestTensor::WithLayout(d, {rows, cols}, layout);
  std::vector<int64_t> strides = {0, one.strides()[0], one.strides()[1]};
  return TestTensor(d, {batch, rows, cols}, strides, 0);
}

// Element (b, i, j) of a [B, rows, cols] tensor.
double At(const TestTensor& t, int64_t b, int64_t i, int64_t j) {
  return t.Get((b * t.shape()[1] + i) * t.shape()[2] + j);
}

void CheckProduct(tf_dtype d, const Dims& s, TestTensor& a, TestTensor& b,
                  TestTensor& out, uint32_t seed);

void CheckMatmul(tf_dtype d, const Dims& s, Layout a_layout, Layout b_layout,
                 Layout out_layout, bool a_shared, bool b_shared,
                 uint32_t seed) {
  INFO(Describe("matmul", d,
                DimsText(s) + " a " + LayoutName(a_layout) +
                    (a_shared ? " shared" : "") + ", b " +
                    LayoutName(b_layout) + (b_shared ? " shared" : "") +
                    ", out " + LayoutName(out_layout)));
  TestTensor a = Operand(d, s.batch, s.m, s.k, a_layout, a_shared);
  TestTensor b = Operand(d, s.batch, s.k, s.n, b_layout, b_shared);
  TestTensor out = TestTensor::WithLayout(d, {s.batch, s.m, s.n}, out_layout);
  CheckProduct(d, s, a, b, out, seed);
}

void CheckProduct(tf_dtype d, const Dims& s, TestTensor& a, TestTensor& b,
                  TestTensor& out, uint32_t seed) {
  FillRandom(a, -2, 2, seed);
  FillRandom(b, -2, 2, seed + 1);
  const CallResult r =
      CallBuilder().Input(a).Input(b).Output(out).Run("matmul", d);
  INFO(r.message);
  REQUIRE(r.status == TF_OK);

  // Tolerance: k roundings of the accumulator relative to the sum of the
  // terms' magnitudes, plus one rounding of the result to the dtype.
  std::vector<double> want, bounds;
  const double acc_eps = AccumulateEpsilon(d);
  const double out_eps = StorageEpsilon(d);
  for (int64_t bi = 0; bi < s.batch; ++bi) {
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        double sum = 0, magnitude = 0;
        for (int64_t p = 0; p < s.k; ++p) {
          const double term = At(a, bi, i, p) * At(b, bi, p, j);
          sum += term;
          magnitude += std::fabs(term);
        }
        want.push_back(sum);
        bounds.push_back(
            2 * (s.k * acc_eps * magnitude + out_eps * std::fabs(sum)));
      }
    }
  }
  // The bounds are absolute: a relative tolerance of 1 over them.
  ExpectValues(out, want, {1.0, 0.0}, bounds);
}

}  // namespace

TEST_CASE("matmul matches the reference on every layout", "[matmul]") {
  const std::vector<Dims> sizes = {
      {1, 1, 1, 1},
      {2, 5, 7, 3},
      {1, 4, 16, 8},
      {3, 9, 33, 17},
      {1, 6, 5, 300},  // n spans two column chunks
      // More rows than one block of sums (64), a depth past one packed
      // block (256) and a partial column panel; an exact panel.
      {1, 70, 300, 17},
      {2, 4, 257, 16},
  };
  const std::vector<std::vector<Layout>> layouts = {
      {Layout::kContiguous, Layout::kContiguous, Layout::kContiguous},
      {Layout::kReversed, Layout::kContiguous, Layout::kContiguous},
      {Layout::kContiguous, Layout::kReversed, Layout::kContiguous},
      {Layout::kGapped, Layout::kGapped, Layout::kReversed},
  };
  uint32_t seed = 4000;
  for (tf_dtype d : kFloatDtypes) {
    for (const Dims& s : sizes) {
      for (const auto& l : layouts) {
        CheckMatmul(d, s, l[0], l[1], l[2], false, false, seed);
        seed += 2;
      }
    }
  }
}

// float32 with up to 16 rows, or any rows of a b of at most 128 columns,
// and b's rows contiguous is multiplied in place (gemm_rows.cc): a tile of
// rows by vectors of columns, one pass for 16 rows with AVX-512 and four
// with AVX2. Every row count, column
// counts around the tiles' widths and the last partial vector, depths past
// one block of a (256), and b of more than 1 MiB, which is walked 16 rows at
// a time with the sums kept in out between blocks. b's rows lie further
// apart than its width, with a storage offset; out and a in every layout.
TEST_CASE("matmul of a few float32 rows reads b in place", "[matmul]") {
  const auto padded_b = [](int64_t k, int64_t n) {
    return TestTensor(kF32, {1, k, n}, {0, n + 5, 1}, 1);
  };
  uint32_t seed = 4500;
  for (int64_t m = 1; m <= 17; ++m) {
    for (const int64_t n : {1, 15, 17, 49, 130}) {
      for (const int64_t k : {1, 3, 259}) {
        // The depth past one block for some row counts and the widths that
        // have a main tile and a partial vector only: the double reference
        // is the slow part under the sanitizers.
        if (k == 259 && ((n != 17 && n != 49) || (m % 4 != 0 && m % 4 != 1))) {
          continue;
        }
        const Dims s = {1, m, k, n};
        INFO(DimsText(s));
        const Layout a_layout = m % 3 == 0   ? Layout::kReversed
                                : m % 3 == 1 ? Layout::kGapped
                                             : Layout::kContiguous;
        const Layout out_layout = n % 2 == 0 ? Layout::kGapped
                                  : k == 259 ? Layout::kReversed
                                             : Layout::kContiguous;
        TestTensor a = TestTensor::WithLayout(kF32, {1, m, k}, a_layout);
        TestTensor b = padded_b(k, n);
        TestTensor out = TestTensor::WithLayout(kF32, {1, m, n}, out_layout);
        CheckProduct(kF32, s, a, b, out, seed++);
      }
    }
  }
  // More rows than one pass over a narrow b (at most 128 columns), which
  // takes the same tiles pass after pass.
  for (const Dims& s :
       std::vector<Dims>{{1, 40, 259, 128}, {1, 33, 67, 1}, {1, 17, 67, 128}}) {
    INFO(DimsText(s));
    TestTensor a = TestTensor::WithLayout(kF32, {1, s.m, s.k}, Layout::kGapped);
    TestTensor b = padded_b(s.k, s.n);
    TestTensor out =
        TestTensor::WithLayout(kF32, {1, s.m, s.n}, Layout::kReversed);
    CheckProduct(kF32, s, a, b, out, seed++);
  }
  for (const int64_t m : {1, 3}) {
    const Dims s = {1, m, 1100, 240};  // b 1.06 MB; 1100 = 68 * 16 + 12
    INFO(DimsText(s));
    TestTensor a = TestTensor::WithLayout(kF32, {1, m, s.k}, Layout::kGapped);
    TestTensor b = padded_b(s.k, s.n);
    TestTensor out = TestTensor::WithLayout(
        kF32, {1, m, s.n}, m == 3 ? Layout::kReversed : Layout::kContiguous);
    CheckProduct(kF32, s, a, b, out, seed++);
  }
}

// b with unit depth stride (W.t(), a transposed [n, k]) and up to 16 rows:
// dot products in tiles of 4 or 2 rows and 4 columns (matmul.cc's
// DotColumns), for float16 and bfloat16 always and for float32 at one row
// or a depth of 512 or more. Every row count, so that each split into 4-, 2-
// and 1-row tiles occurs; depths with a tail past the last full vector;
// column counts that leave a partial group of 4; a read in place and
// through a copy (transposed); out in every layout.
TEST_CASE("matmul against a transposed b takes dot products", "[matmul]") {
  uint32_t seed = 4700;
  for (tf_dtype d : {kF32, kF16, kBF16}) {
    for (int64_t m = 1; m <= 16; ++m) {
      for (const int64_t k : {37, 517}) {
        for (const int64_t n : {1, 5}) {
          const Dims s = {1, m, k, n};
          const Layout a_layout =
              m % 2 == 0 ? Layout::kContiguous : Layout::kReversed;
          const Layout out_layout = n == 5       ? Layout::kGapped
                                    : m % 3 == 0 ? Layout::kReversed
                                                 : Layout::kContiguous;
          CheckMatmul(d, s, a_layout, Layout::kReversed, out_layout, false,
                      false, seed++);
        }
      }
    }
  }
}

// One float32 row against a W.t() of 1 to 16 MB: on AVX2 each column is
// read as one stream (matmul.cc's DotRowStreamed). Depths with a vector and
// a scalar tail past the unrolled steps, columns packed and spaced apart,
// and out packed and gapped.
TEST_CASE("matmul of one row against a large transposed b", "[matmul]") {
  uint32_t seed = 4900;
  for (const int64_t k : {1037, 2048}) {
    const int64_t n = (int64_t{1} << 20) / (4 * k) + 3;  // just over 1 MB
    for (const int64_t gap : {0, 5}) {
      for (const Layout out_layout : {Layout::kContiguous, Layout::kGapped}) {
        const Dims s = {1, 1, k, n};
        INFO(DimsText(s) << " column gap " << gap << ", out "
                         << LayoutName(out_layout));
        TestTensor a =
            TestTensor::WithLayout(kF32, {1, 1, k}, Layout::kContiguous);
        TestTensor b(kF32, {1, k, n}, {n * (k + gap), 1, k + gap}, 0);
        TestTensor out = TestTensor::WithLayout(kF32, {1, 1, n}, out_layout);
        CheckProduct(kF32, s, a, b, out, seed++);
      }
    }
  }
}

TEST_CASE("matmul repeats a shared operand across the batch", "[matmul]") {
  uint32_t seed = 5000;
  for (tf_dtype d : kFloatDtypes) {
    const Dims s = {3, 5, 6, 7};
    CheckMatmul(d, s, Layout::kContiguous, Layout::kContiguous,
                Layout::kContiguous, true, false, seed++);
    CheckMatmul(d, s, Layout::kReversed, Layout::kContiguous,
                Layout::kContiguous, false, true, seed++);
    CheckMatmul(d, s, Layout::kContiguous, Layout::kGapped, Layout::kContiguous,
                true, true, seed++);
  }
}

TEST_CASE("matmul reads stride-0 rows and columns", "[matmul]") {
  // An operand expanded inside the matrix: a's rows all the same, b's
  // columns all the same.
  for (tf_dtype d : kFloatDtypes) {
    INFO(DtypeName(d));
    TestTensor a(d, {2, 5, 6}, {6, 0, 1}, 2);
    TestTensor b(d, {2, 6, 7}, {6, 1, 0}, 1);
    FillRandom(a, -2, 2, 60);
    FillRandom(b, -2, 2, 61);
    TestTensor out = TestTensor::Contiguous(d, {2, 5, 7});
    REQUIRE(
        CallBuilder().Input(a).Input(b).Output(out).Run("matmul", d).status ==
        TF_OK);
    std::vector<double> want;
    for (int64_t bi = 0; bi < 2; ++bi) {
      for (int64_t i = 0; i < 5; ++i) {
        for (int64_t j = 0; j < 7; ++j) {
          double sum = 0;
          for (int64_t p = 0; p < 6; ++p)
            sum += At(a, bi, i, p) * At(b, bi, p, j);
          want.push_back(sum);
        }
      }
    }
    ExpectValues(out, want, {8 * StorageEpsilon(d), 1e-5});
  }
}

TEST_CASE("matmul handles empty products", "[matmul]") {
  for (tf_dtype d : kFloatDtypes) {
    // k = 0: every output element is an empty sum, 0.
    CheckMatmul(d, {2, 3, 0, 4}, Layout::kContiguous, Layout::kContiguous,
                Layout::kGapped, false, false, 1);
    // Nothing to compute at all.
    CheckMatmul(d, {2, 0, 3, 4}, Layout::kContiguous, Layout::kContiguous,
                Layout::kContiguous, false, false, 2);
    CheckMatmul(d, {0, 2, 3, 4}, Layout::kContiguous, Layout::kContiguous,
                Layout::kContiguous, false, false, 3);
    CheckMatmul(d, {1, 2, 3, 0}, Layout::kContiguous, Layout::kContiguous,
                Layout::kContiguous, false, false, 4);
  }
}

TEST_CASE("matmul accumulates 16-bit inputs in float32", "[matmul]") {
  // 1 + 4096 * 2^-12: in float16 or bfloat16 arithmetic each small term
  // would vanish against the running sum (below half an ulp of 1); in a
  // float32 accumulator they add up to 2.
  for (tf_dtype d : {kF16, kBF16}) {
    INFO(DtypeName(d));
    const int64_t k = 4097;
    TestTensor a = TestTensor::Contiguous(d, {1, 1, k});
    TestTensor b = TestTensor::Contiguous(d, {1, k, 1});
    a.Fill([](int64_t) { return 1.0; });
    b.Fill([](int64_t p) { return p == 0 ? 1.0 : std::ldexp(1.0, -12); });
    TestTensor out = TestTensor::Contiguous(d, {1, 1, 1});
    REQUIRE(
        CallBuilder().Input(a).Input(b).Output(out).Run("matmul", d).status ==
        TF_OK);
    CHECK(out.Get(0) == 2.0);
  }
}
