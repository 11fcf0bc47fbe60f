// The tiles of GemmRows (gemm_rows.h).
//
// A tile is R rows of c by NV vectors of columns, summed in registers over a
// block of depth: for each row p of b in the block the tile's NV vectors of
// b are loaded once and each of the R values a[r, p] (read in place where
// a's rows are contiguous, else copied, transposed, into a small buffer per
// block) is broadcast against them. R is all the rows of one pass (up to 8
// with AVX-512, 4 with AVX2: kPassRows), so b is read once per pass and
// never copied. NV is as wide as the registers left allow; columns past
// the last full tile go through a tile of two vectors where NV is wider, then
// tiles of one vector, the last of them masked, whose sums are split over
// phases of p so that enough independent chains hide the FMA latency.
//
// Measured on a model-167 Xeon (AVX-512, then in passes of 16 rows), one
// thread, float32 [m, K] @ [K, N] from Python, against BLIS (its gemv for one
// row, its gemm with packing otherwise) and torch: [1, 256, 256] 2.35 / 2.96
// / 3.25 us, [8, 256, 256] 7.1 / 12.5 / 7.7, [4, 512, 512] 14.3 / 25.7 / 15.2,
// [16, 256, 256] 13.6 / 22.5 / 12.4, [8, 1024, 1024] 177 / 254 / 177,
// [12, 1024, 1024] 216 / 298 / 251, [1, 4096, 4096] 2632 / 2508 / 2647,
// [3, 1000, 77] 7.6 / 30.0 / 6.1, [8, 4096, 16] 10.2 / 12.3 (the panels) /
// 8.3. [8, 256, 256] is 1.05 MFLOP: 4.8 us at this core's peak (6.8 G
// 16-lane FMAs a second, measured), so neither library nor torch has much
// left there. Narrow b with more rows, against the panels of matmul.cc
// (which these replace for float32) and BLIS, and torch: [17, 4096, 16]
// 21.7 / 22.9 / 19.3 / 20.6 us, [64, 4096, 16] 73 / 85 / 228 / 59,
// [100, 300, 33] 23.8 / 34.3 / 37.9 / 18.0, [256, 1024, 64] 238 / 360 /
// 265 / 192, [1024, 1024, 128] 1805 / 3096 / 1723 / 1483, [4096, 4096, 16]
// 7423 / 11401 / 14029 / 6725. The copy of a into each block is the part
// torch does better.
#include "gemm_rows.h"

#include <cstring>
#include <memory>
#include <new>
#include <numeric>

#include "isa.h"
#include "vmath.h"

#if TF_CPU_HAVE_AVX2_PATH
#include <immintrin.h>
#endif

