// cast between every pair of dtypes, and the 16-bit float conversions under
// it: every float16 and bfloat16 bit pattern read back, float32 rounded to
// nearest even (ties checked one by one), NaN kept NaN, and the float-to-int
// edge cases as torch gives them on x86-64.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu_plugin.h"
#include "dtype_reference.h"
#include "expect.h"
#include "test_tensor.h"

using namespace torchferry::cpu_test;

namespace {

CallResult RunCast(const TestTensor& x, const TestTensor& out) {
  return CallBuilder().Input(x).Output(out).Run("cast", x.dtype());
}

float FloatFromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool IsNanBits16(uint64_t bits, tf_dtype d) {
  const uint64_t exponent = d.code == TF_DTYPE_BFLOAT ? 0x7f80 : 0x7c00;
  return (bits & exponent) == exponent && (bits & (0x7fff & ~exponent)) != 0;
}

// What torch's cast gives for a value that fits the destination: floats
// round (16-bit ones from float32, as c10::Half converts), ints truncate and
// wrap, bool is != 0.
double CastReference(double v, tf_dtype to) {
  if (IsFloat(to)) {
    if (to.bits == 16) v = static_cast<float>(v);
    return RoundTo(to, v);
  }
  if (to.code == TF_DTYPE_BOOL) return v != 0 ? 1 : 0;
  return Decode(to, Encode(to, std::trunc(v)));
}

}  // namespace

