// The row-wise reductions: rms_norm and add_rms_norm (over the last dim) and
// softmax (over any dim). Both sum in the accumulate type (float32 for the
// 16-bit floats, float64 for float64), each accumulator over at most
// kSerialTerms terms with the partial sums combined in float64 (sums.h), and
// write each output once, rounding to the stored dtype at the end.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "call.h"
#include "convert.h"
#include "dtype.h"
#include "isa.h"
#include "kernel_table.h"
#include "parallel.h"
#include "strided.h"
#include "sums.h"
#include "vmath.h"

namespace torchferry::cpu {
namespace {

// Walks every position of x's shape with dimension `skip` taken out, i.e.
// the start of every line along `skip`, handing `runs` the walker's inner
// runs: runs(offsets, len, strides) with offsets/strides [0] for x and [1]
// for out, so that a caller may process neighbouring lines together. Returns
// false when x has more dims than the walker takes. The runs may be handed
// over from several threads at once, each with lines of its own.
template <typename Runs>
bool ForEachLine(const tf_tensor& x, const tf_tensor& out, int skip,
                 const Runs& runs) {
  int64_t shape[kMaxRank];
  int64_t x_strides[kMaxRank];
  int64_t out_strides[kMaxRank];
  if (x.ndim - 1 > kMaxRank) return false;
  int rank = 0;
  for (int d = 0; d < x.ndim; ++d) {
    if (d == skip) continue;
    shape[rank] = x.shape[d];
    x_strides[rank] = x.strides[d];
    out_strides[rank] = out.strides[d];
    ++rank;
  }
  StridedWalker<2> walker;
  if (!walker.Init(rank, shape, {x_strides, out_strides})) return false;
  // Lines are independent: threads take whole lines, each computed as one
  // thread would, so results do not depend on the thread count.
  ParallelFor(walker.Size(), x.shape[skip], [&](int64_t first, int64_t last) {
    walker.RunRange(first, last, runs);
  });
  return true;
}

// ---- unit-stride lines in float32 ---------------------------------------
//
// float32, float16 and bfloat16 lines with unit strides run here, on float32
// (the 16-bit types widened block by block through convert.h), in loops
// instantiated once per instruction-set tier (isa.h). The reductions keep 16
// independent partial results in two Float8 values (vmath.h), so that they
// vectorise without the compiler reassociating floats on its own.

constexpr int64_t kBlock = 256;
// softmax keeps a 16-bit line of up to this many elements in float32 on the
// stack (32 KiB), so that each exponential is computed once.
constexpr int64_t kLineBuffer = 8192;

// Points at `len` float32 values of x from `start`: x itself for float32,
// else `buf` after widening.
template <typename Isa, typename T>
inline const float* FloatsOf(const T* x, int64_t start, int64_t len,
                             float* buf) {
  if constexpr (kBlocked<T>) {
    WidenBlock<Isa>(x + start, buf, len);
    return buf;
  } else {
    return x + start;
  }
}

// Sums of squares into two Float8 partial sums (16 lanes).
inline float SumSquares(const float* p, int64_t n, Float8* lanes) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Float8 v0, v1;
    std::memcpy(&v0, p + i, sizeof v0);
    std::memcpy(&v1, p + i + 8, sizeof v1);
    lanes[0] += v0 * v0;
    lanes[1] += v1 * v1;
  }
  float rest = 0;
  for (; i < n; ++i) rest += p[i] * p[i];
  return rest;
}

inline float SumOfLanes(const Float8* lanes) {
  float sum = 0;
  for (int l = 0; l < 8; ++l) sum += lanes[0][l] + lanes[1][l];
  return sum;
}

