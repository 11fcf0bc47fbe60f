// matmul: out[B, m, n] = a[B, m, k] @ b[B, k, n], any strides, accumulating
// in float32 (float64 for float64). float32 with up to 16 rows and b's rows
// contiguous runs on the in-place tiles of gemm_rows.h; other float32 and
// float64 on BLIS (gemm.h) wherever its stride rules allow; the loops here
// serve float16, bfloat16 and the strides BLIS refuses. A depth above
// kDepthChunk runs in chunks whose products are added in float64
// (LongDepth), so that no float32 sum covers more than kDepthChunk terms.
//
// The loop order is i-k-j: for a block of rows of a and a chunk of columns of
// out, each row of b is read once (converted to the accumulate type into a
// small panel) and added, scaled by a[i, p], into every row's accumulator.
// The innermost loop is then a unit-stride a*x+y over stack arrays, which
// vectorises whatever b's layout, and the chunk of b for a column block is
// reused from cache by every row block. Accumulators live on the stack.
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#include "call.h"
#include "convert.h"
#include "dtype.h"
#include "gemm.h"
#include "gemm_rows.h"
#include "isa.h"
#include "kernel_table.h"
#include "parallel.h"
#include "vmath.h"

namespace torchferry::cpu {
namespace {

constexpr int64_t kRowBlock = 4;
constexpr int64_t kColumnChunk = 256;

struct Strided2d {
  int64_t rows;  // stride between rows, in elements
  int64_t cols;  // stride between columns
};

// The rows and columns of a whole product, which choose its path.
struct Extent {
  int64_t m;
  int64_t n;
};

template <typename A>
inline void ScaledAdd(A* __restrict acc, const A* __restrict x, A scale,
                      int64_t n) {
  for (int64_t j = 0; j < n; ++j) acc[j] += scale * x[j];
}

// One matrix product: m x k times k x n, out in T or (for the depth chunks
// of the 16-bit types, see LongDepth) in float.
template <typename T, typename O = T>
void MatmulOne(const T* a, Strided2d as, const T* b, Strided2d bs, O* out,
               Strided2d os, int64_t m, int64_t k, int64_t n) {
  using A = AccumulateOf<T>;
  A acc[kRowBlock][kColumnChunk];
  A panel[kColumnChunk];
  for (int64_t j0 = 0; j0 < n; j0 += kColumnChunk) {
    const int64_t jn = n - j0 < kColumnChunk ? n - j0 : kColumnChunk;
    for (int64_t i0 = 0; i0 < m; i0 += kRowBlock) {
      const int64_t rn = m - i0 < kRowBlock ? m - i0 : kRowBlock;
      for (int64_t r = 0; r < rn; ++r) {
        for (int64_t j = 0; j < jn; ++j) acc[r][j] = 0;
      }
      for (int64_t p = 0; p < k; ++p) {
        const T* b_row = b + p * bs.rows + j0 * bs.cols;
        const A* row = panel;
        if constexpr (std::is_same_v<T, A>) {
          // Already in the accumulate type and contiguous: use it in place.
          if (bs.cols == 1) row = b_row;
        }
        if (row == panel) {
          for (int64_t j = 0; j < jn; ++j) {
            panel[j] = static_cast<A>(Load(b_row[j * bs.cols]));
          }
        }
        for (int64_t r = 0; r < rn; ++r) {
          const A scale =
              static_cast<A>(Load(a[(i0 + r) * as.rows + p * as.cols]));
          ScaledAdd(acc[r], row, scale, jn);
        }
      }
      for (int64_t r = 0; r < rn; ++r) {
        O* out_row = out + (i0 + r) * os.rows + j0 * os.cols;
        for (int64_t j = 0; j < jn; ++j) {
          out_row[j * os.cols] = Store<O>(static_cast<ComputeOf<O>>(acc[r][j]));
        }
      }
    }
  }
}

// ---- float32 accumulation: packed panels and a register tile ------------
//
// For float32, float16 and bfloat16 (which all accumulate in float32) out is
// computed in panels of kNr columns. For each block of kMb rows, the
// products are summed into a float32 stack block over depth blocks of kKc:
// b's kKc x kNr block is packed (widened, zero padded past n) into a
// contiguous buffer unless it is float32 rows read in place, each of a's
// rows likewise, and a kMr x kNr tile of sums is held in registers across
// the depth block (8 AVX2 registers). Packing makes every layout of a and b
// look the same to the inner loop, which is the only place the flops are.
// Only AVX2 and AVX-512 instantiations exist (isa.h); see Matmul::Run.

constexpr int64_t kNr = 16;
constexpr int64_t kMr = 4;
constexpr int64_t kKc = 256;
constexpr int64_t kMb = 64;  // a multiple of kMr

// The tile's sums are Float8 values (vmath.h): as plain arrays GCC
// vectorised across the depth loop instead, with shuffles.
static_assert(kNr == 16, "the tile is two Float8 wide");

// c[kMr][kNr] += a[r][0, kc) * b[0, kc)[kNr], with row p of b at
// b + p * b_stride.
inline void MicroTile(const float* const* a, const float* __restrict b,
                      int64_t b_stride, int64_t kc, float* __restrict c) {
  const float* __restrict a0 = a[0];
  const float* __restrict a1 = a[1];
  const float* __restrict a2 = a[2];
  const float* __restrict a3 = a[3];
  static_assert(kMr == 4, "four rows of a");
  // Eight named sums rather than an array: an array whose address memcpy
  // takes was kept on the stack and reloaded every step.
  Float8 s00, s01, s10, s11, s20, s21, s30, s31;
  std::memcpy(&s00, c + 0, sizeof s00);
  std::memcpy(&s01, c + 8, sizeof s01);
  std::memcpy(&s10, c + 16, sizeof s10);
  std::memcpy(&s11, c + 24, sizeof s11);
  std::memcpy(&s20, c + 32, sizeof s20);
  std::memcpy(&s21, c + 40, sizeof s21);
  std::memcpy(&s30, c + 48, sizeof s30);
  std::memcpy(&s31, c + 56, sizeof s31);
  for (int64_t p = 0; p < kc; ++p) {
    Float8 b0, b1;
    std::memcpy(&b0, b + p * b_stride, sizeof b0);
    std::memcpy(&b1, b + p * b_stride + 8, sizeof b1);
    s00 += a0[p] * b0;
    s01 += a0[p] * b1;
    s10 += a1[p] * b0;
    s11 += a1[p] * b1;
    s20 += a2[p] * b0;
    s21 += a2[p] * b1;
    s30 += a3[p] * b0;
    s31 += a3[p] * b1;
  }
  std::memcpy(c + 0, &s00, sizeof s00);
  std::memcpy(c + 8, &s01, sizeof s01);
  std::memcpy(c + 16, &s10, sizeof s10);
  std::memcpy(c + 24, &s11, sizeof s11);
  std::memcpy(c + 32, &s20, sizeof s20);
  std::memcpy(c + 40, &s21, sizeof s21);
  std::memcpy(c + 48, &s30, sizeof s30);
  std::memcpy(c + 56, &s31, sizeof s31);
}

// c[0][kNr] += a[0, kc) * b[0, kc)[kNr] for a single row (m = 1, or the
// last row of a block): the four-row tile would spend three quarters of its
// work on zero rows and wait on two dependency chains; here four
// interleaved depth phases give eight independent sums.
inline void MicroRow(const float* __restrict a, const float* __restrict b,
                     int64_t b_stride, int64_t kc, float* __restrict c) {
  Float8 s0[4] = {}, s1[4] = {};
  int64_t p = 0;
  for (; p + 4 <= kc; p += 4) {
    for (int q = 0; q < 4; ++q) {
      Float8 b0, b1;
      std::memcpy(&b0, b + (p + q) * b_stride, sizeof b0);
      std::memcpy(&b1, b + (p + q) * b_stride + 8, sizeof b1);
      s0[q] += a[p + q] * b0;
      s1[q] += a[p + q] * b1;
    }
  }
  for (; p < kc; ++p) {
    Float8 b0, b1;
    std::memcpy(&b0, b + p * b_stride, sizeof b0);
    std::memcpy(&b1, b + p * b_stride + 8, sizeof b1);
    s0[0] += a[p] * b0;
    s1[0] += a[p] * b1;
  }
  Float8 c0, c1;
  std::memcpy(&c0, c, sizeof c0);
  std::memcpy(&c1, c + 8, sizeof c1);
  c0 += (s0[0] + s0[1]) + (s0[2] + s0[3]);
  c1 += (s1[0] + s1[1]) + (s1[2] + s1[3]);
  std::memcpy(c, &c0, sizeof c0);
  std::memcpy(c + 8, &c1, sizeof c1);
}

template <typename Isa, typename T>
inline void MatmulPanels(const T* a, Strided2d as, const T* b, Strided2d bs,
                         T* out, Strided2d os, int64_t m, int64_t k,
                         int64_t n) {
  constexpr bool kFloat = std::is_same_v<T, float>;
  float b_pack[kKc * kNr];
  float a_pack[kMr][kKc];
  float sums[kMb * kNr];
  for (int64_t j0 = 0; j0 < n; j0 += kNr) {
    const int64_t jn = n - j0 < kNr ? n - j0 : kNr;
    // float32 rows of b that hold the whole panel are read in place.
    const bool b_direct = kFloat && bs.cols == 1 && jn == kNr;
    for (int64_t i0 = 0; i0 < m; i0 += kMb) {
      const int64_t mb = m - i0 < kMb ? m - i0 : kMb;
      for (int64_t i = 0; i < kMb * kNr; ++i) sums[i] = 0;
      for (int64_t p0 = 0; p0 < k; p0 += kKc) {
        const int64_t kc = k - p0 < kKc ? k - p0 : kKc;
        const float* b_block = b_pack;
        int64_t b_stride = kNr;
        if constexpr (kFloat) {
          if (b_direct) {
            b_block = reinterpret_cast<const float*>(b + p0 * bs.rows + j0);
            b_stride = bs.rows;
          }
        }
        if (!b_direct) {
          for (int64_t p = 0; p < kc; ++p) {
            const T* row = b + (p0 + p) * bs.rows + j0 * bs.cols;
            float* dst = b_pack + p * kNr;
            if (bs.cols == 1) {
              WidenBlock<Isa>(row, dst, jn);
            } else {
              for (int64_t j = 0; j < jn; ++j) {
                dst[j] = static_cast<float>(Load(row[j * bs.cols]));
              }
            }
            for (int64_t j = jn; j < kNr; ++j) dst[j] = 0;
          }
        }
        for (int64_t r0 = 0; r0 < mb; r0 += kMr) {
          const float* rows[kMr];
          for (int64_t r = 0; r < kMr; ++r) {
            rows[r] = a_pack[r];
            if (r0 + r >= mb) {
              // Past the last row: sums of zeros, never stored.
              for (int64_t p = 0; p < kc; ++p) a_pack[r][p] = 0;
              continue;
            }
            const T* row = a + (i0 + r0 + r) * as.rows + p0 * as.cols;
            if constexpr (kFloat) {
              if (as.cols == 1) {
                rows[r] = reinterpret_cast<const float*>(row);
                continue;
              }
            }
            if (as.cols == 1) {
              WidenBlock<Isa>(row, a_pack[r], kc);
            } else {
              for (int64_t p = 0; p < kc; ++p) {
                a_pack[r][p] = static_cast<float>(Load(row[p * as.cols]));
              }
            }
          }
          if (mb - r0 == 1) {
            MicroRow(rows[0], b_block, b_stride, kc, sums + r0 * kNr);
          } else {
            MicroTile(rows, b_block, b_stride, kc, sums + r0 * kNr);
          }
        }
      }
      for (int64_t r = 0; r < mb; ++r) {
        T* out_row = out + (i0 + r) * os.rows + j0 * os.cols;
        const float* src = sums + r * kNr;
        if (os.cols == 1) {
          NarrowBlock<Isa>(src, out_row, jn);
        } else {
          for (int64_t j = 0; j < jn; ++j) {
            out_row[j * os.cols] = Store<T>(static_cast<ComputeOf<T>>(src[j]));
          }
        }
      }
    }
  }
}

template <typename T>
TF_CPU_AVX2 TF_CPU_FLATTEN void MatmulPanelsAvx2(const T* a, Strided2d as,
                                                 const T* b, Strided2d bs,
                                                 T* out, Strided2d os,
                                                 int64_t m, int64_t k,
                                                 int64_t n) {
  MatmulPanels<Avx2Isa>(a, as, b, bs, out, os, m, k, n);
}
template <typename T>
TF_CPU_AVX512 TF_CPU_FLATTEN void MatmulPanelsAvx512(const T* a, Strided2d as,
                                                     const T* b, Strided2d bs,
                                                     T* out, Strided2d os,
                                                     int64_t m, int64_t k,
                                                     int64_t n) {
  MatmulPanels<Avx512Isa>(a, as, b, bs, out, os, m, k, n);
}

// ---- b with unit depth stride: dot products -----------------------------
//
// b = W.t() of nn.Linear's [n, k] weight has each column contiguous along k,
// the layout of every linear in a decoder. The panels above gather such a
// column element by element into their packed rows; for a few rows of a it
// is cheaper to take each output as a dot product, widening b's columns
// sixteen (AVX-512) or eight (AVX2) at a time as they are read, a widened
// once into float32 beforehand (on the stack up to kDotStackFloats, else in
// one allocation). A tile of kDotColumns columns by up to kDotTileRows rows
// shares each widened load of b among the rows and each load of a among the
// columns.

constexpr int64_t kDotRows = 16;  // at most this many rows of a
// float32 on AVX-512 takes up to this many rows as dot products: there BLIS
// packs all of b for a few rows' work, and reading W.t() in place measured
// faster up to 96 rows and level at 128 (see Product).
constexpr int64_t kDotRowsAvx512Float = 96;
constexpr int64_t kDotStackFloats = 8192;  // 32 KiB
constexpr int64_t kDotColumns = 4;
// 16 sums, 4 columns and 4 rows in 24 of AVX-512's 32 registers; 8 + 4 + 2
// of AVX2's 16.
template <typename V>
constexpr int kDotTileRows = sizeof(V) == 64 ? 4 : 2;

// The sum of v's lanes, halving: log2(lanes) shuffles and adds.
template <typename V>
inline float SumLanes(const V& v) {
  if constexpr (sizeof(V) == 64) {
    const Float8 lo = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
    const Float8 hi =
        __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
    return SumLanes(lo + hi);
  } else {
    typedef float Float4 __attribute__((vector_size(16)));
    const Float4 q = __builtin_shufflevector(v, v, 0, 1, 2, 3) +
                     __builtin_shufflevector(v, v, 4, 5, 6, 7);
    return (q[0] + q[2]) + (q[1] + q[3]);
  }
}

// The sums of acc[r][c]'s sixteen lanes for a 4 x 4 tile, all sixteen at
// once, into lane 4r + c of *sums: each level halves the lanes of every sum
// and packs two sums' halves into one vector, 30 shuffles and 15 adds where
// sixteen SumLanes take 64 and 64. Measured from Python, one thread, float32
// [m, 256] @ W.t() [256, 256]: m = 8 24.9 -> 15.6 us (torch 20.9 / 17.6 in
// the same runs), m = 16 44.3 -> 29.3.
inline void SumLanes4x4(const F32x16 (&acc)[4][4], F32x16* sums) {
  // w[j]: lanes 0-7 halve the sum of acc[2 (j % 2)][j / 2], 8-15 of the row
  // below it.
  F32x16 w[8];
  for (int j = 0; j < 8; ++j) {
    const F32x16& a = acc[2 * (j % 2)][j / 2];
    const F32x16& b = acc[2 * (j % 2) + 1][j / 2];
    w[j] = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19,
                                   20, 21, 22, 23) +
           __builtin_shufflevector(a, b, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25,
                                   26, 27, 28, 29, 30, 31);
  }
  // x[c]: four lanes of acc[r][c] in lanes 4r to 4r + 3.
  F32x16 x[4];
  for (int c = 0; c < 4; ++c) {
    x[c] = __builtin_shufflevector(w[2 * c], w[2 * c + 1], 0, 1, 2, 3, 8, 9, 10,
                                   11, 16, 17, 18, 19, 24, 25, 26, 27) +
           __builtin_shufflevector(w[2 * c], w[2 * c + 1], 4, 5, 6, 7, 12, 13,
                                   14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
  }
  // y[h]: lanes 4r, 4r + 1 halve the sum of acc[r][2h], 4r + 2 and 4r + 3
  // of acc[r][2h + 1].
  F32x16 y[2];
  for (int h = 0; h < 2; ++h) {
    y[h] = __builtin_shufflevector(x[2 * h], x[2 * h + 1], 0, 2, 16, 18, 4, 6,
                                   20, 22, 8, 10, 24, 26, 12, 14, 28, 30) +
           __builtin_shufflevector(x[2 * h], x[2 * h + 1], 1, 3, 17, 19, 5, 7,
                                   21, 23, 9, 11, 25, 27, 13, 15, 29, 31);
  }
  *sums = __builtin_shufflevector(y[0], y[1], 0, 2, 16, 18, 4, 6, 20, 22, 8, 10,
                                  24, 26, 12, 14, 28, 30) +
          __builtin_shufflevector(y[0], y[1], 1, 3, 17, 19, 5, 7, 21, 23, 9, 11,
                                  25, 27, 13, 15, 29, 31);
}

template <typename Isa, typename V, typename T>
inline void WidenLanes(const T* in, V* out) {
  if constexpr (std::is_same_v<T, float>) {
    std::memcpy(out, in, sizeof(V));
  } else {
    float wide[sizeof(V) / sizeof(float)];
    if constexpr (sizeof(V) == 64) {
      Widen16<Isa, T>(in, wide);
    } else {
      Widen8<Isa, T>(in, wide);
    }
    std::memcpy(out, wide, sizeof(V));
  }
}

// out[i, j] for RT rows of a (float32, row r at rows[r]) and the columns
// col[0, kDotColumns) of b; only the first `rn` rows and `jn` columns are
// stored (the others repeat a real row or column). With `ahead` > 0 each
// line of b read is prefetched `ahead` elements further on, the same line
// of the next tile's columns. A decoder reads each of its weights (a few
// hundred KB, together larger than L2) once a step, and the hardware
// prefetchers alone left those loads waiting. Measured in one process,
// interleaved rounds, float32, one row, against no prefetch: the llama
// example's decode step 0.56 of the same code on torch ops -> 0.47 into L2
// (prefetcht1), 0.44 into L1 (prefetcht0); one-row linears cycling through
// 32 MB of weights, [1, 256] @ [1376, 256].t() 0.81 / 0.75 of the time,
// [1, 688] @ [256, 688].t() 0.91 / 0.86. A weight that stays in L2 pays
// for the extra loads, less so into L1: [1, 256] @ [256, 256].t() 1.25 /
// 1.05, [1, 1024] @ [1024, 1024].t() 1.06 / 0.99. Two or four tiles ahead
// measured alike on the decode step and worse on those. Only the first tile
// of rows prefetches: the others find the columns in cache.
template <typename Isa, typename V, int RT, typename T>
inline void DotTile(const float* const* rows, int64_t rn, int64_t k,
                    const T* const* col, int64_t jn, T* out, Strided2d os,
                    int64_t ahead) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  V acc[RT][kDotColumns] = {};
  int64_t p = 0;
  for (; p + kLanes <= k; p += kLanes) {
    V bv[kDotColumns];
#pragma GCC unroll 4
    for (int64_t c = 0; c < kDotColumns; ++c) {
      if (ahead) __builtin_prefetch(col[c] + p + ahead, 0, 3);
      WidenLanes<Isa>(col[c] + p, &bv[c]);
      // Into a register, as GemmRows' tiles do: left in the array, GCC
      // copied each load of b to the stack in two halves for AVX2 and read
      // it back whole into the multiply-add, a store-forwarding stall per
      // vector (83% of [1, 256] @ W.t() [256, 768] on a Zen 3 core).
#if defined(__GNUC__) && !defined(__clang__)
      __asm__("" : "+v"(bv[c]));
#endif
    }
#pragma GCC unroll 4
    for (int r = 0; r < RT; ++r) {
      V av;
      std::memcpy(&av, rows[r] + p, sizeof av);
#pragma GCC unroll 4
      for (int64_t c = 0; c < kDotColumns; ++c) acc[r][c] += av * bv[c];
    }
  }
  float sums[RT][kDotColumns];
  if constexpr (sizeof(V) == 64 && RT == 4 && kDotColumns == 4) {
    F32x16 z;
    SumLanes4x4(acc, &z);
    std::memcpy(sums, &z, sizeof sums);
    if constexpr (std::is_same_v<T, float>) {
      if (p == k && rn == RT && jn == kDotColumns && os.cols == 1) {
        for (int r = 0; r < RT; ++r) {
          std::memcpy(out + r * os.rows, sums[r], sizeof sums[r]);
        }
        return;
      }
    }
  } else {
    for (int r = 0; r < RT; ++r) {
      for (int64_t c = 0; c < kDotColumns; ++c)
        sums[r][c] = SumLanes(acc[r][c]);
    }
  }
  for (int64_t r = 0; r < rn; ++r) {
    for (int64_t c = 0; c < jn; ++c) {
      float sum = sums[r][c];
      for (int64_t q = p; q < k; ++q) {
        sum += rows[r][q] * static_cast<float>(Load(col[c][q]));
      }
      out[r * os.rows + c * os.cols] = Store<T>(static_cast<ComputeOf<T>>(sum));
    }
  }
}

// One row of a against float32 columns read one after another, each as a
// single stream, with four sums in flight and b prefetched kRowAhead floats
// on. The tiles below read kDotColumns columns side by side: where b lives
// in L3 that runs below the one-stream rate, while from memory it is their
// several streams that keep enough loads in flight. Measured on a Zen 3
// core (AVX2; L2 512 KB, L3 32 MB), float32, one thread, [1, k] @ W.t()
// against torch.matmul, median of eight fresh W's a process: W [512, 512]
// (1 MB) 0.81 -> 0.63, [1024, 1024] 0.87 -> 0.71, [2048, 2048] (16 MB)
// 1.06 -> 0.92; in single runs [4096, 2048] (32 MB) 0.89 -> 1.05, [4096,
// 4096] 1.00 -> 1.40 and, in L2, [256, 256] 0.64 -> 0.69. Prefetch distance
// 1 KB 0.73, 4 KB 0.70, 16 KB 0.89, none 0.76 ([1024, 1024]); two columns a
// pass 0.74 against one's 0.71. Hence the window below, and only on the
// tier where it was measured.
constexpr int64_t kRowStreamMinBytes = int64_t{1} << 20;
constexpr int64_t kRowStreamMaxBytes = int64_t{16} << 20;
constexpr int64_t kRowAhead = 1024;

template <typename V>
inline void DotRowStreamed(const float* a, int64_t k, const float* b,
                           int64_t b_col, float* out, int64_t out_stride,
                           int64_t n) {
  constexpr int64_t kLanes = sizeof(V) / sizeof(float);
  for (int64_t j = 0; j < n; ++j) {
    const float* w = b + j * b_col;
    V acc[4] = {};
    int64_t p = 0;
    for (; p + 4 * kLanes <= k; p += 4 * kLanes) {
      // Two lines of b a step; prefetching never faults past its end.
      __builtin_prefetch(w + p + kRowAhead, 0, 3);
      __builtin_prefetch(w + p + kRowAhead + 2 * kLanes, 0, 3);
#pragma GCC unroll 4
      for (int u = 0; u < 4; ++u) {
        V av, wv;
        std::memcpy(&av, a + p + u * kLanes, sizeof av);
        std::memcpy(&wv, w + p + u * kLanes, sizeof wv);
        acc[u] += av * wv;
      }
    }
    for (; p + kLanes <= k; p += kLanes) {
      V av, wv;
      std::memcpy(&av, a + p, sizeof av);
      std::memcpy(&wv, w + p, sizeof wv);
      acc[0] += av * wv;
    }
    float sum = SumLanes((acc[0] + acc[1]) + (acc[2] + acc[3]));
    for (; p < k; ++p) sum += a[p] * w[p];
    out[j * out_stride] = sum;
  }
}

// out[i, j] = sum_p a[i, p] * b[p, j] with a float32 [m, k] (row stride
// a_row) and column j of b at b + j * b_col, unit stride along p.
template <typename Isa, typename V, typename T>
inline void DotColumns(const float* a, int64_t a_row, int64_t m, int64_t k,
                       const T* b, int64_t b_col, T* out, Strided2d os,
                       int64_t n, int64_t whole_n) {
  constexpr int RT = kDotTileRows<V>;
  if constexpr (std::is_same_v<T, float> && sizeof(V) == 32) {
    // Chosen on the whole product's b, not this block's: the two loops sum
    // in different orders, and every block of a split product must sum as
    // the unsplit one does.
    const int64_t b_bytes = whole_n * b_col * int64_t{sizeof(float)};
    if (m == 1 && b_bytes >= kRowStreamMinBytes &&
        b_bytes <= kRowStreamMaxBytes) {
      DotRowStreamed<V>(a, k, b, b_col, out, os.cols, n);
      return;
    }
  }
  const int64_t ahead = kDotColumns * b_col;  // the next tile's columns
  for (int64_t j0 = 0; j0 < n; j0 += kDotColumns) {
    const int64_t jn = n - j0 < kDotColumns ? n - j0 : kDotColumns;
    const T* col[kDotColumns];
    // Past the last column the last one is read again, never stored.
    for (int64_t c = 0; c < kDotColumns; ++c) {
      col[c] = b + (j0 + (c < jn ? c : jn - 1)) * b_col;
    }
    int64_t i = 0;
    for (; i + RT <= m; i += RT) {
      const float* rows[RT];
      for (int r = 0; r < RT; ++r) rows[r] = a + (i + r) * a_row;
      DotTile<Isa, V, RT>(rows, RT, k, col, jn,
                          out + i * os.rows + j0 * os.cols, os,
                          i == 0 ? ahead : 0);
    }
    if constexpr (RT > 2) {
      if (i + 2 <= m) {
        const float* rows[2] = {a + i * a_row, a + (i + 1) * a_row};
        DotTile<Isa, V, 2>(rows, 2, k, col, jn,
                           out + i * os.rows + j0 * os.cols, os,
                           i == 0 ? ahead : 0);
        i += 2;
      }
    }
    for (; i < m; ++i) {
      const float* row = a + i * a_row;
      DotTile<Isa, V, 1>(&row, 1, k, col, jn, out + i * os.rows + j0 * os.cols,
                         os, i == 0 ? ahead : 0);
    }
  }
}

// a [m, k] of any strides widened into `wide` (m * k floats, row stride
// k), then DotColumns.
template <typename Isa, typename V, typename T>
inline void MatmulDots(const T* a, Strided2d as, const T* b, int64_t b_col,
                       T* out, Strided2d os, int64_t m, int64_t k, int64_t n,
                       int64_t whole_n, float* wide) {
  if constexpr (std::is_same_v<T, float>) {
    if (as.cols == 1) {  // read in place
      DotColumns<Isa, V>(a, as.rows, m, k, b, b_col, out, os, n, whole_n);
      return;
    }
  }
  for (int64_t i = 0; i < m; ++i) {
    const T* row = a + i * as.rows;
    if constexpr (!std::is_same_v<T, float>) {
      if (as.cols == 1) {
        WidenBlock<Isa>(row, wide + i * k, k);
        continue;
      }
    }
    for (int64_t p = 0; p < k; ++p) {
      wide[i * k + p] = static_cast<float>(Load(row[p * as.cols]));
    }
  }
  DotColumns<Isa, V>(wide, k, m, k, b, b_col, out, os, n, whole_n);
}

template <typename T>
TF_CPU_AVX2 TF_CPU_FLATTEN void MatmulDotsAvx2(const T* a, Strided2d as,
                                               const T* b, int64_t b_col,
                                               T* out, Strided2d os, int64_t m,
                                               int64_t k, int64_t n,
                                               int64_t whole_n, float* wide) {
  MatmulDots<Avx2Isa, Float8>(a, as, b, b_col, out, os, m, k, n, whole_n, wide);
}
template <typename T>
TF_CPU_AVX512 TF_CPU_FLATTEN void MatmulDotsAvx512(
    const T* a, Strided2d as, const T* b, int64_t b_col, T* out, Strided2d os,
    int64_t m, int64_t k, int64_t n, int64_t whole_n, float* wide) {
  MatmulDots<Avx512Isa, F32x16>(a, as, b, b_col, out, os, m, k, n, whole_n,
                                wide);
}

// MatmulDots at the active tier (AVX2 or above), a widened on the stack or
// in one allocation; false, having done nothing, when that allocation fails
// (out of memory only costs the speed: the caller's panels take it).
template <typename T>
bool Dots(const T* a, Strided2d as, const T* b, int64_t b_col, T* out,
          Strided2d os, int64_t m, int64_t k, int64_t n, int64_t whole_n) {
  float on_stack[kDotStackFloats];
  std::unique_ptr<float[]> heap;
  float* wide = on_stack;
  const bool in_place = std::is_same_v<T, float> && as.cols == 1;
  if (!in_place && m * k > kDotStackFloats) {
    heap.reset(new (std::nothrow) float[m * k]);
    wide = heap.get();
    if (wide == nullptr) return false;
  }
  if (ActiveTier() == Tier::kAvx512) {
    MatmulDotsAvx512<T>(a, as, b, b_col, out, os, m, k, n, whole_n, wide);
  } else {
    MatmulDotsAvx2<T>(a, as, b, b_col, out, os, m, k, n, whole_n, wide);
  }
  return true;
}

// ---- float16 and bfloat16 on the float32 tiles --------------------------
//
// A narrow b (n <= kGemmRowsNarrowN) under kWidenedMinRows rows of a or
// more: b is widened into float32 once, a kGemmRowsMax rows at a time, and
// each block goes through GemmRows (gemm_rows.h) and is narrowed back,
// where the panels below convert and pack as they go. Measured from Python,
// one thread, time over torch's, panels -> this, float16 / bfloat16:
// [4096, 4096] @ [4096, 16] 1.25 -> 0.95 / 4.76 -> 3.29 (torch's bfloat16
// runs on AMX here), [1000, 77] @ [77, 128] 2.77 -> 1.12 / 6.2 -> 2.01,
// [64, 300] @ [300, 33] 0.94 -> 0.50 / 1.42 -> 0.79; with 17 rows the copy
// of b does not pay ([17, 4096] @ [4096, 16] 0.52 -> 0.67 in float16).
// Above kWideBFloats of b the copy would be more memory than the call is
// worth, and the panels keep it.
constexpr int64_t kWidenedMinRows = 64;
constexpr int64_t kWideBFloats = int64_t{1} << 20;  // 4 MiB

template <typename Isa, typename T>
inline void WidenedRows(const T* a, Strided2d as, const T* b, Strided2d bs,
                        T* out, Strided2d os, int64_t m, int64_t k, int64_t n,
                        float* wide_b, float* wide_a, float* wide_c) {
  WidenRows<Isa>(b, bs.rows, bs.cols, k, n, wide_b);
  for (int64_t i0 = 0; i0 < m; i0 += kGemmRowsMax) {
    const int64_t rows = m - i0 < kGemmRowsMax ? m - i0 : kGemmRowsMax;
    WidenRows<Isa>(a + i0 * as.rows, as.rows, as.cols, rows, k, wide_a);
    GemmRows(wide_a, {k, 1}, wide_b, {n, 1}, wide_c, {n, 1}, rows, k, n, n);
    for (int64_t r = 0; r < rows; ++r) {
      T* o = out + (i0 + r) * os.rows;
      if (os.cols == 1) {
        NarrowBlock<Isa>(wide_c + r * n, o, n);
      } else {
        for (int64_t c = 0; c < n; ++c) {
          o[c * os.cols] =
              Store<T>(static_cast<ComputeOf<T>>(wide_c[r * n + c]));
        }
      }
    }
  }
}

template <typename T>
TF_CPU_AVX2 TF_CPU_FLATTEN void WidenedRowsAvx2(const T* a, Strided2d as,
                                                const T* b, Strided2d bs,
                                                T* out, Strided2d os, int64_t m,
                                                int64_t k, int64_t n,
                                                float* wide_b, float* wide_a,
                                                float* wide_c) {
  WidenedRows<Avx2Isa>(a, as, b, bs, out, os, m, k, n, wide_b, wide_a, wide_c);
}
template <typename T>
TF_CPU_AVX512 TF_CPU_FLATTEN void WidenedRowsAvx512(
    const T* a, Strided2d as, const T* b, Strided2d bs, T* out, Strided2d os,
    int64_t m, int64_t k, int64_t n, float* wide_b, float* wide_a,
    float* wide_c) {
  WidenedRows<Avx512Isa>(a, as, b, bs, out, os, m, k, n, wide_b, wide_a,
                         wide_c);
}

// WidenedRows where it applies (decided on the `whole` product's shape)
// (kWidenedMinRows rows or more, a narrow b of at most kWideBFloats, AVX2 or
// above: what GemmRows takes; its buffers allocated); false, having done
// nothing, elsewhere.
template <typename T>
bool Widened(const T* a, Strided2d as, const T* b, Strided2d bs, T* out,
             Strided2d os, int64_t m, int64_t k, int64_t n, Extent whole) {
  if (whole.m < kWidenedMinRows || whole.n > kGemmRowsNarrowN ||
      k * whole.n > kWideBFloats || ActiveTier() == Tier::kBaseline) {
    return false;
  }
  std::unique_ptr<float[]> wide(
      new (std::nothrow) float[k * n + kGemmRowsMax * (k + n)]);
  if (!wide) return false;  // out of memory only costs the speed
  float* wide_b = wide.get();
  float* wide_a = wide_b + k * n;
  float* wide_c = wide_a + kGemmRowsMax * k;
  if (ActiveTier() == Tier::kAvx512) {
    WidenedRowsAvx512<T>(a, as, b, bs, out, os, m, k, n, wide_b, wide_a,
                         wide_c);
  } else {
    WidenedRowsAvx2<T>(a, as, b, bs, out, os, m, k, n, wide_b, wide_a, wide_c);
  }
  return true;
}

// One product at a depth of at most kDepthChunk (Matmul::Run), on the
// fastest path that takes it. The path is chosen on the shape of the `whole`
// product this [m, n] block belongs to, so that every block of a split
// product runs the path (and the order of sums) the unsplit one would.
template <typename T>
void Product(const T* a, Strided2d as, const T* b, Strided2d bs, T* out,
             Strided2d os, int64_t m, int64_t k, int64_t n, Extent whole) {
  // float32 with b's rows contiguous: GemmRows (gemm_rows.h) for a few
  // rows, or any rows of a narrow b. Otherwise float32 and float64 go
  // to BLIS (gemm.h); it refuses only strides that no dense matrix has,
  // which the loops below take.
  if constexpr (std::is_same_v<T, float>) {
    // A block of a product GemmRows takes is one it takes too.
    const bool rows_path =
        whole.m <= kGemmRowsMax || whole.n <= kGemmRowsNarrowN;
    if (rows_path && GemmRows(a, {as.rows, as.cols}, b, {bs.rows, bs.cols}, out,
                              {os.rows, os.cols}, m, k, n, whole.n)) {
      return;
    }
  }
  // float32 against W.t(): the dot products for one row, a depth of
  // kDotDepth or more, or (AVX-512) the rows of a full tile, where BLIS
  // packs b. Measured from Python, one thread, [m, K] @ W.t() [K, N],
  // dot products / BLIS / torch: [1, 256, 256] 2.55 / 2.90 / 4.59 us,
  // [1, 256, 1376] 11.9 / 14.2 / 20.0, [2, 1024, 1024] 142 / 152 / 142,
  // [5, 512, 512] 23.4 / 26.8 / 20.9, [8, 1024, 1024] 194 / 266 / 423;
  // with SumLanes4x4, at depths under kDotDepth: [4, 256, 256] 9.2 /
  // 16.7 / 13.3, [8, 256, 256] 12.5 / 19.3 / 15.0, [16, 256, 256] 24.1 /
  // 37.0 / 29.1, [8, 256, 1376] 64 / 98 / 73, [8, 64, 256] 7.7 / 11.0 /
  // 8.9; level at [16, 64, 256] (13.5 / 13.3), behind with no full tile:
  // [3, 256, 256] 9.7 / 8.3 / 6.7.
  // On AVX-512 (a Sapphire Rapids core), time over torch's, dot products /
  // BLIS: [17, 1024, 1024] 0.63 / 0.93, [32, 256, 256] 1.05 / 1.35,
  // [64, 4096, 4096] 1.08 / 1.44, [64, 2048, 5632] 1.06 / 1.48, [96, 256,
  // 256] 1.33 / 1.34, [128, 256, 256] 1.39 / 1.35, [128, 2048, 5632]
  // 1.19 / 1.25: BLIS packs the whole of b, which a few rows cannot repay.
  // Those BLIS figures came with its small-product kernels, which gemm.h
  // now leaves out (their order of sums changed with a split's size).
  // Its blocked path alone loses to the dot products at any depth for up
  // to kDotRowsAnyDepth rows. On zen3 (AVX2), median µs, BLIS / dot
  // products / torch, one thread: [2, 256, 256] 29.0 / 6.3 / 15.2,
  // [8, 256, 256] 39.7 / 23.0 / 28.5, [8, 128, 128] 22.0 / 13.1 / 13.8,
  // [5, 384, 384] 64.7 / 33.6 / 57.2, [12, 256, 256] 37.0 / 33.6 / 34.2,
  // but [16, 256, 256] 57.4 / 62.6 / 40.2, where BLIS keeps it; two
  // threads: [2, 256, 256] 24.0 / 6.1 / 18.8, [8, 256, 256] 31.1 / 17.1 /
  // 25.4, [8, 128, 128] 12.1 / 7.0 / 11.1.
  constexpr int64_t kDotDepth = 512;
  constexpr int64_t kDotRowsAnyDepth = 12;
  if constexpr (std::is_same_v<T, float>) {
    const bool avx512 = ActiveTier() == Tier::kAvx512;
    const bool dots = whole.m <= kDotRowsAnyDepth || k >= kDotDepth ||
                      (avx512 && whole.m >= kDotTileRows<F32x16>);
    const int64_t most = avx512 ? kDotRowsAvx512Float : kDotRows;
    if (bs.rows == 1 && whole.m <= most && dots &&
        ActiveTier() != Tier::kBaseline &&
        Dots<T>(a, as, b, bs.cols, out, os, m, k, n, whole.n)) {
      return;
    }
  }
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (Gemm(a, {as.rows, as.cols}, b, {bs.rows, bs.cols}, out,
             {os.rows, os.cols}, m, k, n, whole.m)) {
      return;
    }
  }
  // The panels need AVX2: in the baseline build GCC lowers the tile's
  // eight Float8 sums to sixteen SSE registers and spills, and the
  // i-k-j loop below is faster there (about 90 against 490 us for
  // [8, 4096] @ [4096, 16] in float32).
  if constexpr (std::is_same_v<AccumulateOf<T>, float>) {
    if (ActiveTier() != Tier::kBaseline) {
      if constexpr (kBlocked<T>) {
        if (Widened<T>(a, as, b, bs, out, os, m, k, n, whole)) {
          return;
        }
        if (bs.rows == 1 && whole.m <= kDotRows &&
            Dots<T>(a, as, b, bs.cols, out, os, m, k, n, whole.n)) {
          return;
        }
      }
      if (ActiveTier() == Tier::kAvx512) {
        MatmulPanelsAvx512<T>(a, as, b, bs, out, os, m, k, n);
      } else {
        MatmulPanelsAvx2<T>(a, as, b, bs, out, os, m, k, n);
      }
      return;
    }
  }
  MatmulOne<T>(a, as, b, bs, out, os, m, k, n);
}

