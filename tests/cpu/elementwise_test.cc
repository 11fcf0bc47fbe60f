// abs, neg, exp, silu, add, mul and clamp against a double reference, over
// every dtype the plugin registers them for and the layouts the host passes:
// contiguous, reversed (transposed), gapped with a storage offset, broadcast
// (stride 0), zero elements, 0-dim, and an output that is its input.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "cpu_plugin.h"
#include "dtype_reference.h"
#include "expect.h"
#include "test_tensor.h"

using namespace torchferry::cpu_test;

namespace {

// [3, 600] runs longer than the kernels' 256-element float32 blocks, with a
// partial block at the end of each run.
const std::vector<std::vector<int64_t>> kShapes = {
    {}, {0, 4}, {7}, {3, 37}, {2, 3, 5}, {4, 1, 9}, {3, 600},
};

struct LayoutPair {
  Layout x;
  Layout out;
};
const std::vector<LayoutPair> kLayoutPairs = {
    {Layout::kContiguous, Layout::kContiguous},
    {Layout::kReversed, Layout::kContiguous},
    {Layout::kContiguous, Layout::kReversed},
    {Layout::kGapped, Layout::kGapped},
    {Layout::kReversed, Layout::kGapped},
};

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    text += (d ? "," : "") + std::to_string(shape[d]);
  }
  return text + "]";
}

// Inputs in a range where every op is well away from overflow.
void FillInput(TestTensor& t, uint32_t seed) {
  if (IsFloat(t.dtype())) {
    FillRandom(t, -6, 6, seed);
  } else {
    FillRandom(t, -1000, 1000, seed);
  }
}

struct UnaryOp {
  std::string name;
  std::vector<tf_dtype> dtypes;
  double (*reference)(double);
  bool exact;  // the result is representable: no rounding allowed
};

const std::vector<UnaryOp>& UnaryOps() {
  static const std::vector<UnaryOp> ops = {
      {"abs", kArithmeticDtypes, [](double v) { return std::fabs(v); }, true},
      {"neg", kArithmeticDtypes, [](double v) { return -v; }, true},
      {"exp", kFloatDtypes, [](double v) { return std::exp(v); }, false},
      {"silu", kFloatDtypes, [](double v) { return v / (1 + std::exp(-v)); },
       false},
  };
  return ops;
}

std::vector<double> MapValues(const std::vector<double>& values,
                              double (*f)(double)) {
  std::vector<double> out;
  for (double v : values) out.push_back(f(v));
  return out;
}

CallResult RunUnary(const std::string& op, const TestTensor& x,
                    const TestTensor& out) {
  return CallBuilder().Input(x).Output(out).Run(op, x.dtype());
}

double ClampReference(double x, double lo, double hi) {
  if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return NAN;
  return std::min(std::max(x, lo), hi);
}

}  // namespace

TEST_CASE("unary ops match the reference on every layout", "[elementwise]") {
  uint32_t seed = 1;
  for (const UnaryOp& op : UnaryOps()) {
    for (tf_dtype d : op.dtypes) {
      for (const auto& shape : kShapes) {
        for (const LayoutPair& layouts : kLayoutPairs) {
          INFO(Describe(op.name, d,
                        ShapeText(shape) + " x " + LayoutName(layouts.x) +
                            " -> out " + LayoutName(layouts.out)));
          TestTensor x = TestTensor::WithLayout(d, shape, layouts.x);
          TestTensor out = TestTensor::WithLayout(d, shape, layouts.out);
          FillInput(x, seed++);
          const CallResult r = RunUnary(op.name, x, out);
          INFO(r.message);
          REQUIRE(r.status == TF_OK);
          ExpectValues(out, MapValues(x.Values(), op.reference),
                       op.exact ? kExact : PointwiseTolerance(d));
        }
      }
    }
  }
}