namespace torchferry::cpu {
namespace {

#if TF_CPU_HAVE_AVX2_PATH

// The first `count` lanes at p (0 < count <= lanes); the others are 0 and
// their memory is not touched.
TF_CPU_AVX512 inline void LoadFirst(const float* p, int count, F32x16* v) {
  const __mmask16 mask = static_cast<__mmask16>((1u << count) - 1);
  *v = (F32x16)_mm512_maskz_loadu_ps(mask, p);
}
TF_CPU_AVX512 inline void StoreFirst(float* p, int count, const F32x16& v) {
  const __mmask16 mask = static_cast<__mmask16>((1u << count) - 1);
  _mm512_mask_storeu_ps(p, mask, (__m512)v);
}
TF_CPU_AVX2 inline __m256i FirstLanes(int count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
TF_CPU_AVX2 inline void LoadFirst(const float* p, int count, Float8* v) {
  *v = (Float8)_mm256_maskload_ps(p, FirstLanes(count));
}
TF_CPU_AVX2 inline void StoreFirst(float* p, int count, const Float8& v) {
  _mm256_maskstore_ps(p, FirstLanes(count), (__m256)v);
}

template <typename V>
constexpr int kLanes = sizeof(V) / sizeof(float);

// Rows of one pass, and the vectors of a full tile for R rows: R * NV sums
// and NV loaded vectors of b within 28 of AVX-512's 32 registers, 14 of
// AVX2's 16 (the rest hold the broadcast and addresses).
//
// AVX-512's registers would hold a pass of 16 rows (16 x 1 vector), which
// reads b half as often, but a tile's rows of a and of c then lie a row
// apart, 4 KiB or a multiple where k or n is a multiple of 1024, and 16 or
// more lines in one set of an 8-way L1 evict each other on every block. On
// zen4, one thread, [m, K] @ [K, N] against torch, passes of 16 / of 8:
// [16, 1024, 1024] 1005 / 415 us (torch 488-512), [16, 1024, 256] 185 / 77
// (104-108), [12, 1024, 1024] 460 / 317 (403-432), [16, 4096, 4096] 18.2 /
// 9.9 ms (14.7-15.6), [16, 256, 256] 21.1 / 18.8 us (27-31), and no shape
// measured slower with 8.
template <typename V>
constexpr int kPassRows = kLanes<V> == 16 ? 8 : 4;
template <typename V>
constexpr int TileVectors(int rows) {
  const int budget = kLanes<V> == 16 ? 28 : 14;
  const int cap = kLanes<V> == 16 ? 8 : 6;
  return budget / (rows + 1) < cap ? budget / (rows + 1) : cap;
}
// Phases for narrow tiles: at least eight chains where registers allow.
constexpr int Phases(int sums) { return sums >= 8 ? 1 : 8 / sums; }

// Depth of a block: b is walked kb rows at a time, each tile of c loaded,
// summed over those rows and stored, the tiles moving along the rows. So b is
// read as kb sequential streams, which the hardware prefetchers follow; a
// tile summing all of k would read b down its columns instead, one page or
// more apart once n >= 1024, and [1, 4096] @ [4096, 4096] took 3.35 ms
// against BLIS's gemv's 2.39. Where b fits in half of L2 (1 MiB, what this
// plugin's target CPUs have at least per core) there are no misses to hide,
// and the blocks are only as short as the copy of a (kMaxBlockDepth) needs:
// [8, 256] @ [256, 256] 6.4 us whole, 7.4 in blocks of 16, 8.7 of 8. Depth
// 8 for larger b: on a model-167 Xeon 4, 8 and 16 measured within 5% of each
// other on [1, 1024] and [8, 1024] @ [1024, 1024] and [1, 4096] @
// [4096, 4096], and 32 worse (2.91 against 2.33 ms on the last); on a Zen 3
// core (AVX2) 8 against 16 took [1, 4096] @ [4096, 4096] from 1.10-1.22 to
// 0.83-0.93 of torch's time and [8, 1024] @ [1024, 1024] from 0.84-0.97 to
// 0.75-0.90 (three processes each, alternating), and 4 measured between.
constexpr int64_t kMaxBlockDepth = 256;
constexpr int64_t kStreamedDepth = 8;
inline int64_t BlockDepth(int64_t k, int64_t n) {
  return GemmRowsStreamsB(k, n) ? kStreamedDepth : kMaxBlockDepth;
}

// c[0, R) x columns (+)= a's block @ b[0, kb) x columns, a[r, p] at
// at[p * at_p + r * at_r] (the packed copy, or a itself where its rows are
// contiguous), the columns NV vectors from b (and c), the last one only its
// first `last` lanes when Partial; c is read first unless `first`.
template <typename V, int R, int NV, int KU, bool Partial>
inline void Tile(const float* __restrict at, int64_t at_r, int64_t at_p,
                 const float* b, int64_t b_row, int64_t kb, float* c,
                 GemmOperand cs, bool first, int last) {
  constexpr int L = kLanes<V>;
  V acc[KU][R][NV] = {};
  if (!first) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float* in = c + r * cs.rows;
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) {
        const int count = Partial && v + 1 == NV ? last : L;
        if (cs.cols == 1 && count == L) {
          std::memcpy(&acc[0][r][v], in + v * L, sizeof(V));
        } else if (cs.cols == 1) {
          LoadFirst(in + v * L, count, &acc[0][r][v]);
        } else {
          float lanes[L] = {};
          for (int l = 0; l < count; ++l) lanes[l] = in[(v * L + l) * cs.cols];
          std::memcpy(&acc[0][r][v], lanes, sizeof lanes);
        }
      }
    }
  }
  auto step = [&](int u, int64_t p) {
    const float* row = b + p * b_row;
    V bv[NV];
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      if (Partial && v + 1 == NV) {
        LoadFirst(row + v * L, last, &bv[v]);
      } else {
        std::memcpy(&bv[v], row + v * L, sizeof(V));
      }
      // Into a register: GCC would otherwise fold the load into each of
      // the R multiply-adds that use it, R loads where one does. (Clang,
      // which the sanitizer builds use, compiles this template outside the
      // tier's target, where a vector cannot be named as a register.)
#if defined(__GNUC__) && !defined(__clang__)
      __asm__("" : "+v"(bv[v]));
#endif
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const float s = at[p * at_p + r * at_r];
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[u][r][v] += s * bv[v];
    }
  };
  int64_t p = 0;
  for (; p + KU <= kb; p += KU) {
#pragma GCC unroll 16
    for (int u = 0; u < KU; ++u) step(u, p + u);
  }
  for (; p < kb; ++p) step(0, p);
