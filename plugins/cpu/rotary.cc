// rotary_embedding: rotates pairs of the last dim by (cos, sin), rotate-half
// (GPT-NeoX, Llama: pairs (i, i + h)) or interleaved (GPT-J: (2i, 2i + 1)).
// Each row goes through stack blocks in the compute type: both halves of a
// pair are read before either is written, so out may be x itself, and the
// block loops see plain arrays that the compiler vectorises. Unit-stride
// float16 and bfloat16 blocks convert in vector registers (convert.h), and
// the loops are compiled for the CPU's tier, chosen at run time (isa.h).
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "call.h"
#include "convert.h"
#include "dtype.h"
#include "isa.h"
#include "kernel_table.h"
#include "parallel.h"
#include "strided.h"
#include "vmath.h"

namespace torchferry::cpu {
namespace {

constexpr int64_t kBlock = 64;

// dst[0, len) = p[0, len * step) step by step, in the compute type.
template <typename Isa, typename T>
inline void LoadBlock(const T* p, int64_t step, int64_t len,
                      ComputeOf<T>* dst) {
  if (step == 1) {
    if constexpr (kBlocked<T>) {
      WidenBlock<Isa>(p, dst, len);
    } else {
      for (int64_t j = 0; j < len; ++j) dst[j] = Load(p[j]);
    }
    return;
  }
  for (int64_t j = 0; j < len; ++j) dst[j] = Load(p[j * step]);
}
template <typename Isa, typename T>
inline void StoreBlock(const ComputeOf<T>* src, int64_t len, T* p,
                       int64_t step) {
  if (step == 1) {
    if constexpr (kBlocked<T>) {
      NarrowBlock<Isa>(src, p, len);
    } else {
      for (int64_t j = 0; j < len; ++j) p[j] = Store<T>(src[j]);
    }
    return;
  }
  for (int64_t j = 0; j < len; ++j) p[j * step] = Store<T>(src[j]);
}

// Rotate-half with unit strides, from x to out in vectors of eight with no
// stack blocks (whose narrower stores a vector load cannot forward from:
// float32 [1, 8, 32, 64] took 1.7 ns an element through the blocks, 0.44
// this way), widening float16 and bfloat16 in registers. Each step reads
// both halves of its pairs before writing them and no two steps touch the
// same element, so out may be x.
template <typename Isa, typename T>
constexpr bool kDirect = std::is_same_v<T, float> ||
                         (kBlocked<T> && kHasConvert8<Isa, T>);

template <typename Isa, typename T>
inline void Widen8Of(const T* in, Float8* v) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(v, in, sizeof *v);
  } else {
    float wide[8];
    Widen8<Isa, T>(in, wide);
    std::memcpy(v, wide, sizeof wide);
  }
}
template <typename Isa, typename T>
inline void Narrow8Of(const Float8& v, T* out) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(out, &v, sizeof v);
  } else {
    float wide[8];
    std::memcpy(wide, &v, sizeof wide);
    Narrow8<Isa, T>(wide, out);
  }
}

template <typename Isa, typename T>
inline void RotateHalfDirect(const T* x, const T* c, const T* s, T* out,
                             int64_t half) {
  int64_t j = 0;
  for (; j + 8 <= half; j += 8) {
    Float8 a, b, cv, sv;
    Widen8Of<Isa>(x + j, &a);
    Widen8Of<Isa>(x + half + j, &b);
    Widen8Of<Isa>(c + j, &cv);
    Widen8Of<Isa>(s + j, &sv);
    Narrow8Of<Isa>(a * cv - b * sv, out + j);
    Narrow8Of<Isa>(b * cv + a * sv, out + half + j);
  }
  for (; j < half; ++j) {
    const float a = Load(x[j]), b = Load(x[half + j]);
    const float cj = Load(c[j]), sj = Load(s[j]);
    out[j] = Store<T>(a * cj - b * sj);
    out[half + j] = Store<T>(b * cj + a * sj);
  }
}