TEST_CASE("exp and silu hold their tolerance over the whole range",
          "[elementwise]") {
  // exp from where it underflows to 0 (through float32's subnormal
  // results) to past where it overflows, in small steps, so that every
  // branch of the range reduction and both scalings are crossed. silu stops
  // at -80: below about -88.7 exp(-x) overflows float32 and silu is -0, where
  // the double reference is a tiny negative number.
  const int64_t n = 4200;
  for (tf_dtype d : kFloatDtypes) {
    for (const UnaryOp& op : UnaryOps()) {
      if (op.exact) continue;
      const double lo = op.name == "exp" ? -110.0 : -80.0;
      INFO(Describe(op.name, d, "from " + std::to_string(lo) + " to 100"));
      TestTensor x = TestTensor::Contiguous(d, {n});
      x.Fill([&](int64_t i) { return lo + (100.0 - lo) * i / (n - 1); });
      std::vector<double> want = MapValues(x.Values(), op.reference);
      // Past the dtype's largest value the stored result is inf.
      for (double& w : want) {
        if (std::isinf(RoundTo(d, w))) w = RoundTo(d, w);
      }
      TestTensor out = TestTensor::Contiguous(d, {n});
      REQUIRE(RunUnary(op.name, x, out).status == TF_OK);
      ExpectValues(out, want, PointwiseTolerance(d));
    }
  }
}

TEST_CASE("unary ops work in place and on broadcast inputs", "[elementwise]") {
  for (const UnaryOp& op : UnaryOps()) {
    for (tf_dtype d : op.dtypes) {
      const Tolerance tol = op.exact ? kExact : PointwiseTolerance(d);
      for (Layout layout :
           {Layout::kContiguous, Layout::kReversed, Layout::kGapped}) {
        INFO(Describe(op.name, d, "in place, " + LayoutName(layout)));
        TestTensor x = TestTensor::WithLayout(d, {5, 19}, layout);
        FillInput(x, 7);
        const std::vector<double> want = MapValues(x.Values(), op.reference);
        REQUIRE(RunUnary(op.name, x, x).status == TF_OK);
        ExpectValues(x, want, tol);
      }
      // Broadcast over rows (unit-stride runs) and along rows (each run
      // one value).
      for (int dim : {0, 1}) {
        INFO(Describe(op.name, d,
                      "broadcast input, dim " + std::to_string(dim)));
        TestTensor x = TestTensor::Broadcast(d, {6, 11}, {dim});
        FillInput(x, 8);
        TestTensor out = TestTensor::Contiguous(d, {6, 11});
        REQUIRE(RunUnary(op.name, x, out).status == TF_OK);
        ExpectValues(out, MapValues(x.Values(), op.reference), tol);
      }
    }
  }
}

TEST_CASE("unary ops follow torch on special values", "[elementwise]") {
  const double inf = std::numeric_limits<double>::infinity();
  for (tf_dtype d : kFloatDtypes) {
    INFO(DtypeName(d));
    const std::vector<double> x_values = {NAN, inf, -inf, -0.0, 0.0, -100, 100};
    TestTensor x = TestTensor::Contiguous(d, {7});
    x.Fill([&](int64_t i) { return x_values[i]; });
    TestTensor out = TestTensor::Contiguous(d, {7});

    REQUIRE(RunUnary("abs", x, out).status == TF_OK);
    ExpectValues(out, {NAN, inf, inf, 0.0, 0.0, 100, 100}, kExact);
    CHECK_FALSE(std::signbit(out.Get(3)));  // abs(-0.0) is +0.0

    REQUIRE(RunUnary("neg", x, out).status == TF_OK);
    ExpectValues(out, {NAN, -inf, inf, 0.0, -0.0, 100, -100}, kExact);
    CHECK(std::signbit(out.Get(4)));  // neg(0.0) is -0.0

    REQUIRE(RunUnary("exp", x, out).status == TF_OK);
    CHECK(std::isnan(out.Get(0)));
    CHECK(out.Get(1) == inf);
    CHECK(out.Get(2) == 0.0);
    CHECK(out.Get(3) == 1.0);
    // exp(100) overflows every dtype but float64.
    CHECK(out.Get(6) == (d.bits == 64 ? std::exp(100.0) : inf));

    REQUIRE(RunUnary("silu", x, out).status == TF_OK);
    CHECK(std::isnan(out.Get(0)));
    CHECK(out.Get(1) == inf);
    CHECK(std::isnan(out.Get(2)));  // -inf / (1 + inf), as torch computes it
    CHECK(out.Get(5) == Approx(0.0).margin(1e-30));
    CHECK(out.Get(6) == 100.0);
  }
}