template <typename Isa, typename T>
inline void RmsNormLine(const T* x, const T* w, T* out, int64_t n, float eps) {
  float buf[kBlock];
  // A chunk is a whole number of blocks: only its last block leaves a rest.
  static_assert(ChunkFor(16) % kBlock == 0);
  const double total =
      SumInChunks(n, ChunkFor(16), [&](int64_t c0, int64_t cn) {
        Float8 lanes[2] = {};
        float rest = 0;
        for (int64_t i0 = 0; i0 < cn; i0 += kBlock) {
          const int64_t len = cn - i0 < kBlock ? cn - i0 : kBlock;
          rest += SumSquares(FloatsOf<Isa>(x, c0 + i0, len, buf), len, lanes);
        }
        return rest + SumOfLanes(lanes);
      });
  const float scale =
      static_cast<float>(1.0 / std::sqrt(total / static_cast<double>(n) + eps));
  float wbuf[kBlock];
  float res[kBlock];
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t len = n - i0 < kBlock ? n - i0 : kBlock;
    const float* xv = FloatsOf<Isa>(x, i0, len, buf);
    const float* wv = FloatsOf<Isa>(w, i0, len, wbuf);
    if constexpr (kBlocked<T>) {
      for (int64_t j = 0; j < len; ++j) res[j] = xv[j] * scale * wv[j];
      NarrowBlock<Isa>(res, out + i0, len);
    } else {
      float* o = out + i0;
      for (int64_t j = 0; j < len; ++j) o[j] = xv[j] * scale * wv[j];
    }
  }
}

template <typename T>
TF_CPU_FLATTEN void RmsNormLineBase(const T* x, const T* w, T* out, int64_t n,
                                    float eps) {
  RmsNormLine<BaselineIsa>(x, w, out, n, eps);
}
template <typename T>
TF_CPU_AVX2 TF_CPU_FLATTEN void RmsNormLineAvx2(const T* x, const T* w, T* out,
                                                int64_t n, float eps) {
  RmsNormLine<Avx2Isa>(x, w, out, n, eps);
}
template <typename T>
TF_CPU_AVX512 TF_CPU_FLATTEN void RmsNormLineAvx512(const T* x, const T* w,
                                                    T* out, int64_t n,
                                                    float eps) {
  RmsNormLine<Avx512Isa>(x, w, out, n, eps);
}

// The largest value of p[0, n), ignoring NaN (which poisons the sum later,
// as in torch), folded into two Float8 running maxima: written with vector
// comparisons because GCC leaves the scalar form as branches.
inline void MaxLanes(const float* p, int64_t n, Float8* lanes) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Float8 v0, v1;
    std::memcpy(&v0, p + i, sizeof v0);
    std::memcpy(&v1, p + i + 8, sizeof v1);
    lanes[0] = v0 > lanes[0] ? v0 : lanes[0];
    lanes[1] = v1 > lanes[1] ? v1 : lanes[1];
  }
  for (; i < n; ++i) lanes[0][0] = p[i] > lanes[0][0] ? p[i] : lanes[0][0];
}

// WidenBlock and MaxLanes16 in one pass, for the AVX-512 tier: each
// sixteen widened values are compared while still in a register.
template <typename Isa, typename T>
inline void WidenMax16(const T* x, float* line, int64_t n, Float8* lanes) {
  F32x16 m;
  std::memcpy(&m, lanes, sizeof m);  // lanes[0] and lanes[1]
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Widen16<Isa, T>(x + i, line + i);
    F32x16 v;
    std::memcpy(&v, line + i, sizeof v);
    m = v > m ? v : m;
  }
  std::memcpy(lanes, &m, sizeof m);
  WidenBlock<Isa>(x + i, line + i, n - i);
  MaxLanes(line + i, n - i, lanes);
}

// MaxLanes for the AVX-512 tier: four sixteen-lane maxima over whole groups
// of four vectors, folded into `lanes`, then MaxLanes for the rest.
inline void MaxLanes16(const float* p, int64_t n, Float8* lanes) {
  // Four chains of maxima, so that the loop runs at the loads' pace rather
  // than at vmaxps's latency: softmax float32 [8, 4096] 0.55-0.60 -> 0.51-0.52
  // of torch's time with four chains against two (alternating processes).
  F32x16 m[4];
  std::memcpy(&m[0], lanes, sizeof m[0]);  // lanes[0] and lanes[1]
  m[1] = m[2] = m[3] = m[0];
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int u = 0; u < 4; ++u) {
      F32x16 v;
      std::memcpy(&v, p + i + 16 * u, sizeof v);
      m[u] = v > m[u] ? v : m[u];
    }
  }
  m[0] = m[1] > m[0] ? m[1] : m[0];
  m[2] = m[3] > m[2] ? m[3] : m[2];
  F32x16 m0 = m[2] > m[0] ? m[2] : m[0];
  std::memcpy(lanes, &m0, sizeof m0);
  MaxLanes(p + i, n - i, lanes);
}