#pragma GCC unroll 16
  for (int u = 1; u < KU; ++u) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 16
      for (int v = 0; v < NV; ++v) acc[0][r][v] += acc[u][r][v];
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float* out = c + r * cs.rows;
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      const int count = Partial && v + 1 == NV ? last : L;
      if (cs.cols == 1 && count == L) {
        std::memcpy(out + v * L, &acc[0][r][v], sizeof(V));
      } else if (cs.cols == 1) {
        StoreFirst(out + v * L, count, acc[0][r][v]);
      } else {
        float lanes[L];
        std::memcpy(lanes, &acc[0][r][v], sizeof lanes);
        for (int l = 0; l < count; ++l) out[(v * L + l) * cs.cols] = lanes[l];
      }
    }
  }
}

// at[p * R + r] = a[r, p] for p in [0, kb): a's block, transposed. (An
// AVX-512 masked gather per p measured slower: [4096, 4096] @ [4096, 16]
// 9.55 against 7.98 ms.)
template <int R>
inline void PackBlock(const float* a, GemmOperand as, int64_t kb, float* at) {
  for (int64_t p = 0; p < kb; ++p) {
    for (int r = 0; r < R; ++r) at[p * R + r] = a[r * as.rows + p * as.cols];
  }
}

// A tile carries each output's sum in float32 from one block of depth to the
// next; past kFoldDepth it starts again from 0 and what it had is added to a
// float64 total (R * n of them, given where k > kFoldDepth). Carried over
// the whole depth, [8, 4096] @ [4096, 4] of randn + 3 was off by 1.7e-6 of
// its largest value and [64, 16384] @ [16384, 4] by 5.7e-6, where torch is
// off by 2.4e-7 and 2.2e-7; folded every 512 by 2.6e-7 and 2.2e-7. The fold
// is R * n adds per 512 rows of depth.
constexpr int64_t kFoldDepth = 512;
static_assert(kFoldDepth % kMaxBlockDepth == 0 &&
                  kFoldDepth % kStreamedDepth == 0,
              "a fold ends where a block of depth does");