TEST_CASE("integer abs and neg wrap like torch", "[elementwise]") {
  SECTION("int32") {
    TestTensor x = TestTensor::Contiguous(kI32, {4});
    const int32_t values[] = {std::numeric_limits<int32_t>::min(), -1, 0,
                              std::numeric_limits<int32_t>::max()};
    for (int i = 0; i < 4; ++i) {
      x.SetBits(i, static_cast<uint32_t>(values[i]));
    }
    TestTensor out = TestTensor::Contiguous(kI32, {4});
    REQUIRE(RunUnary("abs", x, out).status == TF_OK);
    CHECK(static_cast<int32_t>(out.GetBits(0)) ==
          std::numeric_limits<int32_t>::min());
    CHECK(static_cast<int32_t>(out.GetBits(1)) == 1);
    REQUIRE(RunUnary("neg", x, out).status == TF_OK);
    CHECK(static_cast<int32_t>(out.GetBits(0)) ==
          std::numeric_limits<int32_t>::min());
    CHECK(static_cast<int32_t>(out.GetBits(3)) ==
          -std::numeric_limits<int32_t>::max());
  }
  SECTION("int64") {
    TestTensor x = TestTensor::Contiguous(kI64, {2});
    x.SetBits(0, static_cast<uint64_t>(std::numeric_limits<int64_t>::min()));
    x.SetBits(1, static_cast<uint64_t>(int64_t{-5}));
    TestTensor out = TestTensor::Contiguous(kI64, {2});
    REQUIRE(RunUnary("abs", x, out).status == TF_OK);
    CHECK(static_cast<int64_t>(out.GetBits(0)) ==
          std::numeric_limits<int64_t>::min());
    CHECK(static_cast<int64_t>(out.GetBits(1)) == 5);
    REQUIRE(RunUnary("neg", x, out).status == TF_OK);
    CHECK(static_cast<int64_t>(out.GetBits(0)) ==
          std::numeric_limits<int64_t>::min());
  }
}

namespace {

struct BinaryLayouts {
  Layout x;
  Layout y;
  Layout out;
};

// add: out = x + alpha * y, and the magnitude its rounding is relative to.
void ExpectAdd(double alpha, const std::vector<double>& xv,
               const std::vector<double>& yv, const TestTensor& out) {
  std::vector<double> want, scales;
  for (size_t i = 0; i < xv.size(); ++i) {
    want.push_back(xv[i] + alpha * yv[i]);
    scales.push_back(std::fabs(xv[i]) + std::fabs(alpha * yv[i]));
  }
  ExpectValues(out, want, PointwiseTolerance(out.dtype()), scales);
}

void ExpectMul(const std::vector<double>& xv, const std::vector<double>& yv,
               const TestTensor& out) {
  std::vector<double> want;
  for (size_t i = 0; i < xv.size(); ++i) want.push_back(xv[i] * yv[i]);
  ExpectValues(out, want, PointwiseTolerance(out.dtype()));
}

CallResult RunAdd(const TestTensor& x, const TestTensor& y, double alpha,
                  const TestTensor& out) {
  CallBuilder call;
  call.Input(x).Input(y).Output(out);
  if (IsFloat(x.dtype())) {
    call.AttrFloat(alpha);
  } else {
    call.AttrInt(static_cast<int64_t>(alpha));
  }
  return call.Run("add", x.dtype());
}

CallResult RunMul(const TestTensor& x, const TestTensor& y,
                  const TestTensor& out) {
  return CallBuilder().Input(x).Input(y).Output(out).Run("mul", x.dtype());
}

}  // namespace

TEST_CASE("add and mul match the reference on every layout", "[elementwise]") {
  const std::vector<BinaryLayouts> layouts = {
      {Layout::kContiguous, Layout::kContiguous, Layout::kContiguous},
      {Layout::kReversed, Layout::kContiguous, Layout::kGapped},
      {Layout::kGapped, Layout::kReversed, Layout::kContiguous},
      {Layout::kContiguous, Layout::kContiguous, Layout::kReversed},
  };
  uint32_t seed = 100;
  for (tf_dtype d : kArithmeticDtypes) {
    const std::vector<double> alphas =
        IsFloat(d) ? std::vector<double>{1.0, -2.5} : std::vector<double>{1, 3};
    for (const auto& shape : kShapes) {
      for (const BinaryLayouts& l : layouts) {
        INFO(Describe("add/mul", d,
                      ShapeText(shape) + " " + LayoutName(l.x) + ", " +
                          LayoutName(l.y) + " -> " + LayoutName(l.out)));
        TestTensor x = TestTensor::WithLayout(d, shape, l.x);
        TestTensor y = TestTensor::WithLayout(d, shape, l.y);
        TestTensor out = TestTensor::WithLayout(d, shape, l.out);
        FillInput(x, seed++);
        FillInput(y, seed++);
        for (double alpha : alphas) {
          INFO("alpha " << alpha);
          const CallResult r = RunAdd(x, y, alpha, out);
          INFO(r.message);
          REQUIRE(r.status == TF_OK);
          ExpectAdd(alpha, x.Values(), y.Values(), out);
        }
        REQUIRE(RunMul(x, y, out).status == TF_OK);
        ExpectMul(x.Values(), y.Values(), out);
      }
    }
  }
}