inline float MaxOfLanes(const Float8* lanes) {
  float max = lanes[0][0];
  for (int l = 0; l < 8; ++l) {
    max = lanes[0][l] > max ? lanes[0][l] : max;
    max = lanes[1][l] > max ? lanes[1][l] : max;
  }
  return max;
}

inline float SumLanes(const float* p, int64_t n) {
  Float8 lanes[2] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Float8 v0, v1;
    std::memcpy(&v0, p + i, sizeof v0);
    std::memcpy(&v1, p + i + 8, sizeof v1);
    lanes[0] += v0;
    lanes[1] += v1;
  }
  float sum = 0;
  for (; i < n; ++i) sum += p[i];
  return sum + SumOfLanes(lanes);
}

// out[i] = exp(x[i] - max) for i from *i while whole groups of vectors V
// fit, the sum kept in one V of partial sums per vector of the group; *i
// ends past them. Returns that sum. Sixteen-lane groups are four vectors:
// exp is a chain of a dozen dependent instructions, and four chains
// against two took softmax float32 [8, 4096] from 0.505-0.534 to
// 0.476-0.486 of torch's time, [1, 4096] from 0.385-0.413 to 0.365-0.378
// (in-process ratios, two runs each).
template <typename V, typename I>
inline float ExpShiftGroups(const float* x, float* out, int64_t n, float max,
                            int64_t* i) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  constexpr int kChains = sizeof(V) == 64 ? 4 : 2;
  V lanes[kChains] = {};
  for (; *i + kChains * kLanes <= n; *i += kChains * kLanes) {
    for (int c = 0; c < kChains; ++c) {
      V v;
      std::memcpy(&v, x + *i + c * kLanes, sizeof v);
      v -= max;
      if constexpr (sizeof(V) == 64) {
        ExpScalef<true>(v);  // x - max: at most 0, or NaN
      } else {
        ExpAtMostZeroLanes<V, I>(v);
      }
      lanes[c] += v;
      std::memcpy(out + *i + c * kLanes, &v, sizeof v);
    }
  }
  for (int c = 1; c < kChains; ++c) lanes[0] += lanes[c];
  float sum = 0;
  for (int64_t l = 0; l < kLanes; ++l) sum += lanes[0][l];
  return sum;
}

// out[i] = exp(x[i] - max); returns the sum. On AVX2 the sum is taken on
// the way in Float8 partial sums, on AVX-512 in sixteen-lane ones: exp is
// arithmetic-bound, and AVX-512 halves its instructions (softmax float32
// [8, 4096] on the AVX-512 tier: 17.0 us with eight lanes, 11.9 us with
// sixteen; torch 15.5). In the baseline build, where Float8 is split over
// two SSE registers and its comparisons lower poorly (185 against 110 us for
// softmax f32 [8, 4096]), the exponentials are written by a loop the
// vectoriser handles and summed in a second pass.
template <typename Isa>
inline float ExpShiftSum(const float* x, float* out, int64_t n, float max) {
  int64_t i = 0;
  float sum = 0;
  if constexpr (Isa::kAvx512) {
    sum = ExpShiftGroups<F32x16, I32x16>(x, out, n, max, &i);
  } else if constexpr (Isa::kAvx2) {
    sum = ExpShiftGroups<Float8, Int8>(x, out, n, max, &i);
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = ExpF(x[j] - max);
    return SumLanes(out, n);
  }
  for (; i < n; ++i) {
    out[i] = ExpF(x[i] - max);
    sum += out[i];
  }
  return sum;
}

// ExpShiftSum over chunks that keep each of its accumulators (16 at the
// least) within kSerialTerms terms; a line of up to ChunkFor(16) elements is
// one chunk, as before.
template <typename Isa>
inline double ExpShiftTotal(const float* x, float* out, int64_t n, float max) {
  return SumInChunks(n, ChunkFor(16), [&](int64_t c0, int64_t cn) {
    return ExpShiftSum<Isa>(x + c0, out + c0, cn, max);
  });
}