template <typename Isa, typename T>
inline void RotateRow(const T* x, int64_t xs, const T* c, int64_t cs,
                      const T* s, int64_t ss, T* out, int64_t os, int64_t half,
                      int64_t head_dim, bool interleaved) {
  using A = ComputeOf<T>;
  if constexpr (kDirect<Isa, T>) {
    if (!interleaved && xs == 1 && cs == 1 && ss == 1 && os == 1) {
      RotateHalfDirect<Isa>(x, c, s, out, half);
      if (out != x) {
        for (int64_t i = 2 * half; i < head_dim; ++i) out[i] = x[i];
      }
      return;
    }
  }
  for (int64_t i0 = 0; i0 < half; i0 += kBlock) {
    const int64_t len = half - i0 < kBlock ? half - i0 : kBlock;
    A a[kBlock], b[kBlock], cv[kBlock], sv[kBlock], pairs[2 * kBlock];
    if (interleaved) {  // pairs (2i, 2i + 1): one run of 2 len, split
      LoadBlock<Isa>(x + 2 * i0 * xs, xs, 2 * len, pairs);
      for (int64_t j = 0; j < len; ++j) {
        a[j] = pairs[2 * j];
        b[j] = pairs[2 * j + 1];
      }
    } else {  // pairs (i, i + half)
      LoadBlock<Isa>(x + i0 * xs, xs, len, a);
      LoadBlock<Isa>(x + (half + i0) * xs, xs, len, b);
    }
    LoadBlock<Isa>(c + i0 * cs, cs, len, cv);
    LoadBlock<Isa>(s + i0 * ss, ss, len, sv);
    A ra[kBlock], rb[kBlock];
    for (int64_t j = 0; j < len; ++j) {
      ra[j] = a[j] * cv[j] - b[j] * sv[j];
      rb[j] = b[j] * cv[j] + a[j] * sv[j];
    }
    if (interleaved) {
      for (int64_t j = 0; j < len; ++j) {
        pairs[2 * j] = ra[j];
        pairs[2 * j + 1] = rb[j];
      }
      StoreBlock<Isa>(pairs, 2 * len, out + 2 * i0 * os, os);
    } else {
      StoreBlock<Isa>(ra, len, out + i0 * os, os);
      StoreBlock<Isa>(rb, len, out + (half + i0) * os, os);
    }
  }
  // Dims past the rotary dim pass through (nothing to do in place).
  if (out == x && os == xs) return;
  for (int64_t i = 2 * half; i < head_dim; ++i) out[i * os] = x[i * xs];
}

template <typename T>
TF_CPU_FLATTEN void RotateRowBase(const T* x, int64_t xs, const T* c,
                                  int64_t cs, const T* s, int64_t ss, T* out,
                                  int64_t os, int64_t half, int64_t head_dim,
                                  bool interleaved) {
  RotateRow<BaselineIsa>(x, xs, c, cs, s, ss, out, os, half, head_dim,
                         interleaved);
}
template <typename T>
TF_CPU_AVX2 TF_CPU_FLATTEN void RotateRowAvx2(
    const T* x, int64_t xs, const T* c, int64_t cs, const T* s, int64_t ss,
    T* out, int64_t os, int64_t half, int64_t head_dim, bool interleaved) {
  RotateRow<Avx2Isa>(x, xs, c, cs, s, ss, out, os, half, head_dim, interleaved);
}
template <typename T>
TF_CPU_AVX512 TF_CPU_FLATTEN void RotateRowAvx512(
    const T* x, int64_t xs, const T* c, int64_t cs, const T* s, int64_t ss,
    T* out, int64_t os, int64_t half, int64_t head_dim, bool interleaved) {
  RotateRow<Avx512Isa>(x, xs, c, cs, s, ss, out, os, half, head_dim,
                       interleaved);
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
    auto runs = [&](const int64_t* off, int64_t len, const int64_t* st) {
      for (int64_t r = 0; r < len; ++r) {
        // With a rotary dim of 0, cos and sin hold no elements and may be
        // NULL: no offset is applied to them.
        const T* c = half > 0 ? cd + off[1] + r * st[1] : cd;
        const T* s = half > 0 ? sd + off[2] + r * st[2] : sd;
        TF_CPU_DISPATCH(RotateRow, xd + off[0] + r * st[0], xs, c, cs, s, ss,
                        od + off[3] + r * st[3], os, half, head_dim,
                        interleaved);
      }
    };
    // Rows are independent and each is rotated by the same code in any
    // share, so the split does not change a bit of the result.
    ParallelFor(rows.Size(), head_dim, [&](int64_t first, int64_t last) {
      rows.RunRange(first, last, runs);
    });
    return TF_OK;
  }
};

constexpr auto kTable = KernelsFor<RotaryEmbedding>(FloatTypes{});

}  // namespace

KernelList RotaryKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