TEST_CASE("add and mul broadcast stride-0 operands", "[elementwise]") {
  struct Case {
    std::vector<int64_t> shape;
    std::vector<int> x_broadcast;
    std::vector<int> y_broadcast;
  };
  const std::vector<Case> cases = {
      {{4, 6}, {}, {0}},         // a row added to every row
      {{4, 6}, {}, {1}},         // a column added to every column
      {{4, 6}, {1}, {0}},        // an outer sum
      {{2, 3, 5}, {}, {0, 2}},   // a middle vector
      {{3, 40}, {0}, {}},        // the first operand broadcast
      {{2, 1, 17}, {}, {0, 2}},  // a scalar seen everywhere
  };
  uint32_t seed = 300;
  for (tf_dtype d : kArithmeticDtypes) {
    for (const Case& c : cases) {
      // A full operand either contiguous (so the other's broadcast value is
      // hoisted out of a unit-stride run) or gapped (a strided run).
      for (Layout full : {Layout::kContiguous, Layout::kGapped}) {
        INFO(Describe(
            "add/mul", d,
            ShapeText(c.shape) + " broadcast beside " + LayoutName(full)));
        auto make = [&](const std::vector<int>& broadcast) {
          return broadcast.empty()
                     ? TestTensor::WithLayout(d, c.shape, full)
                     : TestTensor::Broadcast(d, c.shape, broadcast);
        };
        TestTensor x = make(c.x_broadcast);
        TestTensor y = make(c.y_broadcast);
        FillInput(x, seed++);
        FillInput(y, seed++);
        TestTensor out = TestTensor::Contiguous(d, c.shape);
        // alpha != 1 so that swapping x and y shows.
        const double alpha = IsFloat(d) ? 0.5 : 2;
        REQUIRE(RunAdd(x, y, alpha, out).status == TF_OK);
        ExpectAdd(alpha, x.Values(), y.Values(), out);
        REQUIRE(RunMul(x, y, out).status == TF_OK);
        ExpectMul(x.Values(), y.Values(), out);
      }
    }
  }
}

TEST_CASE("add and mul write in place over either input", "[elementwise]") {
  for (tf_dtype d : kArithmeticDtypes) {
    for (Layout layout : {Layout::kContiguous, Layout::kReversed}) {
      INFO(Describe("add/mul", d, "in place, " + LayoutName(layout)));
      const double alpha = IsFloat(d) ? -1.5 : -3;
      TestTensor x = TestTensor::WithLayout(d, {9, 13}, layout);
      TestTensor y = TestTensor::WithLayout(d, {9, 13}, layout);
      // Small enough that the chained products stay exact in int32 and
      // finite in float16.
      const double range = IsFloat(d) ? 6 : 30;
      FillRandom(x, -range, range, 11);
      FillRandom(y, -range, range, 12);
      std::vector<double> xv = x.Values(), yv = y.Values();

      REQUIRE(RunAdd(x, y, alpha, x).status == TF_OK);  // out is x
      ExpectAdd(alpha, xv, yv, x);
      xv = x.Values();
      REQUIRE(RunAdd(x, y, alpha, y).status == TF_OK);  // out is y
      ExpectAdd(alpha, xv, yv, y);
      yv = y.Values();
      REQUIRE(RunMul(y, y, y).status == TF_OK);  // all three the same
      ExpectMul(yv, yv, y);
      yv = y.Values();
      // A broadcast operand beside an output that is the other input.
      TestTensor row = TestTensor::Broadcast(d, {9, 13}, {0});
      FillRandom(row, -range, range, 13);
      const std::vector<double> rv = row.Values();
      REQUIRE(RunMul(row, y, y).status == TF_OK);
      ExpectMul(rv, yv, y);
    }
  }
}