// R rows of c, all n columns, block by block of depth; `total` as above.
template <typename V, int R>
inline void Pass(const float* a, GemmOperand as, const float* b, int64_t b_row,
                 float* c, GemmOperand cs, int64_t k, int64_t n, int64_t depth,
                 double* total) {
  constexpr int L = kLanes<V>;
  constexpr int NV = TileVectors<V>(R);
  constexpr int KU = Phases(R);
  float at[kMaxBlockDepth * R];
  // Rows of a that are contiguous are read where they lie: their R streams
  // stay in L1 as well as the copy does, and the copy is saved ([8, 4096] @
  // [4096, 16]: 0.71 -> 0.58 of torch's time on AVX2).
  const bool direct = as.cols == 1;
  const int64_t at_r = direct ? as.rows : 1;
  const int64_t at_p = direct ? 1 : R;
  for (int64_t p0 = 0; p0 < k; p0 += depth) {
    const int64_t kb = k - p0 < depth ? k - p0 : depth;
    const float* ap = direct ? a + p0 : at;
    if (!direct) PackBlock<R>(a + p0 * as.cols, as, kb, at);
    const float* bp = b + p0 * b_row;
    const bool first = p0 % kFoldDepth == 0;
    int64_t j = 0;
    for (; j + NV * L <= n; j += NV * L) {
      Tile<V, R, NV, 1, false>(ap, at_r, at_p, bp + j, b_row, kb,
                               c + j * cs.cols, cs, first, L);
    }
    // Two vectors left (a narrow b, n = 16 on AVX2): one tile shares each
    // broadcast of a between them and reads each line of b once, where two
    // one-vector tiles read it twice, half a line each time, and load a
    // broadcast per multiply-add.
    if constexpr (NV > 2) {
      for (; j + 2 * L <= n; j += 2 * L) {
        Tile<V, R, 2, Phases(2 * R), false>(ap, at_r, at_p, bp + j, b_row, kb,
                                            c + j * cs.cols, cs, first, L);
      }
    }
    for (; j + L <= n; j += L) {
      Tile<V, R, 1, KU, false>(ap, at_r, at_p, bp + j, b_row, kb,
                               c + j * cs.cols, cs, first, L);
    }
    if (j < n) {
      Tile<V, R, 1, KU, true>(ap, at_r, at_p, bp + j, b_row, kb,
                              c + j * cs.cols, cs, first,
                              static_cast<int>(n - j));
    }
    if (total != nullptr && ((p0 + kb) % kFoldDepth == 0 || p0 + kb == k)) {
      for (int r = 0; r < R; ++r) {
        for (int64_t x = 0; x < n; ++x) {
          total[r * n + x] += c[r * cs.rows + x * cs.cols];
        }
      }
    }
  }
  if (total != nullptr) {
    for (int r = 0; r < R; ++r) {
      for (int64_t x = 0; x < n; ++x) {
        c[r * cs.rows + x * cs.cols] = static_cast<float>(total[r * n + x]);
        total[r * n + x] = 0;  // for the next pass
      }
    }
  }
}

// Pass<V, rows> for a run-time 1 <= rows <= R, by recursion at compile time
// (a table of function pointers would emit Pass outside the tier's
// flattened wrapper, compiled for the baseline).
template <typename V, int R>
inline void PassOf(int64_t rows, const float* a, GemmOperand as, const float* b,
                   int64_t b_row, float* c, GemmOperand cs, int64_t k,
                   int64_t n, int64_t depth, double* total) {
  if constexpr (R > 1) {
    if (rows < R) {
      PassOf<V, R - 1>(rows, a, as, b, b_row, c, cs, k, n, depth, total);
      return;
    }
  }
  Pass<V, R>(a, as, b, b_row, c, cs, k, n, depth, total);
}

template <typename V>
inline void Rows(const float* a, GemmOperand as, const float* b, int64_t b_row,
                 float* c, GemmOperand cs, int64_t m, int64_t k, int64_t n,
                 int64_t depth, double* total) {
  for (int64_t i = 0; i < m; i += kPassRows<V>) {
    const int64_t rows = m - i < kPassRows<V> ? m - i : kPassRows<V>;
    PassOf<V, kPassRows<V>>(rows, a + i * as.rows, as, b, b_row,
                            c + i * cs.rows, cs, k, n, depth, total);
  }
}

TF_CPU_AVX512 TF_CPU_FLATTEN void RowsAvx512(const float* a, GemmOperand as,
                                             const float* b, int64_t b_row,
                                             float* c, GemmOperand cs,
                                             int64_t m, int64_t k, int64_t n,
                                             int64_t depth, double* total) {
  Rows<F32x16>(a, as, b, b_row, c, cs, m, k, n, depth, total);
}
TF_CPU_AVX2 TF_CPU_FLATTEN void RowsAvx2(const float* a, GemmOperand as,
                                         const float* b, int64_t b_row,
                                         float* c, GemmOperand cs, int64_t m,
                                         int64_t k, int64_t n, int64_t depth,
                                         double* total) {
  Rows<Float8>(a, as, b, b_row, c, cs, m, k, n, depth, total);
}