// ---- long depths ---------------------------------------------------------
//
// The kernels above keep each output's sum in float32 accumulators over the
// whole depth (lanes or tiles of it), which stop absorbing terms once the
// sum is 2**24 times them. A depth above kDepthChunk is taken in chunks of
// kDepthChunk, each chunk's product on the paths above (the 16-bit types on
// MatmulOne, which can write float32) and the chunks' products added in
// float64. Up to kDepthChunk nothing changes; above it the extra [m, n]
// read and add per chunk is about 1/kDepthChunk of the product's work.
constexpr int64_t kDepthChunk = 16384;

// out = a @ b at a depth k above kDepthChunk; false, having written
// nothing, when the float64 sums cannot be allocated.
template <typename T>
bool LongDepth(const T* a, Strided2d as, const T* b, Strided2d bs, T* out,
               Strided2d os, int64_t m, int64_t k, int64_t n) {
  using P = std::conditional_t<std::is_same_v<T, double>, double, float>;
  int64_t mn = 0;
  if (__builtin_mul_overflow(m, n, &mn) ||
      mn > PTRDIFF_MAX / static_cast<int64_t>(sizeof(double) + sizeof(P))) {
    return false;
  }
  std::unique_ptr<double[]> total(new (std::nothrow) double[mn]());
  std::unique_ptr<P[]> part(new (std::nothrow) P[mn]);
  if (!total || !part) return false;
  const Strided2d ps{n, 1};
  for (int64_t p0 = 0; p0 < k; p0 += kDepthChunk) {
    const int64_t kc = k - p0 < kDepthChunk ? k - p0 : kDepthChunk;
    const T* ac = a + p0 * as.cols;
    const T* bc = b + p0 * bs.rows;
    if constexpr (std::is_same_v<T, P>) {
      Product<T>(ac, as, bc, bs, part.get(), ps, m, kc, n, {m, n});
    } else {
      MatmulOne<T, P>(ac, as, bc, bs, part.get(), ps, m, kc, n);
    }
    for (int64_t x = 0; x < mn; ++x) total[x] += part[x];
  }
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      out[r * os.rows + c * os.cols] =
          Store<T>(static_cast<ComputeOf<T>>(static_cast<P>(total[r * n + c])));
    }
  }
  return true;
}