TEST_CASE("every float16 and bfloat16 bit pattern widens exactly", "[cast]") {
  for (tf_dtype d : {kF16, kBF16}) {
    for (tf_dtype to : {kF32, kF64}) {
      INFO(DtypeName(d) << " -> " << DtypeName(to));
      TestTensor x = TestTensor::Contiguous(d, {65536});
      for (int64_t i = 0; i < 65536; ++i)
        x.SetBits(i, static_cast<uint64_t>(i));
      TestTensor out = TestTensor::Contiguous(to, {65536});
      REQUIRE(RunCast(x, out).status == TF_OK);
      int wrong = 0;
      for (int64_t i = 0; i < 65536; ++i) {
        const double want = d.code == TF_DTYPE_BFLOAT
                                ? DecodeBFloat16(static_cast<uint16_t>(i))
                                : DecodeHalf(static_cast<uint16_t>(i));
        const double got = out.Get(i);
        const bool ok =
            std::isnan(want)
                ? std::isnan(got)
                : got == want && std::signbit(got) == std::signbit(want);
        if (!ok && ++wrong <= 5) {
          UNSCOPED_INFO("bits 0x" << std::hex << i << std::dec << ": got "
                                  << got << ", want " << want);
        }
      }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("float32 rounds to float16 and bfloat16 to nearest even", "[cast]") {
  for (tf_dtype to : {kF16, kBF16}) {
    INFO("float32 -> " << DtypeName(to));
    SECTION("a sweep over float32 bit patterns " + DtypeName(to)) {
      // Every 4099th pattern: all exponents, both signs, inf and NaNs.
      constexpr uint64_t kStep = 4099;
      const int64_t count = static_cast<int64_t>((uint64_t{1} << 32) / kStep);
      TestTensor x = TestTensor::Contiguous(kF32, {count});
      for (int64_t i = 0; i < count; ++i) x.SetBits(i, i * kStep);
      TestTensor out = TestTensor::Contiguous(to, {count});
      REQUIRE(RunCast(x, out).status == TF_OK);
      int wrong = 0;
      for (int64_t i = 0; i < count; ++i) {
        const float f = FloatFromBits(static_cast<uint32_t>(i * kStep));
        const uint64_t got = out.GetBits(i);
        const bool ok =
            std::isnan(f) ? IsNanBits16(got, to) : got == Encode(to, f);
        if (!ok && ++wrong <= 5) {
          UNSCOPED_INFO("float " << f << " (bits 0x" << std::hex << i * kStep
                                 << "): got 0x" << got << ", want 0x"
                                 << Encode(to, f) << std::dec);
        }
      }
      CHECK(wrong == 0);
    }
    SECTION("every tie between neighbours " + DtypeName(to)) {
      // For each finite positive pattern h: the midpoint to h + 1 goes to
      // whichever of the two is even; a float32 ulp either side goes to the
      // nearer one. The midpoints are exact in float32.
      const uint16_t last = to.code == TF_DTYPE_BFLOAT ? 0x7f7f : 0x7bff;
      std::vector<float> inputs;
      std::vector<uint16_t> want;
      for (uint32_t h = 0; h < last; ++h) {
        const double lo = Decode(to, h), hi = Decode(to, h + 1);
        const float mid = static_cast<float>((lo + hi) / 2);
        REQUIRE(static_cast<double>(mid) == (lo + hi) / 2);
        inputs.insert(inputs.end(), {mid, std::nextafter(mid, 0.0f),
                                     std::nextafter(mid, INFINITY), -mid});
        const uint16_t even = (h % 2 == 0) ? h : h + 1;
        want.insert(want.end(), {even, static_cast<uint16_t>(h),
                                 static_cast<uint16_t>(h + 1),
                                 static_cast<uint16_t>(even | 0x8000)});
      }
      const int64_t n = static_cast<int64_t>(inputs.size());
      TestTensor x = TestTensor::Contiguous(kF32, {n});
      for (int64_t i = 0; i < n; ++i) x.Set(i, inputs[i]);
      TestTensor out = TestTensor::Contiguous(to, {n});
      REQUIRE(RunCast(x, out).status == TF_OK);
      int wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (out.GetBits(i) != want[i] && ++wrong <= 5) {
          UNSCOPED_INFO("float " << inputs[i] << ": got 0x" << std::hex
                                 << out.GetBits(i) << ", want 0x" << want[i]
                                 << std::dec);
        }
      }
      CHECK(wrong == 0);
    }
  }
}

TEST_CASE("NaN stays NaN through every float conversion", "[cast]") {
  // Quiet and signalling NaNs of both signs, with payloads only in bits the
  // 16-bit formats drop.
  const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u,
                           0xff800001u, 0x7f800100u, 0x7fa00000u};
  TestTensor x = TestTensor::Contiguous(kF32, {6});
  for (int i = 0; i < 6; ++i) x.SetBits(i, nans[i]);
  for (tf_dtype to : {kF16, kBF16, kF64, kF32}) {
    INFO(DtypeName(to));
    TestTensor out = TestTensor::Contiguous(to, {6});
    REQUIRE(RunCast(x, out).status == TF_OK);
    for (int i = 0; i < 6; ++i) CHECK(std::isnan(out.Get(i)));
    // And back.
    TestTensor back = TestTensor::Contiguous(kF32, {6});
    REQUIRE(RunCast(out, back).status == TF_OK);
    for (int i = 0; i < 6; ++i) CHECK(std::isnan(back.Get(i)));
  }
}

TEST_CASE("a cast to the same dtype copies every bit pattern", "[cast]") {
  // Including signalling NaNs, which a conversion through another float
  // type would quiet.
  for (tf_dtype d : {kF16, kBF16, kF32}) {
    INFO(DtypeName(d));
    const uint64_t patterns = d.bits == 16 ? 65536 : 1 << 20;
    const uint64_t step = d.bits == 16 ? 1 : 4093;  // f32: a spread sample
    TestTensor x = TestTensor::Contiguous(d, {static_cast<int64_t>(patterns)});
    for (uint64_t i = 0; i < patterns; ++i) {
      x.SetBits(static_cast<int64_t>(i), (i * step) & 0xffffffffu);
    }
    x.SetBits(1, d.bits == 16 ? 0x7c01 : 0x7f800001);  // a signalling NaN
    TestTensor out =
        TestTensor::Contiguous(d, {static_cast<int64_t>(patterns)});
    REQUIRE(RunCast(x, out).status == TF_OK);
    int wrong = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(patterns); ++i) {
      if (out.GetBits(i) != x.GetBits(i)) ++wrong;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("cast converts between every pair of dtypes", "[cast]") {
  struct Layouts {
    Layout x, out;
  };
  const std::vector<Layouts> layouts = {
      {Layout::kContiguous, Layout::kContiguous},
      {Layout::kReversed, Layout::kGapped},
      {Layout::kGapped, Layout::kReversed},
  };
  const std::vector<std::vector<int64_t>> shapes = {
      {3, 7}, {}, {0, 2}, {2, 3, 41}};
  uint32_t seed = 6000;
  for (tf_dtype from : kAllDtypes) {
    for (tf_dtype to : kAllDtypes) {
      for (const auto& shape : shapes) {
        for (const Layouts& l : layouts) {
          INFO(DtypeName(from)
               << " -> " << DtypeName(to) << ", x " << LayoutName(l.x)
               << ", out " << LayoutName(l.out) << ", rank " << shape.size());
          TestTensor x = TestTensor::WithLayout(from, shape, l.x);
          TestTensor out = TestTensor::WithLayout(to, shape, l.out);
          // Values every integer destination holds once truncated, except
          // that uint8 sources reach 255 so that int8 must wrap.
          if (from.code == TF_DTYPE_UINT) {
            FillRandom(x, 0, 255, seed++);
          } else {
            FillRandom(x, -100, 100, seed++);
          }
          const CallResult r = RunCast(x, out);
          INFO(r.message);
          REQUIRE(r.status == TF_OK);
          std::vector<double> want;
          for (double v : x.Values()) want.push_back(CastReference(v, to));
          ExpectValues(out, want, kExact);
        }
      }
    }
  }
}

TEST_CASE("float to int casts follow torch at the edges", "[cast]") {
  // Observed from torch on x86-64: out of range, inf and NaN give int32's or
  // int64's minimum, which narrower types then wrap; in range truncates.
  const std::vector<double> values = {1e10, -1e10, NAN, INFINITY, 300.7, -2.9};
  struct Expected {
    tf_dtype to;
    std::vector<int64_t> values;
  };
  const int64_t i32_min = std::numeric_limits<int32_t>::min();
  const int64_t i64_min = std::numeric_limits<int64_t>::min();
  const std::vector<Expected> expected = {
      {kI32, {i32_min, i32_min, i32_min, i32_min, 300, -2}},
      {kI16, {0, 0, 0, 0, 300, -2}},
      {kI8, {0, 0, 0, 0, 44, -2}},
      {kU8, {0, 0, 0, 0, 44, 254}},
      {kI64, {10000000000, -10000000000, i64_min, i64_min, 300, -2}},
      {kBool, {1, 1, 1, 1, 1, 1}},
  };
  for (tf_dtype from : {kF32, kF64}) {
    TestTensor x = TestTensor::Contiguous(from, {6});
    x.Fill([&](int64_t i) { return values[i]; });
    for (const Expected& e : expected) {
      INFO(DtypeName(from) << " -> " << DtypeName(e.to));
      TestTensor out = TestTensor::Contiguous(e.to, {6});
      REQUIRE(RunCast(x, out).status == TF_OK);
      for (int i = 0; i < 6; ++i) {
        INFO("value " << values[i]);
        CHECK(static_cast<int64_t>(out.Get(i)) == e.values[i]);
      }
    }
  }
  SECTION("float16, whose range ends at 65504") {
    TestTensor x = TestTensor::Contiguous(kF16, {6});
    x.Fill([&](int64_t i) { return values[i]; });  // 1e10 becomes inf
    TestTensor out = TestTensor::Contiguous(kI8, {6});
    REQUIRE(RunCast(x, out).status == TF_OK);
    ExpectValues(out, {0, 0, 0, 0, 44, -2}, kExact);
  }
}

TEST_CASE("cast to and from bool", "[cast]") {
  for (tf_dtype from : kFloatDtypes) {
    INFO(DtypeName(from));
    TestTensor x = TestTensor::Contiguous(from, {5});
    const std::vector<double> xv = {-0.0, 0.0, NAN, 0.25, -3};
    x.Fill([&](int64_t i) { return xv[i]; });
    TestTensor out = TestTensor::Contiguous(kBool, {5});
    REQUIRE(RunCast(x, out).status == TF_OK);
    for (int i = 0; i < 5; ++i) CHECK(out.GetBits(i) == (i < 2 ? 0u : 1u));
    TestTensor back = TestTensor::Contiguous(from, {5});
    REQUIRE(RunCast(out, back).status == TF_OK);
    ExpectValues(back, {0, 0, 1, 1, 1}, kExact);
  }
}

TEST_CASE("cast refuses a dtype it does not carry", "[cast]") {
  TestTensor x = TestTensor::Contiguous(kF32, {2});
  // complex64 (DLPack code 5) is a valid DLPack dtype the ABI does not carry.
  const tf_dtype c64 = {5, 64, 1};
  TestTensor out = TestTensor::Contiguous(c64, {2});
  const CallResult r = RunCast(x, out);
  CHECK(r.status == TF_ERROR_UNSUPPORTED);
  CHECK_THAT(r.message,
             Catch::Contains("uint64") && Catch::Contains("expected"));
}