// out[0, n) = T of in[0, n) * scale: the scaling in the same pass as the
// narrowing.
template <typename Isa, typename T>
inline void NarrowScaled(const float* in, float scale, T* out, int64_t n) {
  int64_t i = 0;
  if constexpr (kHasConvert8<Isa, T>) {
    for (; i + 16 <= n; i += 16) {
      // One sixteen-lane value, stored at once: Narrow16 on AVX-512 loads
      // it as one 512-bit value, which two 256-bit stores would not
      // forward to (float16 softmax [1, 4096] 2.36 us against 1.40).
      F32x16 v;
      std::memcpy(&v, in + i, sizeof v);
      v *= scale;
      float scaled[16];
      std::memcpy(scaled, &v, sizeof scaled);
      Narrow16<Isa, T>(scaled, out + i);
    }
  }
  for (; i < n; ++i)
    out[i] = Store<T>(static_cast<ComputeOf<T>>(in[i] * scale));
}

template <typename Isa, typename T>
inline void SoftmaxUnitLine(const T* x, T* out, int64_t n) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  Float8 lanes[2];
  for (int l = 0; l < 8; ++l) lanes[0][l] = lanes[1][l] = kNegInf;
  if constexpr (!kBlocked<T>) {
    if constexpr (Isa::kAvx512) {
      MaxLanes16(x, n, lanes);
    } else {
      MaxLanes(x, n, lanes);
    }
    const float inv = static_cast<float>(
        1.0 / ExpShiftTotal<Isa>(x, out, n, MaxOfLanes(lanes)));
    for (int64_t i = 0; i < n; ++i) out[i] *= inv;
  } else if (n <= kLineBuffer) {
    float line[kLineBuffer];
    // One pass less once the line no longer fits in L1 with its input
    // (48 KiB on the machines measured): float16 [1, 8192] 2.75 -> 2.55 us;
    // at 4096 the separate loops were ahead (1.26-1.34 against 1.36).
    constexpr int64_t kFusedFrom = 4096;
    if constexpr (Isa::kAvx512) {
      if (n > kFusedFrom) {
        WidenMax16<Isa>(x, line, n, lanes);
      } else {
        WidenBlock<Isa>(x, line, n);
        MaxLanes16(line, n, lanes);
      }
    } else {
      WidenBlock<Isa>(x, line, n);
      MaxLanes(line, n, lanes);
    }
    const float inv = static_cast<float>(
        1.0 / ExpShiftTotal<Isa>(line, line, n, MaxOfLanes(lanes)));
    NarrowScaled<Isa>(line, inv, out, n);
  } else {
    // Too long to keep: widen each block again and recompute its
    // exponentials rather than round them to T in between.
    float buf[kBlock];
    float e[kBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const int64_t len = n - i0 < kBlock ? n - i0 : kBlock;
      MaxLanes(FloatsOf<Isa>(x, i0, len, buf), len, lanes);
    }
    const float max = MaxOfLanes(lanes);
    // Each block's sum (at most kBlock terms) straight into float64.
    static_assert(kBlock <= ChunkFor(16));
    double sum = 0;
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const int64_t len = n - i0 < kBlock ? n - i0 : kBlock;
      sum += ExpShiftSum<Isa>(FloatsOf<Isa>(x, i0, len, buf), e, len, max);
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
      const int64_t len = n - i0 < kBlock ? n - i0 : kBlock;
      ExpShiftSum<Isa>(FloatsOf<Isa>(x, i0, len, buf), e, len, max);
      for (int64_t j = 0; j < len; ++j) e[j] *= inv;
      NarrowBlock<Isa>(e, out + i0, len);
    }
  }
}

template <typename T>
TF_CPU_FLATTEN void SoftmaxUnitLineBase(const T* x, T* out, int64_t n) {
  SoftmaxUnitLine<BaselineIsa>(x, out, n);
}
template <typename T>
TF_CPU_AVX2 TF_CPU_FLATTEN void SoftmaxUnitLineAvx2(const T* x, T* out,
                                                    int64_t n) {
  SoftmaxUnitLine<Avx2Isa>(x, out, n);
}
template <typename T>
TF_CPU_AVX512 TF_CPU_FLATTEN void SoftmaxUnitLineAvx512(const T* x, T* out,
                                                        int64_t n) {
  SoftmaxUnitLine<Avx512Isa>(x, out, n);
}

// The types whose unit-stride lines take the float32 kernels above.
template <typename T>
constexpr bool kFloatLines = std::is_same_v<AccumulateOf<T>, float>;

// ---- rms_norm ------------------------------------------------------------