// The batch's products, their outputs split over threads in blocks: output
// columns when a product has at least as many columns as rows (few-row
// linear and decode; each thread then packs only its columns of b), else
// rows. Blocks are multiples of every register tile (16 columns; 1 to 32
// rows; GemmRows' tiles of the product's rows, GemmRowsColumnTile), so each
// output element is computed as in the unsplit product, and results do not
// depend on the thread count. A depth of at most kDepthChunk.
constexpr int64_t kSplitColumns = 64;
constexpr int64_t kSplitRows = 96;

// The columns of a block: kSplitColumns, or where the product goes to
// GemmRows (Product) and its tiles need it, the most of them that fit in
// kSplitColumns (at least one). Blocks of kSplitColumns split [8, 1024] @
// [1024, 1024] at column 512, 173-178 us at 2 threads; at 528 or 576
// (whole tiles of 48 columns) it took 187-212 us.
template <typename T>
int64_t ColumnBlock(Strided2d bs, int64_t m, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (bs.cols == 1 && (m <= kGemmRowsMax || n <= kGemmRowsNarrowN)) {
      const int64_t tile = GemmRowsColumnTile(m);
      return tile >= kSplitColumns ? tile : tile * (kSplitColumns / tile);
    }
  }
  return kSplitColumns;
}
// A multiply-add of a product against an elementwise step (parallel.h): the
// kernels run about this many per step's time, and a share below ~1M of
// them cannot pay for a thread. That holds for a split by rows (many rows,
// the kernels near their peak).
constexpr int64_t kMacsPerStep = 32;
// A split by columns has few rows and streams b: a block costs its reads of
// b, kBReadsPerStep to a step, plus its multiply-adds, kColumnMacsPerStep to
// a step. Fitted on zen4 (AVX-512 kernels, 2 vCPUs), in-process median us at 1
// and 2 threads, b [K, N] / W.t(): [1, 256, 256] 2.9 and 2.8 / 3.0 and 3.8 (the
// old rule, each element of b a step, split it: the bench measured 4.9 us
// at 2 threads), which now stays whole, as does [2, 256, 256] (2.9 and 2.8
// / 4.4 and 3.7); still split: [1, 384, 384] 6.1 and 5.3 / 7.9 and 4.5,
// [4, 256, 256] 5.4 and 4.5 / 6.0 and 4.3, [8, 256, 256] 9.7 and 6.3 / 11.5
// and 7.1; [8, 128, 128] stays whole (2.8 and 2.8).
constexpr int64_t kBReadsPerStep = 2;
constexpr int64_t kColumnMacsPerStep = 8;