TEST_CASE("integer add and mul wrap like torch", "[elementwise]") {
  SECTION("int32") {
    TestTensor x = TestTensor::Contiguous(kI32, {3});
    TestTensor y = TestTensor::Contiguous(kI32, {3});
    TestTensor out = TestTensor::Contiguous(kI32, {3});
    const int32_t max = std::numeric_limits<int32_t>::max();
    x.SetBits(0, static_cast<uint32_t>(max));
    y.SetBits(0, 1);
    x.SetBits(1, static_cast<uint32_t>(65536));
    y.SetBits(1, static_cast<uint32_t>(65536));
    x.SetBits(2, static_cast<uint32_t>(-7));
    y.SetBits(2, static_cast<uint32_t>(max));
    REQUIRE(RunAdd(x, y, 1, out).status == TF_OK);
    CHECK(static_cast<int32_t>(out.GetBits(0)) ==
          std::numeric_limits<int32_t>::min());
    CHECK(static_cast<int32_t>(out.GetBits(1)) == 131072);
    REQUIRE(RunMul(x, y, out).status == TF_OK);
    CHECK(static_cast<int32_t>(out.GetBits(0)) == max);
    CHECK(static_cast<int32_t>(out.GetBits(1)) == 0);  // 2^32 wraps to 0
    // -7 * (2^31 - 1) = -2^34 + 2^31 + 7, modulo 2^32.
    CHECK(static_cast<int32_t>(out.GetBits(2)) ==
          static_cast<int32_t>(0x80000007u));
  }
  SECTION("int64 with alpha") {
    TestTensor x = TestTensor::Contiguous(kI64, {1});
    TestTensor y = TestTensor::Contiguous(kI64, {1});
    TestTensor out = TestTensor::Contiguous(kI64, {1});
    x.SetBits(0, 1);
    y.SetBits(0, uint64_t{1} << 62);
    REQUIRE(RunAdd(x, y, 4, out).status == TF_OK);  // 4 * 2^62 wraps to 0
    CHECK(static_cast<int64_t>(out.GetBits(0)) == 1);
    REQUIRE(RunAdd(x, y, 2, out).status == TF_OK);  // 2^63 wraps to INT_MIN
    CHECK(static_cast<int64_t>(out.GetBits(0)) ==
          std::numeric_limits<int64_t>::min() + 1);
  }
}

namespace {

enum class Bound { kNone, kScalar, kTensor, kBroadcast };

std::string BoundName(Bound b) {
  switch (b) {
    case Bound::kNone:
      return "none";
    case Bound::kScalar:
      return "scalar";
    case Bound::kTensor:
      return "tensor";
    case Bound::kBroadcast:
      return "broadcast tensor";
  }
  return "?";
}

}  // namespace

TEST_CASE("clamp takes every combination of bounds", "[elementwise]") {
  const std::vector<Bound> kinds = {Bound::kNone, Bound::kScalar,
                                    Bound::kTensor, Bound::kBroadcast};
  const std::vector<int64_t> shape = {5, 18};
  uint32_t seed = 500;
  for (tf_dtype d : kArithmeticDtypes) {
    const bool is_float = IsFloat(d);
    for (Bound lo_kind : kinds) {
      for (Bound hi_kind : kinds) {
        if (lo_kind == Bound::kNone && hi_kind == Bound::kNone) continue;
        for (Layout layout : {Layout::kContiguous, Layout::kReversed}) {
          INFO(Describe("clamp", d,
                        "min " + BoundName(lo_kind) + ", max " +
                            BoundName(hi_kind) + ", " + LayoutName(layout)));
          TestTensor x = TestTensor::WithLayout(d, shape, layout);
          TestTensor out = TestTensor::WithLayout(d, shape, layout);
          FillRandom(x, -6, 6, seed++);
          // Bounds overlap, so min > max happens for tensor bounds.
          TestTensor lo_t =
              lo_kind == Bound::kBroadcast
                  ? TestTensor::Broadcast(d, shape, {0})
                  : TestTensor::WithLayout(d, shape, Layout::kGapped);
          TestTensor hi_t = hi_kind == Bound::kBroadcast
                                ? TestTensor::Broadcast(d, shape, {1})
                                : TestTensor::Contiguous(d, shape);
          FillRandom(lo_t, -4, 1, seed++);
          FillRandom(hi_t, -1, 4, seed++);
          // Scalars that the 16-bit dtypes must round before clamping.
          const double lo_scalar = is_float ? -1.3 : -2;
          const double hi_scalar = is_float ? 2.7 : 3;

          CallBuilder call;
          call.Input(x);
          for (auto [kind, tensor, scalar] :
               {std::tuple{lo_kind, &lo_t, lo_scalar},
                std::tuple{hi_kind, &hi_t, hi_scalar}}) {
            if (kind == Bound::kNone) {
              call.InputNone();
            } else if (kind == Bound::kScalar) {
              if (is_float) {
                call.InputFloat(scalar);
              } else {
                call.InputInt(static_cast<int64_t>(scalar));
              }
            } else {
              call.Input(*tensor);
            }
          }
          call.Output(out);
          const CallResult r = call.Run("clamp", d);
          INFO(r.message);
          REQUIRE(r.status == TF_OK);

          auto bound_at = [&](Bound kind, const TestTensor& t, double scalar,
                              double absent, int64_t i) {
            if (kind == Bound::kNone) return absent;
            if (kind == Bound::kScalar) return RoundTo(d, scalar);
            return t.Get(i);
          };
          std::vector<double> want;
          for (int64_t i = 0; i < x.numel(); ++i) {
            want.push_back(ClampReference(
                x.Get(i), bound_at(lo_kind, lo_t, lo_scalar, -INFINITY, i),
                bound_at(hi_kind, hi_t, hi_scalar, INFINITY, i)));
          }
          ExpectValues(out, want, kExact);
        }
      }
    }
  }
}

