// rotary_embedding: rotates pairs of the last dim by (cos, sin), rotate-half
// (GPT-NeoX, Llama: pairs (i, i + h)) or interleaved (GPT-J: (2i, 2i + 1)).
// Each row goes through stack blocks in the compute type: both halves of a
// pair are read before either is written, so out may be x itself, and the
// block loops see plain arrays that the compiler vectorises.
#include <cstdint>

#include "call.h"
#include "dtype.h"
#include "kernel_table.h"
#include "strided.h"

namespace torchferry::cpu {
namespace {

constexpr int64_t kBlock = 64;

template <typename T>
void RotateRow(const T* x, int64_t xs, const T* c, int64_t cs, const T* s,
               int64_t ss, T* out, int64_t os, int64_t half, int64_t head_dim,
               bool interleaved) {
  using A = ComputeOf<T>;
  // Positions of a pair's two elements, in elements along the row.
  const int64_t first_step = interleaved ? 2 : 1;
  const int64_t second_offset = interleaved ? 1 : half;
  for (int64_t i0 = 0; i0 < half; i0 += kBlock) {
    const int64_t len = half - i0 < kBlock ? half - i0 : kBlock;
    A a[kBlock], b[kBlock], cv[kBlock], sv[kBlock];
    for (int64_t j = 0; j < len; ++j) {
      const int64_t p = (i0 + j) * first_step;
      a[j] = Load(x[p * xs]);
      b[j] = Load(x[(p + second_offset) * xs]);
      cv[j] = Load(c[(i0 + j) * cs]);
      sv[j] = Load(s[(i0 + j) * ss]);
    }
    A ra[kBlock], rb[kBlock];
    for (int64_t j = 0; j < len; ++j) {
      ra[j] = a[j] * cv[j] - b[j] * sv[j];
      rb[j] = b[j] * cv[j] + a[j] * sv[j];
    }
    for (int64_t j = 0; j < len; ++j) {
      const int64_t p = (i0 + j) * first_step;
      out[p * os] = Store<T>(ra[j]);
      out[(p + second_offset) * os] = Store<T>(rb[j]);
    }
  }
  // Dims past the rotary dim pass through (nothing to do in place).
  if (out == x && os == xs) return;
  for (int64_t i = 2 * half; i < head_dim; ++i) out[i * os] = x[i * xs];
}

struct RotaryEmbedding {
  static constexpr const char* kName = "rotary_embedding";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status st = CheckArity(call, kName, 3, 1, 1); st != TF_OK) {
      return st;
    }
    const tf_tensor& x = TensorArg(call->inputs, 0);
    const tf_tensor& cos = TensorArg(call->inputs, 1);
    const tf_tensor& sin = TensorArg(call->inputs, 2);
    const tf_tensor& out = call->outputs[0];
    const int last = x.ndim - 1;
    if (x.ndim < 1 || cos.ndim != x.ndim || sin.ndim != x.ndim ||
        2 * cos.shape[last] > x.shape[last]) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "rotary_embedding: expected x [..., D] and cos, sin of x's "
                  "rank with a last dim of at most D / 2, found ranks %d, %d "
                  "and %d",
                  x.ndim, cos.ndim, sin.ndim);
    }
    const bool interleaved = call->attrs[0].value.i != 0;
    const int64_t head_dim = x.shape[last];
    const int64_t half = cos.shape[last];
    const T* xd = DataOf<const T>(x);
    const T* cd = DataOf<const T>(cos);
    const T* sd = DataOf<const T>(sin);
    T* od = DataOf<T>(out);
    StridedWalker<4> rows;
    if (!rows.Init(last, x.shape,
                   {x.strides, cos.strides, sin.strides, out.strides})) {
      return TooManyDims(call, kName, x.ndim);
    }
    const int64_t xs = x.strides[last], cs = cos.strides[last];
    const int64_t ss = sin.strides[last], os = out.strides[last];
    rows.Run([&](const int64_t* off, int64_t len, const int64_t* st) {
      for (int64_t r = 0; r < len; ++r) {
        // With a rotary dim of 0, cos and sin hold no elements and may be
        // NULL: no offset is applied to them.
        const T* c = half > 0 ? cd + off[1] + r * st[1] : cd;
        const T* s = half > 0 ? sd + off[2] + r * st[2] : sd;
        RotateRow(xd + off[0] + r * st[0], xs, c, cs, s, ss,
                  od + off[3] + r * st[3], os, half, head_dim, interleaved);
      }
    });
    return TF_OK;
  }
};

constexpr auto kTable = KernelsFor<RotaryEmbedding>(FloatTypes{});

}  // namespace

KernelList RotaryKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