// Whether the shares of a split by columns write their outputs through
// private buffers: where GemmRows streams b (gemm_rows.h) it stores each tile
// of c once per few rows of b, and two threads storing the two halves of the
// same rows of c ran slower than one thread alone: [8, 1024] @ [1024, 1024]
// float32 on zen3, 302 us at 2 threads against 241 at 1; on zen4 (AVX-512)
// [4, 1024] @ [1024, 1024] took 275 us at 2 against 116 at 1. Each share then
// sums into pages of its own and copies its block of c out once.
template <typename T>
bool SharesRewriteOutput(Strided2d bs, int64_t m, int64_t k, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    return bs.cols == 1 && m <= kGemmRowsMax && GemmRowsStreamsB(k, n);
  }
  (void)bs, (void)m, (void)k, (void)n;
  return false;
}

// A share's private [m, columns] block of c in whole pages, none of them
// shared with another thread's data. data stays NULL above kMostBytes (where
// a share's columns span many pages of each row of c, and only the one at
// each end is shared with another share) or when there is no memory for it;
// the share then writes c in place, as it would unsplit.
template <typename T>
struct PrivateColumns {
  static constexpr std::size_t kPage = 4096;
  static constexpr int64_t kMostBytes = int64_t{1} << 20;
  T* data = nullptr;
  void Reserve(int64_t m, int64_t columns) {
    if (m * columns > kMostBytes / static_cast<int64_t>(sizeof(T))) return;
    const std::size_t bytes = static_cast<std::size_t>(m * columns) * sizeof(T);
    data =
        static_cast<T*>(::operator new((bytes + kPage - 1) / kPage * kPage,
                                       std::align_val_t(kPage), std::nothrow));
  }
  void CopyTo(T* out, Strided2d os, int64_t m, int64_t columns) const {
    for (int64_t r = 0; r < m; ++r) {
      if (os.cols == 1) {
        std::memcpy(out + r * os.rows, data + r * columns,
                    static_cast<std::size_t>(columns) * sizeof(T));
      } else {
        for (int64_t c = 0; c < columns; ++c) {
          out[r * os.rows + c * os.cols] = data[r * columns + c];
        }
      }
    }
  }
  ~PrivateColumns() {
    if (data != nullptr) ::operator delete(data, std::align_val_t(kPage));
  }
};