TEST_CASE("clamp matches the reference on every layout", "[elementwise]") {
  uint32_t seed = 800;
  for (tf_dtype d : kArithmeticDtypes) {
    const bool is_float = IsFloat(d);
    for (const auto& shape : kShapes) {
      for (const LayoutPair& layouts : kLayoutPairs) {
        INFO(Describe("clamp", d,
                      ShapeText(shape) + " x " + LayoutName(layouts.x) +
                          " -> out " + LayoutName(layouts.out)));
        TestTensor x = TestTensor::WithLayout(d, shape, layouts.x);
        TestTensor out = TestTensor::WithLayout(d, shape, layouts.out);
        TestTensor hi = TestTensor::WithLayout(d, shape, layouts.out);
        FillInput(x, seed++);
        FillRandom(hi, -3, 3, seed++);
        const double lo = is_float ? -2.5 : -300;
        CallBuilder call;
        call.Input(x);
        if (is_float) {
          call.InputFloat(lo);
        } else {
          call.InputInt(static_cast<int64_t>(lo));
        }
        const CallResult r = call.Input(hi).Output(out).Run("clamp", d);
        INFO(r.message);
        REQUIRE(r.status == TF_OK);
        std::vector<double> want;
        for (int64_t i = 0; i < x.numel(); ++i) {
          want.push_back(ClampReference(x.Get(i), lo, hi.Get(i)));
        }
        ExpectValues(out, want, kExact);
      }
    }
  }
}

TEST_CASE("clamp propagates NaN and gives max when min > max",
          "[elementwise]") {
  for (tf_dtype d : kFloatDtypes) {
    INFO(DtypeName(d));
    TestTensor x = TestTensor::Contiguous(d, {4});
    const std::vector<double> xv = {NAN, -5, 0.5, 5};
    x.Fill([&](int64_t i) { return xv[i]; });
    TestTensor out = TestTensor::Contiguous(d, {4});

    REQUIRE(CallBuilder()
                .Input(x)
                .InputFloat(-1)
                .InputFloat(1)
                .Output(out)
                .Run("clamp", d)
                .status == TF_OK);
    ExpectValues(out, {NAN, -1, 0.5, 1}, kExact);

    REQUIRE(CallBuilder()
                .Input(x)
                .InputFloat(2)
                .InputFloat(-1)
                .Output(out)
                .Run("clamp", d)
                .status == TF_OK);
    ExpectValues(out, {NAN, -1, -1, -1}, kExact);

    REQUIRE(CallBuilder()
                .Input(x)
                .InputFloat(NAN)
                .InputNone()
                .Output(out)
                .Run("clamp", d)
                .status == TF_OK);
    ExpectValues(out, {NAN, NAN, NAN, NAN}, kExact);

    TestTensor hi = TestTensor::Contiguous(d, {4});
    const std::vector<double> hv = {1, NAN, 1, 1};
    hi.Fill([&](int64_t i) { return hv[i]; });
    REQUIRE(CallBuilder()
                .Input(x)
                .InputNone()
                .Input(hi)
                .Output(out)
                .Run("clamp", d)
                .status == TF_OK);
    ExpectValues(out, {NAN, NAN, 0.5, 1}, kExact);

    // In place, with a tensor bound.
    REQUIRE(CallBuilder()
                .Input(x)
                .InputFloat(0)
                .Input(hi)
                .Output(x)
                .Run("clamp", d)
                .status == TF_OK);
    ExpectValues(x, {NAN, NAN, 0.5, 1}, kExact);
  }
}

