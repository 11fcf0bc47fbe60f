// Every op of the plugin, on every dtype it registers for the CPU, in every
// strategy, with and without the source handle, on contiguous, strided (with
// a storage offset) and empty tensors, checked against an independent
// reference: the op's definition computed in float64 (int64 for integers).
// Each case runs twice so that the second call reuses what the first built.
#include <ATen/TensorOperators.h>
#include <ATen/ops/full.h>

#include <catch2/catch.hpp>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "aten_test_support.h"

namespace torchferry::aten_test {
namespace {

struct Case {
  const char* strategy;
  bool with_source;
  c10::ScalarType dtype;
  Layout layout;
};

template <typename Check>
void ForEachCase(const std::string& op, Check&& check) {
  const std::vector<c10::ScalarType> dtypes = CpuDtypesOf(op);
  REQUIRE(!dtypes.empty());
  for (const char* strategy : kStrategies) {
    UseStrategy(strategy);
    for (const bool with_source : {true, false}) {
      for (const c10::ScalarType dtype : dtypes) {
        for (const Layout layout : kLayouts) {
          for (int round = 0; round < 2; ++round) {
            INFO(op << ": strategy " << strategy << ", "
                    << (with_source ? "with" : "without") << " source, "
                    << c10::toString(dtype) << ", " << LayoutName(layout)
                    << ", round " << round);
            check(Case{strategy, with_source, dtype, layout});
          }
        }
      }
    }
  }
}

// The reference's working type: float64 for floats, int64 for the rest.
at::Tensor Wide(const at::Tensor& t) {
  return t.to(c10::isFloatingType(t.scalar_type()) ? c10::kDouble : c10::kLong);
}

void Expect(CallBuilder& call, const KernelEntry& kernel, const at::Tensor& out,
            const at::Tensor& expected) {
  const tf_status status = call.Run(kernel);
  INFO("kernel message: " << call.message());
  REQUIRE(status == TF_OK);
  INFO("actual: " << Show(out) << "\nexpected: " << Show(expected));
  REQUIRE(Matches(out, expected));
}

// alpha as the host passes it: a float for float dtypes, an int otherwise.
void AddAlpha(CallBuilder& call, c10::ScalarType dtype) {
  if (c10::isFloatingType(dtype)) {
    call.FloatAttr(0.5);
  } else {
    call.IntAttr(dtype == c10::kBool ? 1 : 2);
  }
}

// The same alpha as a scalar for the reference: an int keeps int64 exact.
c10::Scalar Alpha(c10::ScalarType dtype) {
  if (c10::isFloatingType(dtype)) return c10::Scalar(0.5);
  return c10::Scalar(static_cast<int64_t>(dtype == c10::kBool ? 1 : 2));
}

}  // namespace

TEST_CASE("abs and neg match their definitions", "[ops]") {
  for (const std::string op : {"abs", "neg"}) {
    ForEachCase(op, [&](const Case& c) {
      const at::Tensor x = RandomIn(c.layout, {3, 5}, c.dtype);
      const at::Tensor out = OutputIn(c.layout, x.sizes().vec(), c.dtype);
      const at::Tensor expected =
          (op == "abs" ? Wide(x).abs() : Wide(x).neg()).to(c.dtype);
      CallBuilder call(c.with_source);
      call.Tensor(x).Output(out);
      Expect(call, CpuKernel(op, c.dtype), out, expected);
    });
  }
}

TEST_CASE("exp and silu match their definitions", "[ops]") {
  for (const std::string op : {"exp", "silu"}) {
    ForEachCase(op, [&](const Case& c) {
      const at::Tensor x = RandomIn(c.layout, {3, 5}, c.dtype);
      const at::Tensor out = OutputIn(c.layout, x.sizes().vec(), c.dtype);
      const at::Tensor w = Wide(x);
      const at::Tensor expected =
          (op == "exp" ? w.exp() : w / (1 + (-w).exp())).to(c.dtype);
      CallBuilder call(c.with_source);
      call.Tensor(x).Output(out);
      Expect(call, CpuKernel(op, c.dtype), out, expected);
    });
  }
}

TEST_CASE("add with alpha and mul match their definitions", "[ops]") {
  for (const std::string op : {"add", "mul"}) {
    ForEachCase(op, [&](const Case& c) {
      const at::Tensor x = RandomIn(c.layout, {3, 5}, c.dtype);
      const at::Tensor y = RandomIn(c.layout, {3, 5}, c.dtype);
      const at::Tensor out = OutputIn(c.layout, x.sizes().vec(), c.dtype);
      at::Tensor expected = op == "add" ? Wide(x) + Wide(y).mul(Alpha(c.dtype))
                                        : Wide(x) * Wide(y);
      if (c.dtype == c10::kBool) expected = expected.ne(0);
      expected = expected.to(c.dtype);
      CallBuilder call(c.with_source);
      call.Tensor(x).Tensor(y).Output(out);
      if (op == "add") AddAlpha(call, c.dtype);
      Expect(call, CpuKernel(op, c.dtype), out, expected);
    });
  }
}

TEST_CASE("add and mul take operands broadcast by the host", "[ops]") {
  // The host passes y broadcast to out's shape (stride 0) with y itself as
  // the source: the source does not describe the view.
  ForEachCase("add", [&](const Case& c) {
    const at::Tensor x = RandomIn(c.layout, {4, 6}, c.dtype);
    const at::Tensor y = RandomIn(Layout::kContiguous, {1, 6}, c.dtype);
    const at::Tensor y_broadcast = y.expand(x.sizes());
    const at::Tensor out = OutputIn(c.layout, x.sizes().vec(), c.dtype);
    at::Tensor expected = Wide(x) + Wide(y_broadcast).mul(Alpha(c.dtype));
    if (c.dtype == c10::kBool) expected = expected.ne(0);
    CallBuilder call(c.with_source);
    call.Tensor(x).TensorViewOf(y_broadcast, y).Output(out);
    AddAlpha(call, c.dtype);
    Expect(call, CpuKernel("add", c.dtype), out, expected.to(c.dtype));
  });
}

TEST_CASE("clamp takes scalar, tensor, mixed and absent bounds", "[ops]") {
  ForEachCase("clamp", [&](const Case& c) {
    const bool is_float = c10::isFloatingType(c.dtype);
    at::Tensor x = RandomIn(c.layout, {3, 5}, c.dtype);
    if (is_float && x.numel() > 0) {
      // NaN in x must come out as NaN whatever the bounds.
      x.select(0, 0).select(0, 0).fill_(
          std::numeric_limits<double>::quiet_NaN());
    }
    const double lo = is_float ? -1.5 : (c.dtype == c10::kByte ? 5 : -5);
    const double hi = is_float ? 2.0 : (c.dtype == c10::kByte ? 30 : 7);
    const at::Tensor lo_tensor = RandomIn(c.layout, {3, 5}, c.dtype);
    const at::Tensor hi_tensor = RandomIn(c.layout, {3, 5}, c.dtype);
    const auto scalar = [&](CallBuilder& call, double value) {
      if (is_float) {
        call.FloatInput(value);
      } else {
        call.IntInput(static_cast<int64_t>(value));
      }
    };
    const at::Tensor w = Wide(x);
    struct Bounds {
      const char* name;
      std::function<void(CallBuilder&)> add_min;
      std::function<void(CallBuilder&)> add_max;
      at::Tensor expected;
    };
    const std::vector<Bounds> all_bounds = {
        {"scalar min and max", [&](CallBuilder& b) { scalar(b, lo); },
         [&](CallBuilder& b) { scalar(b, hi); }, w.clamp_min(lo).clamp_max(hi)},
        {"scalar min only", [&](CallBuilder& b) { scalar(b, lo); },
         [](CallBuilder& b) { b.None(); }, w.clamp_min(lo)},
        {"scalar max only", [](CallBuilder& b) { b.None(); },
         [&](CallBuilder& b) { scalar(b, hi); }, w.clamp_max(hi)},
        {"tensor min and max", [&](CallBuilder& b) { b.Tensor(lo_tensor); },
         [&](CallBuilder& b) { b.Tensor(hi_tensor); },
         w.clamp_min(Wide(lo_tensor)).clamp_max(Wide(hi_tensor))},
        {"tensor max only", [](CallBuilder& b) { b.None(); },
         [&](CallBuilder& b) { b.Tensor(hi_tensor); },
         w.clamp_max(Wide(hi_tensor))},
        {"tensor min, scalar max", [&](CallBuilder& b) { b.Tensor(lo_tensor); },
         [&](CallBuilder& b) { scalar(b, hi); },
         w.clamp_min(Wide(lo_tensor)).clamp_max(hi)},
        {"scalar min, tensor max", [&](CallBuilder& b) { scalar(b, lo); },
         [&](CallBuilder& b) { b.Tensor(hi_tensor); },
         w.clamp_min(lo).clamp_max(Wide(hi_tensor))},
    };
    for (const Bounds& bounds : all_bounds) {
      INFO("bounds: " << bounds.name);
      const at::Tensor out = OutputIn(c.layout, x.sizes().vec(), c.dtype);
      CallBuilder call(c.with_source);
      call.Tensor(x);
      bounds.add_min(call);
      bounds.add_max(call);
      call.Output(out);
      Expect(call, CpuKernel("clamp", c.dtype), out,
             bounds.expected.to(c.dtype));
    }
  });
}

TEST_CASE("elementwise ops may write over their input", "[ops]") {
  // The ABI lets abs, neg, exp, silu, add, mul and clamp take an output that
  // is exactly an input.
  for (const char* strategy : kStrategies) {
    UseStrategy(strategy);
    INFO("strategy " << strategy);
    at::Tensor x = RandomIn(Layout::kStridedWithOffset, {3, 5}, c10::kFloat);
    const at::Tensor expected = Wide(x).neg().clamp_min(-1.0).to(c10::kFloat);
    CallBuilder neg(true);
    neg.Tensor(x).Output(x);
    REQUIRE(neg.Run(CpuKernel("neg", c10::kFloat)) == TF_OK);
    CallBuilder clamp(true);
    clamp.Tensor(x).FloatInput(-1.0).None().Output(x);
    REQUIRE(clamp.Run(CpuKernel("clamp", c10::kFloat)) == TF_OK);
    REQUIRE(Matches(x, expected));
  }
}

TEST_CASE("stack inserts the new dimension where asked", "[ops]") {
  ForEachCase("stack", [&](const Case& c) {
    const std::vector<at::Tensor> xs = {RandomIn(c.layout, {3, 5}, c.dtype),
                                        RandomIn(c.layout, {3, 5}, c.dtype),
                                        RandomIn(c.layout, {3, 5}, c.dtype)};
    for (int64_t dim = 0; dim <= 2; ++dim) {
      INFO("dim " << dim);
      std::vector<int64_t> sizes = xs[0].sizes().vec();
      sizes.insert(sizes.begin() + dim, 3);
      const at::Tensor out = OutputIn(c.layout, sizes, c.dtype);
      CallBuilder call(c.with_source);
      call.List(xs).IntAttr(dim).Output(out);
      const tf_status status = call.Run(CpuKernel("stack", c.dtype));
      INFO(call.message());
      REQUIRE(status == TF_OK);
      for (int64_t i = 0; i < 3; ++i) {
        REQUIRE(out.select(dim, i).equal(xs[i]));
      }
    }
  });
}

TEST_CASE("cast converts to every dtype as ATen does", "[ops]") {
  const std::vector<c10::ScalarType> targets = CpuDtypesOf("noop");
  ForEachCase("cast", [&](const Case& c) {
    const at::Tensor x = RandomIn(c.layout, {3, 5}, c.dtype);
    for (const c10::ScalarType target : targets) {
      INFO("to " << c10::toString(target));
      const at::Tensor out = OutputIn(c.layout, x.sizes().vec(), target);
      CallBuilder call(c.with_source);
      call.Tensor(x).Output(out);
      Expect(call, CpuKernel("cast", c.dtype), out, x.to(target));
    }
  });
}

TEST_CASE("cast truncates floats toward zero and maps nonzero to true",
          "[ops]") {
  const at::Tensor x =
      at::full({4}, 0.0, at::TensorOptions().dtype(c10::kFloat));
  x[0].fill_(-2.75);
  x[1].fill_(2.75);
  x[2].fill_(0.25);
  const at::Tensor as_int =
      at::full({4}, 9, at::TensorOptions().dtype(c10::kInt));
  const at::Tensor as_bool =
      at::full({4}, false, at::TensorOptions().dtype(c10::kBool));
  for (const char* strategy : kStrategies) {
    UseStrategy(strategy);
    CallBuilder to_int(false);
    to_int.Tensor(x).Output(as_int);
    REQUIRE(to_int.Run(CpuKernel("cast", c10::kFloat)) == TF_OK);
    CHECK(as_int[0].item<int32_t>() == -2);
    CHECK(as_int[1].item<int32_t>() == 2);
    CHECK(as_int[2].item<int32_t>() == 0);
    CHECK(as_int[3].item<int32_t>() == 0);
    CallBuilder to_bool(false);
    to_bool.Tensor(x).Output(as_bool);
    REQUIRE(to_bool.Run(CpuKernel("cast", c10::kFloat)) == TF_OK);
    CHECK(as_bool[0].item<bool>());
    CHECK(as_bool[2].item<bool>());
    CHECK_FALSE(as_bool[3].item<bool>());
  }
}

TEST_CASE("silu_and_mul gates the second half by the silu of the first",
          "[ops]") {
  ForEachCase("silu_and_mul", [&](const Case& c) {
    const at::Tensor x = RandomIn(c.layout, {3, 8}, c.dtype);
    std::vector<int64_t> sizes = x.sizes().vec();
    sizes.back() = 4;
    const at::Tensor out = OutputIn(c.layout, sizes, c.dtype);
    const at::Tensor gate = Wide(x).narrow(-1, 0, 4);
    const at::Tensor up = Wide(x).narrow(-1, 4, 4);
    const at::Tensor expected = (gate / (1 + (-gate).exp()) * up).to(c.dtype);
    CallBuilder call(c.with_source);
    call.Tensor(x).Output(out);
    Expect(call, CpuKernel("silu_and_mul", c.dtype), out, expected);
  });
}

TEST_CASE("rms_norm normalises the last dimension and scales by the weight",
          "[ops]") {
  ForEachCase("rms_norm", [&](const Case& c) {
    const double eps = 1e-6;
    const at::Tensor x = RandomIn(c.layout, {3, 8}, c.dtype);
    const at::Tensor weight =
        RandomIn(c.layout == Layout::kEmpty ? Layout::kContiguous : c.layout,
                 {8}, c.dtype);
    const at::Tensor out = OutputIn(c.layout, x.sizes().vec(), c.dtype);
    const at::Tensor w = Wide(x);
    const at::Tensor expected =
        (w / ((w * w).mean({-1}, /*keepdim=*/true) + eps).sqrt() * Wide(weight))
            .to(c.dtype);
    CallBuilder call(c.with_source);
    call.Tensor(x).Tensor(weight).FloatAttr(eps).Output(out);
    Expect(call, CpuKernel("rms_norm", c.dtype), out, expected);
  });
}

TEST_CASE("softmax normalises along the given dimension", "[ops]") {
  ForEachCase("softmax", [&](const Case& c) {
    const at::Tensor x = RandomIn(c.layout, {3, 5}, c.dtype);
    for (int64_t dim = 0; dim < 2; ++dim) {
      INFO("dim " << dim);
      const at::Tensor out = OutputIn(c.layout, x.sizes().vec(), c.dtype);
      const at::Tensor shifted =
          Wide(x) - (x.numel() > 0 ? Wide(x).amax({dim}, true) : Wide(x));
      const at::Tensor e = shifted.exp();
      const at::Tensor expected = (e / e.sum({dim}, true)).to(c.dtype);
      CallBuilder call(c.with_source);
      call.Tensor(x).IntAttr(dim).Output(out);
      Expect(call, CpuKernel("softmax", c.dtype), out, expected);
    }
  });
}

TEST_CASE("matmul multiplies batches of matrices", "[ops]") {
  ForEachCase("matmul", [&](const Case& c) {
    const at::Tensor a = RandomIn(c.layout, {2, 3, 4}, c.dtype);
    const at::Tensor b = RandomIn(c.layout, {2, 4, 5}, c.dtype);
    const at::Tensor out = OutputIn(c.layout, {a.size(0), 3, 5}, c.dtype);
    const at::Tensor expected = Wide(a).bmm(Wide(b)).to(c.dtype);
    CallBuilder call(c.with_source);
    call.Tensor(a).Tensor(b).Output(out);
    Expect(call, CpuKernel("matmul", c.dtype), out, expected);
  });
}

TEST_CASE("matmul takes 2-D operands as the host lifts them to 3-D", "[ops]") {
  // A 2-D operand arrives with a batch of 1 prepended, or, beside a 3-D one,
  // with batch stride 0; its source is still the 2-D tensor, which bmm
  // could not even take.
  ForEachCase("matmul", [&](const Case& c) {
    if (c.layout == Layout::kEmpty) return;
    const at::Tensor a = RandomIn(c.layout, {3, 4}, c.dtype);
    const at::Tensor b = RandomIn(c.layout, {4, 5}, c.dtype);
    const at::Tensor a_3d = a.unsqueeze(0);
    const at::Tensor b_3d = b.unsqueeze(0);
    const at::Tensor out = OutputIn(c.layout, {1, 3, 5}, c.dtype);
    CallBuilder call(c.with_source);
    call.TensorViewOf(a_3d, a).TensorViewOf(b_3d, b).Output(out);
    Expect(call, CpuKernel("matmul", c.dtype), out,
           Wide(a).mm(Wide(b)).unsqueeze(0).to(c.dtype));

    const at::Tensor batch = RandomIn(c.layout, {2, 3, 4}, c.dtype);
    const at::Tensor b_batched = b.unsqueeze(0).expand({2, 4, 5});
    const at::Tensor batched_out = OutputIn(c.layout, {2, 3, 5}, c.dtype);
    CallBuilder batched(c.with_source);
    batched.Tensor(batch).TensorViewOf(b_batched, b).Output(batched_out);
    Expect(batched, CpuKernel("matmul", c.dtype), batched_out,
           Wide(batch).matmul(Wide(b)).to(c.dtype));
  });
}

TEST_CASE("noop binds any tensors and succeeds", "[ops]") {
  ForEachCase("noop", [&](const Case& c) {
    const at::Tensor x = RandomIn(c.layout, {3, 5}, c.dtype);
    const at::Tensor y = RandomIn(c.layout, {2}, c.dtype);
    CallBuilder call(c.with_source);
    call.Tensor(x).Tensor(y);
    REQUIRE(call.Run(CpuKernel("noop", c.dtype)) == TF_OK);
  });
  CallBuilder nothing(false);
  REQUIRE(nothing.Run(CpuKernel("noop", c10::kFloat)) == TF_OK);
}

}  // namespace torchferry::aten_test