// Sum of squares with eight independent partial sums on a unit stride, which
// the compiler can keep in one vector register without reassociating floats
// on its own; one partial sum on other strides. Chunked as sums.h says.
template <typename T, typename A>
double SumOfSquares(const T* x, int64_t stride, int64_t n) {
  if (stride == 1) {
    return SumInChunks(n, ChunkFor(8), [&](int64_t c0, int64_t cn) {
      const T* p = x + c0;
      A lanes[8] = {};
      int64_t i = 0;
      for (; i + 8 <= cn; i += 8) {
        for (int l = 0; l < 8; ++l) {
          const A v = static_cast<A>(Load(p[i + l]));
          lanes[l] += v * v;
        }
      }
      A total = 0;
      for (int l = 0; l < 8; ++l) total += lanes[l];
      for (; i < cn; ++i) {
        const A v = static_cast<A>(Load(p[i]));
        total += v * v;
      }
      return total;
    });
  }
  return SumInChunks(n, kSerialTerms, [&](int64_t c0, int64_t cn) {
    const T* p = x + c0 * stride;
    A total = 0;
    for (int64_t i = 0; i < cn; ++i) {
      const A v = static_cast<A>(Load(p[i * stride]));
      total += v * v;
    }
    return total;
  });
}

template <typename T, typename A>
void ScaleRowUnit(const T* __restrict x, const T* __restrict w,
                  T* __restrict out, int64_t n, A scale) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = Store<T>(static_cast<ComputeOf<T>>(
        static_cast<A>(Load(x[i])) * scale * static_cast<A>(Load(w[i]))));
  }
}

// out = rms_norm(x) * weight over x's last dim; eps_arg as the ABI gives it.
template <typename T>
tf_status RmsNormRows(const tf_call* call, const char* op, const tf_tensor& x,
                      const tf_tensor& weight, const tf_tensor& out,
                      const tf_arg& eps_arg) {
  using A = AccumulateOf<T>;
  if (x.ndim < 1 || weight.ndim != 1 ||
      weight.shape[0] != x.shape[x.ndim - 1]) {
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "%s: expected x with at least 1 dim and a 1-D weight "
                "of x's last dim, found x with %d dims and weight with %d",
                op, x.ndim, weight.ndim);
  }
  if (eps_arg.kind != TF_ARG_FLOAT && eps_arg.kind != TF_ARG_INT) {
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "%s: expected eps as a float attribute, found "
                "argument kind %d",
                op, static_cast<int>(eps_arg.kind));
  }
  const A eps = eps_arg.kind == TF_ARG_FLOAT ? static_cast<A>(eps_arg.value.f)
                                             : static_cast<A>(eps_arg.value.i);
  if (Numel(x) == 0) return TF_OK;

  const int last = x.ndim - 1;
  const int64_t n = x.shape[last];
  const int64_t xs = x.strides[last];
  const int64_t os = out.strides[last];
  const int64_t ws = weight.strides[0];
  const T* x_data = DataOf<const T>(x);
  const T* w = DataOf<const T>(weight);
  T* out_data = DataOf<T>(out);
  const bool done = ForEachLine(
      x, out, last, [&](const int64_t* off, int64_t len, const int64_t* st) {
        for (int64_t r = 0; r < len; ++r) {
          const T* xr = x_data + off[0] + r * st[0];
          T* orow = out_data + off[1] + r * st[1];
          if constexpr (kFloatLines<T>) {
            if (xs == 1 && ws == 1 && os == 1) {
              TF_CPU_DISPATCH(RmsNormLine, xr, w, orow, n, eps);
              continue;
            }
          }
          const double mean =
              SumOfSquares<T, A>(xr, xs, n) / static_cast<double>(n);
          const A scale = static_cast<A>(1.0 / std::sqrt(mean + eps));
          if (xs == 1 && ws == 1 && os == 1) {
            ScaleRowUnit<T, A>(xr, w, orow, n, scale);
            continue;
          }
          for (int64_t i = 0; i < n; ++i) {
            orow[i * os] = Store<T>(static_cast<ComputeOf<T>>(
                static_cast<A>(Load(xr[i * xs])) * scale *
                static_cast<A>(Load(w[i * ws]))));
          }
        }
      });
  return done ? TF_OK : TooManyDims(call, op, x.ndim);
}