template <typename T>
void SplitProducts(const T* a, int64_t a_batch, Strided2d as, const T* b,
                   int64_t b_batch, Strided2d bs, T* out, int64_t out_batch,
                   Strided2d os, int64_t batch, int64_t m, int64_t k,
                   int64_t n) {
  const bool by_columns = n >= m;
  const int64_t block = by_columns ? ColumnBlock<T>(bs, m, n) : kSplitRows;
  const int64_t blocks = ((by_columns ? n : m) + block - 1) / block;
  const int64_t macs = (by_columns ? m : n) * block * k;
  int64_t cost = by_columns
                     ? block * k / kBReadsPerStep + macs / kColumnMacsPerStep
                     : macs / kMacsPerStep;
  if (cost < 1) cost = 1;
  const bool private_out = by_columns && SharesRewriteOutput<T>(bs, m, k, n);
  // A share's consecutive blocks of one product are one call, so that a
  // packing product (BLIS) packs its operands once per share, not per block.
  ParallelFor(batch * blocks, cost, [&](int64_t t0, int64_t t1) {
    PrivateColumns<T> own;
    if (private_out && (t1 - t0) < batch * blocks) {
      own.Reserve(m, (t1 - t0) * block < n ? (t1 - t0) * block : n);
    }
    for (int64_t t = t0; t < t1;) {
      const int64_t i = t / blocks;
      const int64_t last = t1 < (i + 1) * blocks ? t1 : (i + 1) * blocks;
      const int64_t start = (t % blocks) * block;
      const int64_t limit = by_columns ? n : m;
      const int64_t stop = (last - i * blocks) * block;
      const int64_t size = (stop < limit ? stop : limit) - start;
      const T* ai = a + i * a_batch;
      const T* bi = b + i * b_batch;
      T* oi = out + i * out_batch;
      if (by_columns && own.data != nullptr) {
        Product<T>(ai, as, bi + start * bs.cols, bs, own.data, {size, 1}, m, k,
                   size, {m, n});
        own.CopyTo(oi + start * os.cols, os, m, size);
      } else if (by_columns) {
        Product<T>(ai, as, bi + start * bs.cols, bs, oi + start * os.cols, os,
                   m, k, size, {m, n});
      } else {
        Product<T>(ai + start * as.rows, as, bi, bs, oi + start * os.rows, os,
                   size, k, n, {m, n});
      }
      t = last;
    }
  });
}