// The columns of a tile of R rows: full tiles only where a split starts.
template <typename V>
int64_t TileColumns(int64_t rows) {
  return int64_t{kLanes<V>} * TileVectors<V>(static_cast<int>(rows));
}

// Passes of kPassRows<V> rows and one of the rest: the columns of both
// tiles must divide where a block starts. Where every tile of every pass
// sums in one chain (KU = 1: eight rows or more), a column's sums are the
// same in any tile, and any split keeps them: 1.
template <typename V>
int64_t ColumnTile(int64_t m) {
  const int64_t pass = kPassRows<V>;
  const int64_t first = m < pass ? m : pass;
  const int64_t rest = m > pass ? m % pass : 0;
  const auto one_chain = [](int64_t rows) {
    return Phases(static_cast<int>(rows)) == 1;
  };
  if (one_chain(first) && (rest == 0 || one_chain(rest))) return 1;
  int64_t tile = TileColumns<V>(first);
  if (rest != 0) tile = std::lcm(tile, TileColumns<V>(rest));
  return tile;
}

// The float64 totals of a pass (Pass) where k > kFoldDepth: on the stack up
// to kFoldStack, else one allocation; null where none is needed, and false
// where the allocation fails.
constexpr int64_t kFoldStack = 1024;
inline bool FoldTotals(int64_t m, int64_t k, int64_t n, int tier_rows,
                       double* stack, std::unique_ptr<double[]>* heap,
                       double** total) {
  *total = nullptr;
  if (k <= kFoldDepth) return true;
  const int64_t rows = m < tier_rows ? m : tier_rows;
  if (n > PTRDIFF_MAX / static_cast<int64_t>(sizeof(double)) / rows) {
    return false;
  }
  if (rows * n <= kFoldStack) {
    for (int64_t x = 0; x < rows * n; ++x) stack[x] = 0;
    *total = stack;
    return true;
  }
  heap->reset(new (std::nothrow) double[rows * n]());
  *total = heap->get();
  return *total != nullptr;
}

#endif  // TF_CPU_HAVE_AVX2_PATH

}  // namespace

bool GemmRows(const float* a, GemmOperand as, const float* b, GemmOperand bs,
              float* c, GemmOperand cs, int64_t m, int64_t k, int64_t n,
              int64_t whole_n) {
#if TF_CPU_HAVE_AVX2_PATH
  if ((m > kGemmRowsMax && n > kGemmRowsNarrowN) || (bs.cols != 1 && n > 1)) {
    return false;
  }
  const Tier tier = ActiveTier();
  if (tier == Tier::kBaseline) return false;
  double stack[kFoldStack];
  std::unique_ptr<double[]> heap;
  double* total = nullptr;
  const int rows =
      tier == Tier::kAvx512 ? kPassRows<F32x16> : kPassRows<Float8>;
  if (!FoldTotals(m, k, n, rows, stack, &heap, &total)) return false;
  const int64_t depth = BlockDepth(k, whole_n > n ? whole_n : n);
  if (tier == Tier::kAvx512) {
    RowsAvx512(a, as, b, bs.rows, c, cs, m, k, n, depth, total);
  } else {
    RowsAvx2(a, as, b, bs.rows, c, cs, m, k, n, depth, total);
  }
  return true;
#else
  (void)a, (void)as, (void)b, (void)bs, (void)c, (void)cs, (void)m, (void)k;
  (void)n, (void)whole_n;
#endif
  return false;
}

int64_t GemmRowsColumnTile(int64_t m) {
#if TF_CPU_HAVE_AVX2_PATH
  switch (ActiveTier()) {
    case Tier::kAvx512:
      return ColumnTile<F32x16>(m);
    case Tier::kAvx2:
      return ColumnTile<Float8>(m);
    default:
      break;
  }
#else
  (void)m;
#endif
  return 1;
}

}  // namespace torchferry::cpu