struct RmsNorm {
  static constexpr const char* kName = "rms_norm";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 2, 1, 1); s != TF_OK) return s;
    return RmsNormRows<T>(call, kName, TensorArg(call->inputs, 0),
                          TensorArg(call->inputs, 1), call->outputs[0],
                          call->attrs[0]);
  }
};

// residual += x (rounded to T, as add), then out = rms_norm(residual): the
// add runs row by row ahead of the norm, so each row is in cache for it.
struct AddRmsNorm {
  static constexpr const char* kName = "add_rms_norm";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 2, 1, 2); s != TF_OK) return s;
    const tf_tensor& x = TensorArg(call->inputs, 0);
    const tf_tensor& residual = call->outputs[1];
    if (x.ndim < 1 || residual.ndim != x.ndim) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "%s: expected x with at least 1 dim and residual of x's "
                  "shape, found %d and %d dims",
                  kName, x.ndim, residual.ndim);
    }
    if (Numel(x) == 0) return TF_OK;
    const int last = x.ndim - 1;
    const int64_t n = x.shape[last];
    const int64_t xs = x.strides[last];
    const int64_t rs = residual.strides[last];
    const T* x_data = DataOf<const T>(x);
    T* r_data = DataOf<T>(residual);
    const bool done =
        ForEachLine(x, residual, last,
                    [&](const int64_t* off, int64_t len, const int64_t* st) {
                      for (int64_t r = 0; r < len; ++r) {
                        const T* xr = x_data + off[0] + r * st[0];
                        T* rr = r_data + off[1] + r * st[1];
                        for (int64_t i = 0; i < n; ++i) {
                          rr[i * rs] = Store<T>(static_cast<ComputeOf<T>>(
                              Load(rr[i * rs]) + Load(xr[i * xs])));
                        }
                      }
                    });
    if (!done) return TooManyDims(call, kName, x.ndim);
    return RmsNormRows<T>(call, kName, residual, TensorArg(call->inputs, 1),
                          call->outputs[0], call->attrs[0]);
  }
};

// ---- softmax -------------------------------------------------------------

// exp(x - max) / sum, with the max subtracted so that exp cannot overflow.
// For float32 and float64 the exponentials are parked in `out` between the
// passes; the 16-bit types recompute them rather than round them twice.
template <typename T, typename A>
constexpr bool kParkInOutput = std::is_same_v<T, A>;

// kUnit fixes both strides at 1 so that the compiler sees plain arrays.
template <typename T, typename A, bool kUnit>
void SoftmaxLine(const T* x, int64_t x_stride, T* out, int64_t out_stride,
                 int64_t n) {
  const int64_t xs = kUnit ? 1 : x_stride;
  const int64_t os = kUnit ? 1 : out_stride;
  A max = -std::numeric_limits<A>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const A v = static_cast<A>(Load(x[i * xs]));
    max = v > max ? v : max;  // a NaN poisons the sum below, as in torch
  }
  const double sum = SumInChunks(n, kSerialTerms, [&](int64_t c0, int64_t cn) {
    A part = 0;
    for (int64_t i = c0; i < c0 + cn; ++i) {
      const A e = ExpOf(static_cast<A>(Load(x[i * xs])) - max);
      part += e;
      if constexpr (kParkInOutput<T, A>) out[i * os] = e;
    }
    return part;
  });
  const A inv = static_cast<A>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (kParkInOutput<T, A>) {
      out[i * os] *= inv;
    } else {
      const A e = ExpOf(static_cast<A>(Load(x[i * xs])) - max);
      out[i * os] = Store<T>(static_cast<ComputeOf<T>>(e * inv));
    }
  }
}