TEST_CASE("uint8 abs is itself and uint8 neg wraps, as torch's",
          "[elementwise]") {
  TestTensor x = TestTensor::Contiguous(kU8, {4});
  const uint8_t values[] = {0, 1, 128, 255};
  for (int i = 0; i < 4; ++i) x.SetBits(i, values[i]);
  TestTensor out = TestTensor::Contiguous(kU8, {4});
  REQUIRE(RunUnary("abs", x, out).status == TF_OK);
  for (int i = 0; i < 4; ++i) CHECK(out.GetBits(i) == values[i]);
  REQUIRE(RunUnary("neg", x, out).status == TF_OK);
  const uint8_t negated[] = {0, 255, 128, 1};
  for (int i = 0; i < 4; ++i) CHECK(out.GetBits(i) == negated[i]);
}

TEST_CASE("add of uint16, uint32 and uint64 wraps modulo 2**bits",
          "[elementwise]") {
  for (tf_dtype d : kWideUnsignedDtypes) {
    INFO(DtypeName(d));
    const uint64_t top =
        d.bits == 64 ? ~uint64_t{0} : (uint64_t{1} << d.bits) - 1;
    TestTensor x = TestTensor::Contiguous(d, {3});
    TestTensor y = TestTensor::Contiguous(d, {3});
    TestTensor out = TestTensor::Contiguous(d, {3});
    x.SetBits(0, top);
    y.SetBits(0, 1);
    x.SetBits(1, 5);
    y.SetBits(1, 7);
    x.SetBits(2, top - 1);
    y.SetBits(2, top);
    // alpha -1 is top: x + top * y = x - y modulo 2**bits.
    REQUIRE(CallBuilder()
                .Input(x)
                .Input(y)
                .Output(out)
                .AttrInt(-1)
                .Run("add", d)
                .status == TF_OK);
    CHECK(out.GetBits(0) == top - 1);
    CHECK(out.GetBits(1) == top - 1);
    CHECK(out.GetBits(2) == top);
    REQUIRE(CallBuilder()
                .Input(x)
                .Input(y)
                .Output(out)
                .AttrInt(1)
                .Run("add", d)
                .status == TF_OK);
    CHECK(out.GetBits(0) == 0);
    CHECK(out.GetBits(1) == 12);
    CHECK(out.GetBits(2) == top - 2);
  }
}

TEST_CASE("clamp of bool is a max then a min", "[elementwise]") {
  TestTensor x = TestTensor::Contiguous(kBool, {4});
  TestTensor lo = TestTensor::Contiguous(kBool, {4});
  TestTensor hi = TestTensor::Contiguous(kBool, {4});
  TestTensor out = TestTensor::Contiguous(kBool, {4});
  const int xs[] = {0, 1, 0, 1}, los[] = {0, 0, 1, 1}, his[] = {1, 0, 1, 0};
  for (int i = 0; i < 4; ++i) {
    x.SetBits(i, xs[i]);
    lo.SetBits(i, los[i]);
    hi.SetBits(i, his[i]);
  }
  REQUIRE(CallBuilder()
              .Input(x)
              .Input(lo)
              .Input(hi)
              .Output(out)
              .Run("clamp", kBool)
              .status == TF_OK);
  for (int i = 0; i < 4; ++i) {
    INFO(i);
    CHECK(out.GetBits(i) == static_cast<uint64_t>((xs[i] | los[i]) & his[i]));
  }
  // A number bound is true when nonzero; an absent one leaves x.
  REQUIRE(CallBuilder()
              .Input(x)
              .InputInt(7)
              .InputNone()
              .Output(out)
              .Run("clamp", kBool)
              .status == TF_OK);
  for (int i = 0; i < 4; ++i) CHECK(out.GetBits(i) == 1);
  REQUIRE(CallBuilder()
              .Input(x)
              .InputNone()
              .InputInt(0)
              .Output(out)
              .Run("clamp", kBool)
              .status == TF_OK);
  for (int i = 0; i < 4; ++i) CHECK(out.GetBits(i) == 0);
  const CallResult r =
      CallBuilder().Input(x).InputFloat(0.5).InputNone().Output(out).Run(
          "clamp", kBool);
  CHECK(r.status == TF_ERROR_INVALID_ARGUMENT);
}