struct Matmul {
  static constexpr const char* kName = "matmul";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 2, 0, 1); s != TF_OK) return s;
    const tf_tensor& a = TensorArg(call->inputs, 0);
    const tf_tensor& b = TensorArg(call->inputs, 1);
    const tf_tensor& out = call->outputs[0];
    if (a.ndim != 3 || b.ndim != 3 || out.ndim != 3) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "matmul: expected 3-D a [B, m, k], b [B, k, n] and out "
                  "[B, m, n], found %d, %d and %d dims; the host prepends "
                  "the batch dim to 2-D operands",
                  a.ndim, b.ndim, out.ndim);
    }
    const int64_t batch = out.shape[0];
    const int64_t m = out.shape[1];
    const int64_t n = out.shape[2];
    const int64_t k = a.shape[2];
    const bool batch_ok = (a.shape[0] == batch || a.shape[0] == 1) &&
                          (b.shape[0] == batch || b.shape[0] == 1);
    if (!batch_ok || a.shape[1] != m || b.shape[1] != k || b.shape[2] != n) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "matmul: expected a [B, m, k] @ b [B, k, n] -> out [B, m, "
                  "n], found a [%lld, %lld, %lld], b [%lld, %lld, %lld], out "
                  "[%lld, %lld, %lld]",
                  static_cast<long long>(a.shape[0]),
                  static_cast<long long>(a.shape[1]),
                  static_cast<long long>(a.shape[2]),
                  static_cast<long long>(b.shape[0]),
                  static_cast<long long>(b.shape[1]),
                  static_cast<long long>(b.shape[2]),
                  static_cast<long long>(batch), static_cast<long long>(m),
                  static_cast<long long>(n));
    }
    // A batch of 1 beside a larger one repeats, whatever its stride says.
    const int64_t a_batch = a.shape[0] == 1 ? 0 : a.strides[0];
    const int64_t b_batch = b.shape[0] == 1 ? 0 : b.strides[0];
    T* out_data = DataOf<T>(out);
    if (k == 0) {
      // An empty sum is 0; a and b hold no elements and may be NULL, so they
      // are not even offset.
      for (int64_t i = 0; i < batch; ++i) {
        for (int64_t r = 0; r < m; ++r) {
          for (int64_t c = 0; c < n; ++c) {
            out_data[i * out.strides[0] + r * out.strides[1] +
                     c * out.strides[2]] = Store<T>(ComputeOf<T>(0));
          }
        }
      }
      return TF_OK;
    }
    const T* a_data = DataOf<const T>(a);
    const T* b_data = DataOf<const T>(b);
    const Strided2d as{a.strides[1], a.strides[2]};
    const Strided2d bs{b.strides[1], b.strides[2]};
    const Strided2d os{out.strides[1], out.strides[2]};
    if (k <= kDepthChunk) {
      SplitProducts<T>(a_data, a_batch, as, b_data, b_batch, bs, out_data,
                       out.strides[0], os, batch, m, k, n);
      return TF_OK;
    }
    for (int64_t i = 0; i < batch; ++i) {
      const T* ai = a_data + i * a_batch;
      const T* bi = b_data + i * b_batch;
      T* oi = out_data + i * out.strides[0];
      if (!LongDepth<T>(ai, as, bi, bs, oi, os, m, k, n)) {
        return Fail(call, TF_ERROR_OUT_OF_MEMORY,
                    "matmul: no memory for the float64 sums of a depth of "
                    "%lld ([%lld, %lld] of them)",
                    static_cast<long long>(k), static_cast<long long>(m),
                    static_cast<long long>(n));
      }
    }
    return TF_OK;
  }
};