// Softmax over a dim that is not innermost, on `len` neighbouring lines that
// sit side by side in memory (unit stride between lines): walk the lines
// together, row by row, so every memory access is contiguous. Per-line state
// lives in stack arrays of kColumns; each line's float sum is folded into
// its float64 total every kSerialTerms rows.
template <typename T, typename A>
void SoftmaxColumns(const T* x, int64_t xs, T* out, int64_t os, int64_t n,
                    int64_t len) {
  constexpr int64_t kColumns = 64;
  for (int64_t c0 = 0; c0 < len; c0 += kColumns) {
    const int64_t cn = len - c0 < kColumns ? len - c0 : kColumns;
    A max[kColumns];
    A sum[kColumns];
    double total[kColumns];
    for (int64_t c = 0; c < cn; ++c) {
      max[c] = -std::numeric_limits<A>::infinity();
      sum[c] = 0;
      total[c] = 0;
    }
    for (int64_t i = 0; i < n; ++i) {
      const T* row = x + i * xs + c0;
      for (int64_t c = 0; c < cn; ++c) {
        const A v = static_cast<A>(Load(row[c]));
        max[c] = v > max[c] ? v : max[c];
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const T* row = x + i * xs + c0;
      T* orow = out + i * os + c0;
      for (int64_t c = 0; c < cn; ++c) {
        const A e = ExpOf(static_cast<A>(Load(row[c])) - max[c]);
        sum[c] += e;
        if constexpr (kParkInOutput<T, A>) orow[c] = e;
      }
      if ((i + 1) % kSerialTerms == 0 || i + 1 == n) {
        for (int64_t c = 0; c < cn; ++c) {
          total[c] += static_cast<double>(sum[c]);
          sum[c] = 0;
        }
      }
    }
    for (int64_t c = 0; c < cn; ++c) sum[c] = static_cast<A>(1.0 / total[c]);
    for (int64_t i = 0; i < n; ++i) {
      const T* row = x + i * xs + c0;
      T* orow = out + i * os + c0;
      for (int64_t c = 0; c < cn; ++c) {
        if constexpr (kParkInOutput<T, A>) {
          orow[c] *= sum[c];
        } else {
          const A e = ExpOf(static_cast<A>(Load(row[c])) - max[c]);
          orow[c] = Store<T>(static_cast<ComputeOf<T>>(e * sum[c]));
        }
      }
    }
  }
}

struct Softmax {
  static constexpr const char* kName = "softmax";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 1, 1, 1); s != TF_OK) return s;
    using A = AccumulateOf<T>;
    const tf_tensor& x = TensorArg(call->inputs, 0);
    const tf_tensor& out = call->outputs[0];
    const tf_arg& dim_arg = call->attrs[0];
    if (x.ndim < 1 || dim_arg.kind != TF_ARG_INT || dim_arg.value.i < 0 ||
        dim_arg.value.i >= x.ndim) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "softmax: expected an int dim in [0, %d) on a tensor with "
                  "at least 1 dim, found %s%lld; the host normalises "
                  "negative dims before the call",
                  x.ndim, dim_arg.kind == TF_ARG_INT ? "" : "a non-int ",
                  static_cast<long long>(dim_arg.value.i));
    }
    if (Numel(x) == 0) return TF_OK;
    const int dim = static_cast<int>(dim_arg.value.i);
    const int64_t n = x.shape[dim];
    const int64_t xs = x.strides[dim];
    const int64_t os = out.strides[dim];
    const T* x_data = DataOf<const T>(x);
    T* out_data = DataOf<T>(out);
    const bool done = ForEachLine(
        x, out, dim, [&](const int64_t* off, int64_t len, const int64_t* st) {
          const T* xl = x_data + off[0];
          T* ol = out_data + off[1];
          if (len > 1 && st[0] == 1 && st[1] == 1 && n > 1) {
            SoftmaxColumns<T, A>(xl, xs, ol, os, n, len);
            return;
          }
          for (int64_t r = 0; r < len; ++r) {
            if constexpr (kFloatLines<T>) {
              if (xs == 1 && os == 1) {
                TF_CPU_DISPATCH(SoftmaxUnitLine, xl + r * st[0], ol + r * st[1],
                                n);
                continue;
              }
            }
            if (xs == 1 && os == 1) {
              SoftmaxLine<T, A, true>(xl + r * st[0], 1, ol + r * st[1], 1, n);
            } else {
              SoftmaxLine<T, A, false>(xl + r * st[0], xs, ol + r * st[1], os,
                                       n);
            }
          }
        });
    return done ? TF_OK : TooManyDims(call, kName, x.ndim);
  }
};

constexpr auto kTable = JoinKernels(KernelsFor<RmsNorm>(FloatTypes{}),
                                    KernelsFor<AddRmsNorm>(FloatTypes{}),
                                    KernelsFor<Softmax>(FloatTypes{}));

}  // namespace

KernelList ReduceKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