TEST_CASE("clamp on an int dtype refuses a float bound", "[elementwise]") {
  TestTensor x = TestTensor::Contiguous(kI32, {3});
  TestTensor out = TestTensor::Contiguous(kI32, {3});
  const CallResult r =
      CallBuilder().Input(x).InputFloat(0.5).InputNone().Output(out).Run(
          "clamp", kI32);
  CHECK(r.status == TF_ERROR_INVALID_ARGUMENT);
  CHECK_THAT(r.message, Catch::Contains("an int") && Catch::Contains("float"));
}

TEST_CASE("16-bit pointwise ops widen and round every bit pattern exactly",
          "[elementwise]") {
  // The kernels convert float16 and bfloat16 by blocks and vectors (F16C,
  // AVX2 integer code, or branchless loops); these must agree bit for bit
  // with correct rounding. mul by 1 round-trips every pattern (NaN stays
  // NaN, made quiet); add of half an ulp makes a tie at every finite value,
  // and of three quarters of an ulp a plain round-up. abs and neg work on
  // the sign bit alone and keep every other bit, a signalling NaN's too (as
  // torch's vectorised kernels do).
  for (tf_dtype d : {kF16, kBF16}) {
    const int mantissa_bits = d.code == TF_DTYPE_BFLOAT ? 7 : 10;
    const uint32_t quiet_bit = d.code == TF_DTYPE_BFLOAT ? 0x40 : 0x200;
    const int64_t n = 65536;
    TestTensor x = TestTensor::Contiguous(d, {n});
    for (int64_t i = 0; i < n; ++i) x.SetBits(i, static_cast<uint64_t>(i));
    const auto expect_bits = [&](const TestTensor& out, auto want_of) {
      int64_t mismatches = 0;
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t want = want_of(i);
        if (out.GetBits(i) != want && mismatches++ < 5) {
          FAIL_CHECK("pattern " << i << ": got " << out.GetBits(i) << ", want "
                                << want);
        }
      }
      CHECK(mismatches == 0);
    };
    {
      INFO(Describe("mul by 1", d, "every bit pattern"));
      TestTensor one = TestTensor::Contiguous(d, {n});
      for (int64_t i = 0; i < n; ++i) one.Set(i, 1.0);
      TestTensor out = TestTensor::Contiguous(d, {n});
      REQUIRE(RunMul(x, one, out).status == TF_OK);
      expect_bits(out, [&](int64_t i) {
        uint64_t want = static_cast<uint64_t>(i);
        if (std::isnan(x.Get(i))) want |= quiet_bit;
        return want;
      });
    }
    {
      INFO(Describe("abs and neg", d, "every bit pattern"));
      TestTensor out = TestTensor::Contiguous(d, {n});
      REQUIRE(RunUnary("abs", x, out).status == TF_OK);
      expect_bits(out,
                  [](int64_t i) { return static_cast<uint64_t>(i) & 0x7fffu; });
      REQUIRE(RunUnary("neg", x, out).status == TF_OK);
      expect_bits(out,
                  [](int64_t i) { return static_cast<uint64_t>(i) ^ 0x8000u; });
    }
    for (double fraction : {0.5, 0.75}) {
      INFO(Describe("add", d, "x + " + std::to_string(fraction) + " ulp"));
      TestTensor y = TestTensor::Contiguous(d, {n});
      std::vector<double> want(n);
      for (int64_t i = 0; i < n; ++i) {
        const double xv = x.Get(i);
        double yv = 1.0;
        if (std::isfinite(xv) && xv != 0) {
          const double ulp = std::ldexp(1.0, std::ilogb(xv) - mantissa_bits);
          yv = RoundTo(d, std::copysign(fraction * ulp, xv));
        }
        y.Set(i, yv);
        want[i] = RoundTo(d, xv + y.Get(i));
      }
      TestTensor out = TestTensor::Contiguous(d, {n});
      REQUIRE(RunAdd(x, y, 1, out).status == TF_OK);
      ExpectValues(out, want, kExact);
    }
  }
}