// linear: matmul's shapes (core/prepare/prepare_linear.cc hands the weight over
// as the [B, K, N] view weight.t()), so the product is matmul's, on the same
// GEMM, and only the bias is added here, to every row.
struct Linear {
  static constexpr const char* kName = "linear";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status s = CheckArity(call, kName, 3, 0, 1); s != TF_OK) return s;
    const tf_arg& bias_arg = call->inputs[2];
    if (bias_arg.kind != TF_ARG_NONE && bias_arg.kind != TF_ARG_TENSOR) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "linear: expected bias to be TF_ARG_NONE or a tensor, "
                  "found arg kind %d",
                  static_cast<int>(bias_arg.kind));
    }
    tf_call product = *call;
    product.num_inputs = 2;
    if (tf_status s = Matmul::Run<T>(&product); s != TF_OK) return s;
    if (bias_arg.kind == TF_ARG_NONE) return TF_OK;
    const tf_tensor& bias = *bias_arg.value.tensor;
    const tf_tensor& out = call->outputs[0];
    if (bias.ndim != 1 || bias.shape[0] != out.shape[2]) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "linear: expected bias [%lld] (out's last dim), found %d "
                  "dims",
                  static_cast<long long>(out.shape[2]), bias.ndim);
    }
    const T* b = DataOf<const T>(bias);
    T* o = DataOf<T>(out);
    for (int64_t i = 0; i < out.shape[0]; ++i) {
      for (int64_t r = 0; r < out.shape[1]; ++r) {
        T* row = o + i * out.strides[0] + r * out.strides[1];
        for (int64_t c = 0; c < out.shape[2]; ++c) {
          T& v = row[c * out.strides[2]];
          v = Store<T>(Load<T>(v) + Load<T>(b[c * bias.strides[0]]));
        }
      }
    }
    return TF_OK;
  }
};

constexpr auto kTable = JoinKernels(KernelsFor<Matmul>(FloatTypes{}),
                                    KernelsFor<Linear>(FloatTypes{}));

}  // namespace

KernelList MatmulKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
