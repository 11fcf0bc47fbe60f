// silu_and_mul: out = silu(x[..., :d]) * x[..., d:], the gated activation of
// transformer MLPs. Both halves of x are views with x's strides over out's
// shape, so the elementwise engine does the walking.
#include <cmath>

#include "call.h"
#include "dtype.h"
#include "kernel_table.h"
#include "map.h"
#include "vmath.h"

namespace torchferry::cpu {
namespace {

struct SiluAndMul {
  static constexpr const char* kName = "silu_and_mul";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 1, 0, 1); s != TF_OK) return s;
    const tf_tensor& x = TensorArg(call->inputs, 0);
    const tf_tensor& out = call->outputs[0];
    if (x.ndim < 1 || x.ndim != out.ndim ||
        x.shape[x.ndim - 1] != 2 * out.shape[out.ndim - 1]) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "silu_and_mul: expected x's last dimension to be twice "
                  "out's (x[..., 2d] -> out[..., d]), found x with %d dims "
                  "and out with %d dims",
                  x.ndim, out.ndim);
    }
    const int64_t half = out.shape[out.ndim - 1];
    const T* gate = DataOf<const T>(x);
    const T* up = gate + half * x.strides[x.ndim - 1];
    using C = ComputeOf<T>;
    const auto op = [](C g, C u) { return g / (C{1} + ExpOf(-g)) * u; };
    const View<const T> gate_view{gate, x.strides, false};
    const View<const T> up_view{up, x.strides, false};
    bool done;
    if constexpr (kBlocked<T>) {
      done = MapBlocked(out.ndim, out.shape, ViewOf<T>(out), op, gate_view,
                        up_view);
    } else {
      done = Map2(out.ndim, out.shape, ViewOf<T>(out), gate_view, up_view,
                  [op](T g, T u) { return Store<T>(op(Load(g), Load(u))); });
    }
    return done ? TF_OK : TooManyDims(call, kName, out.ndim);
  }
};

constexpr auto kTable = KernelsFor<SiluAndMul>(FloatTypes{});

}  // namespace

KernelList SiluAndMulKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
