// scaled_dot_product_attention, one query row at a time with an online
// softmax (flash-attention style): keys are scored in blocks, the running
// maximum and sum are rescaled as each block raises the maximum, and the
// output row accumulates p * v in the accumulate type. Each key block's sums
// (kKeyBlock terms) are taken in the accumulate type and added to running
// totals in float64, so that no float32 sum runs over more than one block
// however many keys there are (sums.h). Memory is O(E + Ev) per row,
// whatever L and S are. A row that keeps no key (a fully masked row,
// or a causal row before the first key) is 0, as in torch.
//
// The hot loops (q . k over E, acc += p * v over Ev) run on unit-stride
// arrays: float32 rows are read in place, other rows are widened into stack
// buffers first; the instantiation for the CPU's tier is chosen at run time
// (isa.h).
//
// A query chunk of kBlockedMinRows rows or more (prefill, chunked prefill)
// in float32, float16 or bfloat16 goes through blocks instead: kQueryBlock
// queries against kKeyBlock keys at a time, the scores and p @ v as two
// GEMMs on the in-place tiles (gemm_rows.h; BLIS where a block is wider than
// they take), with the same online softmax over the score block. Scratch is
// one allocation of a few blocks per share of heads, whatever L and S are;
// where it fails the call fails (TF_ERROR_OUT_OF_MEMORY): the rows above
// would take that share's heads with sums in another order, and a result
// must not depend on how the heads were shared out.
//
// (batch, head) pairs split over the host's threads (parallel.h); each
// share has its own scratch.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

constexpr int64_t kKeyBlock = 64;

// What one query row needs: its keys and values, strides in elements.
template <typename T>
struct RowArgs {
  const T* q;  // the query row
  int64_t q_step;
  const T* k;  // key 0 of the kv head
  int64_t k_row, k_step;
  const T* v;
  int64_t v_row, v_step;
  const T* mask;        // T-typed additive mask row, or nullptr
  const uint8_t* keep;  // bool mask row, or nullptr
  int64_t mask_step;
  T* out;
  int64_t out_step;
  int64_t keys;  // keys this row may see (causal limit applied)
  int64_t e, ev;
  double scale;
};

// Scratch of one call: the widened query, key and value rows, one key
// block's output accumulator, the row's running output in float64 and one
// block of scores.
template <typename A>
struct Scratch {
  A* q;
  A* k;
  A* v;
  A* acc;
  double* total;
  A scores[kKeyBlock];
};

// `n` elements of `p` (stride `step`) in the accumulate type: `p` itself
// when it already is one and unit-stride, else widened into `buf`.
template <typename Isa, typename T, typename A>
inline const A* RowOf(const T* p, int64_t step, int64_t n, A* buf) {
  if constexpr (std::is_same_v<T, A>) {
    if (step == 1) return p;
  }
  if constexpr (kBlocked<T>) {
    if (step == 1) {
      WidenBlock<Isa>(p, buf, n);
      return buf;
    }
  }
  for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<A>(Load(p[i * step]));
  return buf;
}

// a . b over n, in 16 float32 lanes (two Float8 values) so that it
// vectorises without the compiler reassociating on its own.
inline float Dot(const float* a, const float* b, int64_t n) {
  Float8 lanes[2] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    Float8 a0, a1, b0, b1;
    std::memcpy(&a0, a + i, sizeof a0);
    std::memcpy(&a1, a + i + 8, sizeof a1);
    std::memcpy(&b0, b + i, sizeof b0);
    std::memcpy(&b1, b + i + 8, sizeof b1);
    lanes[0] += a0 * b0;
    lanes[1] += a1 * b1;
  }
  float sum = 0;
  for (; i < n; ++i) sum += a[i] * b[i];
  // Lanes summed by halves: three shuffles and adds where lane by lane took
  // sixteen extracts and a chain of sixteen adds per key. With the block's
  // exponentials vectorised (AttendRow), a decode call of 8 query heads over
  // 4 kv heads, 32 keys of E = 32, float32: 7.4-8.4 -> 3.4-4.1 us.
  typedef float Float4 __attribute__((vector_size(16)));
  const Float8 t = lanes[0] + lanes[1];
  const Float4 h = __builtin_shufflevector(t, t, 0, 1, 2, 3) +
                   __builtin_shufflevector(t, t, 4, 5, 6, 7);
  return sum + ((h[0] + h[2]) + (h[1] + h[3]));
}
inline double Dot(const double* a, const double* b, int64_t n) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// p + by, or p itself when p is null: a tensor with no elements (head dim
// 0) may have no memory, and pointer arithmetic on null is undefined even
// where the result is never read.
template <typename P>
inline P* Advance(P* p, int64_t by) {
  return p != nullptr ? p + by : p;
}

template <typename A>
inline void Axpy(A* __restrict acc, const A* __restrict v, A p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += p * v[i];
}
template <typename A>
inline void Scale(A* acc, A factor, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] *= factor;
}

template <typename Isa, typename T, typename A>
inline void AttendRow(const RowArgs<T>& r, Scratch<A>& w) {
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  const A* q = RowOf<Isa>(r.q, r.q_step, r.e, w.q);
  for (int64_t i = 0; i < r.ev; ++i) w.total[i] = 0;
  A max = kNegInf;
  double sum = 0;
  const A scale = static_cast<A>(r.scale);
  for (int64_t j0 = 0; j0 < r.keys; j0 += kKeyBlock) {
    const int64_t len = r.keys - j0 < kKeyBlock ? r.keys - j0 : kKeyBlock;
    A block_max = kNegInf;
    bool any_nan = false;
    for (int64_t j = 0; j < len; ++j) {
      const int64_t key = j0 + j;
      A s;
      if (r.keep != nullptr && r.keep[key * r.mask_step] == 0) {
        s = kNegInf;
      } else {
        const A* k =
            RowOf<Isa>(Advance(r.k, key * r.k_row), r.k_step, r.e, w.k);
        s = Dot(q, k, r.e) * scale;
        if (r.mask != nullptr)
          s += static_cast<A>(Load(r.mask[key * r.mask_step]));
      }
      w.scores[j] = s;
      block_max = s > block_max ? s : block_max;  // NaN poisons the sum
      any_nan |= s != s;
    }
    // Every key of the block masked; a block of NaN scores is not skipped:
    // its exponentials are NaN and poison the sum, as in torch.
    if (block_max == kNegInf && !any_nan) continue;
    if (block_max > max) {
      const double correction = ExpOf(max - block_max);  // 0 for the first
      Scale(w.total, correction, r.ev);
      sum *= correction;
      max = block_max;
    }
    // The block's exponentials in a loop of their own, which vectorises.
    for (int64_t j = 0; j < len; ++j) w.scores[j] = ExpOf(w.scores[j] - max);
    for (int64_t i = 0; i < r.ev; ++i) w.acc[i] = 0;
    A block_sum = 0;
    for (int64_t j = 0; j < len; ++j) {
      const A p = w.scores[j];
      if (p == 0) continue;  // masked, or too small to count
      block_sum += p;
      const A* v =
          RowOf<Isa>(Advance(r.v, (j0 + j) * r.v_row), r.v_step, r.ev, w.v);
      Axpy(w.acc, v, p, r.ev);
    }
    sum += block_sum;
    for (int64_t i = 0; i < r.ev; ++i) w.total[i] += w.acc[i];
  }
  // No key kept: torch (2.5 and later) gives 0, not NaN.
  const double inv = sum > 0 || sum != sum ? 1.0 / sum : 0.0;
  for (int64_t i = 0; i < r.ev; ++i) {
    r.out[i * r.out_step] =
        Store<T>(static_cast<ComputeOf<T>>(static_cast<A>(w.total[i] * inv)));
  }
}

template <typename T, typename A>
TF_CPU_FLATTEN void AttendRowBase(const RowArgs<T>& r, Scratch<A>& w) {
  AttendRow<BaselineIsa>(r, w);
}
template <typename T, typename A>
TF_CPU_AVX2 TF_CPU_FLATTEN void AttendRowAvx2(const RowArgs<T>& r,
                                              Scratch<A>& w) {
  AttendRow<Avx2Isa>(r, w);
}
template <typename T, typename A>
TF_CPU_AVX512 TF_CPU_FLATTEN void AttendRowAvx512(const RowArgs<T>& r,
                                                  Scratch<A>& w) {
  AttendRow<Avx512Isa>(r, w);
}

// ---- blocks of query rows: prefill -------------------------------------

constexpr int64_t kQueryBlock = 64;
constexpr int64_t kBlockedMinRows = 16;

// One (batch, head) of a blocked call: strides in elements.
template <typename T>
struct HeadArgs {
  const T* q;
  int64_t q_row, q_step;
  const T* k;
  int64_t k_row, k_step;
  const T* v;
  int64_t v_row, v_step;
  const T* mask;        // T-typed additive mask of the head, or nullptr
  const uint8_t* keep;  // bool mask of the head, or nullptr
  int64_t mask_row, mask_step;
  T* out;
  int64_t out_row, out_step;
  int64_t L, S, e, ev;
  int64_t causal;  // 0 none, 1 top-left, else lower-right
  float scale;
};

// The float32 blocks of one call: q^T [e, kQueryBlock] (a query per
// column), a key block [kKeyBlock, e] and a value block [kKeyBlock, ev]
// where they must be widened, the scores (then p) transposed, [kKeyBlock,
// kQueryBlock], p @ v and the accumulator [kQueryBlock, ev], and per query
// its running max, sum, key count and the block's max.
//
// The running sums and outputs are float64 (`totals`, kQueryBlock * (ev +
// 1) of them): the float32 ones, `sum` and p @ v in `pv`, cover one key
// block.
struct BlockScratch {
  float *q, *k, *v, *s, *pv, *max, *sum, *block_max, *shift;
  double *acc, *total;
  int64_t keys[kQueryBlock];

  // The doubles of `totals`, or -1 where that count overflows.
  static int64_t Doubles(int64_t ev) {
    int64_t rows, total;
    if (__builtin_add_overflow(ev, 1, &rows) ||
        __builtin_mul_overflow(kQueryBlock, rows, &total) ||
        total > PTRDIFF_MAX / static_cast<int64_t>(sizeof(double))) {
      return -1;
    }
    return total;
  }

  // The floats of the blocks, or -1 where that count overflows (stride-0
  // operands can have head dims up to 2**63 - 1).
  static int64_t Floats(int64_t e, int64_t ev) {
    int64_t q, kv, e_ev, pv, total;
    if (__builtin_mul_overflow(kQueryBlock, e, &q) ||
        __builtin_add_overflow(e, ev, &e_ev) ||
        __builtin_mul_overflow(kKeyBlock, e_ev, &kv) ||
        __builtin_mul_overflow(kQueryBlock, ev, &pv) ||
        __builtin_add_overflow(q, kv, &total) ||
        __builtin_add_overflow(total, pv, &total) ||
        __builtin_add_overflow(total, kKeyBlock * kQueryBlock + 4 * kQueryBlock,
                               &total) ||
        total > PTRDIFF_MAX / static_cast<int64_t>(sizeof(float))) {
      return -1;
    }
    return total;
  }
  void Carve(float* p, double* totals, int64_t e, int64_t ev) {
    q = p;
    k = q + kQueryBlock * e;
    v = k + kKeyBlock * e;
    s = v + kKeyBlock * ev;
    pv = s + kKeyBlock * kQueryBlock;
    max = pv + kQueryBlock * ev;
    sum = max + kQueryBlock;
    block_max = sum + kQueryBlock;
    shift = block_max + kQueryBlock;
    acc = totals;
    total = acc + kQueryBlock * ev;
  }
};

// `rows` rows of `cols` elements into float32 at dst, transposed:
// dst[c * kQueryBlock + r].
template <typename T>
inline void WidenTransposed(const T* p, int64_t row, int64_t step, int64_t rows,
                            int64_t cols, float* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = p + r * row;
    for (int64_t c = 0; c < cols; ++c) {
      dst[c * kQueryBlock + r] = static_cast<float>(Load(in[c * step]));
    }
  }
}

// c = a @ b on the in-place tiles (gemm_rows.h: these blocks have at most
// kQueryBlock columns, or few rows), else on BLIS.
inline bool Product(const float* a, GemmOperand as, const float* b,
                    GemmOperand bs, float* c, GemmOperand cs, int64_t m,
                    int64_t k, int64_t n) {
  return GemmRows(a, as, b, bs, c, cs, m, k, n, n) ||
         Gemm(a, as, b, bs, c, cs, m, k, n, m);
}

// Rows [i0, i0 + qb) of one head; false, with some of its rows written, if
// neither GEMM took a block (BLIS refuses strides no dense matrix has, such
// as a stride-0 key block on a CPU below AVX2; the caller then redoes the
// head row by row).
//
// The scores are computed transposed, s^T = k @ q^T, so that every softmax
// step is a loop over the queries of one key (contiguous, vectorised, no
// reduction across lanes), q is transposed once per query block rather
// than each key block, and float32 keys are read in place. p @ v reads p^T
// through its strides.
template <typename Isa, typename T>
inline bool AttendBlock(const HeadArgs<T>& h, int64_t i0, int64_t qb,
                        BlockScratch& w) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  constexpr int64_t QB = kQueryBlock;
  const int64_t e = h.e, ev = h.ev;
  WidenTransposed(Advance(h.q, i0 * h.q_row), h.q_row, h.q_step, qb, e, w.q);
  int64_t most = 0, fewest = h.S;
  for (int64_t i = 0; i < qb; ++i) {
    int64_t keys = h.S;
    if (h.causal != 0) {
      const int64_t last = h.causal == 1 ? i0 + i : i0 + i + h.S - h.L;
      keys = last + 1 < h.S ? (last + 1 > 0 ? last + 1 : 0) : h.S;
    }
    w.keys[i] = keys;
    most = keys > most ? keys : most;
    fewest = keys < fewest ? keys : fewest;
    w.max[i] = kNegInf;
    w.total[i] = 0;
  }
  for (int64_t x = 0; x < qb * ev; ++x) w.acc[x] = 0;
  for (int64_t j0 = 0; j0 < most; j0 += kKeyBlock) {
    const int64_t kb = most - j0 < kKeyBlock ? most - j0 : kKeyBlock;
    const float* kblock = w.k;
    GemmOperand ks{e, 1};
    if constexpr (std::is_same_v<T, float>) {
      kblock = Advance(h.k, j0 * h.k_row);
      ks = {h.k_row, h.k_step};
    } else {
      WidenRows<Isa>(Advance(h.k, j0 * h.k_row), h.k_row, h.k_step, kb, e, w.k);
    }
    if (!Product(kblock, ks, w.q, {QB, 1}, w.s, {QB, 1}, kb, e, qb)) {
      return false;
    }
    for (int64_t x = 0; x < kb * QB; ++x) w.s[x] *= h.scale;
    if (h.keep != nullptr || h.mask != nullptr) {
      for (int64_t j = 0; j < kb; ++j) {
        float* s = w.s + j * QB;
        const int64_t at = (i0 * h.mask_row) + (j0 + j) * h.mask_step;
        if (h.keep != nullptr) {
          for (int64_t i = 0; i < qb; ++i) {
            if (h.keep[at + i * h.mask_row] == 0) s[i] = kNegInf;
          }
        } else {
          for (int64_t i = 0; i < qb; ++i) {
            s[i] += static_cast<float>(Load(h.mask[at + i * h.mask_row]));
          }
        }
      }
    }
    if (j0 + kb > fewest) {  // keys past some query's causal limit
      for (int64_t j = 0; j < kb; ++j) {
        float* s = w.s + j * QB;
        for (int64_t i = 0; i < qb; ++i) {
          if (j0 + j >= w.keys[i]) s[i] = kNegInf;
        }
      }
    }
    // The block's max per query (NaN ignored: it poisons the sum instead),
    // then the running max raised where it grew, rescaling what came before.
    for (int64_t i = 0; i < qb; ++i) w.block_max[i] = kNegInf;
    for (int64_t j = 0; j < kb; ++j) {
      const float* s = w.s + j * QB;
      for (int64_t i = 0; i < qb; ++i) {
        w.block_max[i] = s[i] > w.block_max[i] ? s[i] : w.block_max[i];
      }
    }
    for (int64_t i = 0; i < qb; ++i) {
      if (w.block_max[i] > w.max[i]) {
        const double correction = ExpF(w.max[i] - w.block_max[i]);  // 0 first
        double* acc = w.acc + i * ev;
        for (int64_t c = 0; c < ev; ++c) acc[c] *= correction;
        w.total[i] *= correction;
        w.max[i] = w.block_max[i];
      }
      // A query with no key kept so far subtracts 0: exp(-inf) is 0 then,
      // where -inf - -inf would be NaN.
      w.shift[i] = w.max[i] == kNegInf ? 0.0f : w.max[i];
    }
    for (int64_t i = 0; i < qb; ++i) w.sum[i] = 0;
    for (int64_t j = 0; j < kb; ++j) {
      float* s = w.s + j * QB;
      for (int64_t i = 0; i < qb; ++i) s[i] = ExpF(s[i] - w.shift[i]);
      for (int64_t i = 0; i < qb; ++i) w.sum[i] += s[i];
    }
    for (int64_t i = 0; i < qb; ++i) w.total[i] += w.sum[i];
    const float* vblock = w.v;
    GemmOperand vs{ev, 1};
    bool v_in_place = false;
    if constexpr (std::is_same_v<T, float>) {
      if (h.v_step == 1) {  // the tiles read b's rows in place
        vblock = Advance(h.v, j0 * h.v_row);
        vs = {h.v_row, 1};
        v_in_place = true;
      }
    }
    if (!v_in_place) {
      WidenRows<Isa>(Advance(h.v, j0 * h.v_row), h.v_row, h.v_step, kb, ev,
                     w.v);
    }
    if (!Product(w.s, {1, QB}, vblock, vs, w.pv, {ev, 1}, qb, kb, ev)) {
      return false;
    }
    for (int64_t x = 0; x < qb * ev; ++x) w.acc[x] += w.pv[x];
  }
  for (int64_t i = 0; i < qb; ++i) {
    // No key kept: torch (2.5 and later) gives 0, not NaN.
    const double sum = w.total[i];
    const double inv = sum > 0 || sum != sum ? 1.0 / sum : 0.0;
    T* out = h.out + (i0 + i) * h.out_row;
    const double* acc = w.acc + i * ev;
    for (int64_t c = 0; c < ev; ++c) {
      out[c * h.out_step] =
          Store<T>(static_cast<ComputeOf<T>>(static_cast<float>(acc[c] * inv)));
    }
  }
  return true;
}

template <typename Isa, typename T>
inline void AttendHead(const HeadArgs<T>& h, BlockScratch& w, bool* done) {
  *done = true;
  for (int64_t i0 = 0; i0 < h.L && *done; i0 += kQueryBlock) {
    *done = AttendBlock<Isa>(
        h, i0, h.L - i0 < kQueryBlock ? h.L - i0 : kQueryBlock, w);
  }
}

template <typename T>
TF_CPU_FLATTEN void AttendHeadBase(const HeadArgs<T>& h, BlockScratch& w,
                                   bool* done) {
  AttendHead<BaselineIsa>(h, w, done);
}
template <typename T>
TF_CPU_AVX2 TF_CPU_FLATTEN void AttendHeadAvx2(const HeadArgs<T>& h,
                                               BlockScratch& w, bool* done) {
  AttendHead<Avx2Isa>(h, w, done);
}
template <typename T>
TF_CPU_AVX512 TF_CPU_FLATTEN void AttendHeadAvx512(const HeadArgs<T>& h,
                                                   BlockScratch& w,
                                                   bool* done) {
  AttendHead<Avx512Isa>(h, w, done);
}

// Every element of `out` (any strides) set to NaN.
template <typename T>
void FillNan(const tf_tensor& out) {
  T* data = DataOf<T>(out);
  int64_t numel = 1;
  for (int d = 0; d < out.ndim; ++d) numel *= out.shape[d];
  if (numel == 0) return;
  const T nan = Store<T>(
      static_cast<ComputeOf<T>>(std::numeric_limits<double>::quiet_NaN()));
  int64_t index[kMaxRank] = {};
  for (int64_t i = 0; i < numel; ++i) {
    int64_t offset = 0;
    for (int d = 0; d < out.ndim; ++d) offset += index[d] * out.strides[d];
    data[offset] = nan;
    for (int d = out.ndim - 1; d >= 0 && ++index[d] == out.shape[d]; --d) {
      index[d] = 0;
    }
  }
}

struct Attention {
  static constexpr const char* kName = "scaled_dot_product_attention";
  template <typename T>
  static tf_status Run(const tf_call* call) {
    if (tf_status st = CheckArity(call, kName, 4, 2, 1); st != TF_OK) {
      return st;
    }
    using A = AccumulateOf<T>;
    const tf_tensor& q = TensorArg(call->inputs, 0);
    const tf_tensor& k = TensorArg(call->inputs, 1);
    const tf_tensor& v = TensorArg(call->inputs, 2);
    const tf_tensor* mask = call->inputs[3].kind == TF_ARG_TENSOR
                                ? call->inputs[3].value.tensor
                                : nullptr;
    const tf_tensor& out = call->outputs[0];
    const int n = q.ndim;
    if (n < 3 || k.ndim != n || v.ndim != n || out.ndim != n ||
        (mask != nullptr && mask->ndim != n) || n > kMaxRank) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "scaled_dot_product_attention: expected q, k, v, mask and "
                  "out of one rank from 3 to %d, found %d, %d, %d and %d",
                  kMaxRank, q.ndim, k.ndim, v.ndim, out.ndim);
    }
    const int64_t heads = out.shape[n - 3], kv_heads = k.shape[n - 3];
    const int64_t L = q.shape[n - 2], E = q.shape[n - 1];
    const int64_t S = k.shape[n - 2], Ev = v.shape[n - 1];
    if (kv_heads == 0 || heads % kv_heads != 0) {
      return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                  "scaled_dot_product_attention: expected query heads a "
                  "multiple of key heads, found %lld and %lld",
                  static_cast<long long>(heads),
                  static_cast<long long>(kv_heads));
    }
    const int64_t group = heads / kv_heads;
    const int64_t causal = call->attrs[0].value.i;
    const double scale = call->attrs[1].value.f;
    const bool bool_mask = mask != nullptr && mask->dtype.code == TF_DTYPE_BOOL;
    if (scale != scale && E > 0 && S > 0) {
      // Every score is NaN, masked ones too (torch adds the mask to them):
      // every row is NaN, as in torch.
      FillNan<T>(out);
      return TF_OK;
    }

    // The rows' scratch is 2 (E + Ev) values past the stack's room, which
    // may overflow for stride-0 operands: no memory either.
    constexpr int64_t kStackHead = 256;
    const bool on_stack = E <= kStackHead && Ev <= kStackHead;
    int64_t rows = 0;
    const bool sized = !__builtin_add_overflow(E, Ev, &rows) &&
                       !__builtin_mul_overflow(rows, 2, &rows) &&
                       rows <= PTRDIFF_MAX / static_cast<int64_t>(sizeof(A));
    if (!on_stack && !sized) {
      return Fail(call, TF_ERROR_OUT_OF_MEMORY,
                  "scaled_dot_product_attention: no memory for the scratch "
                  "rows or blocks (E = %lld, Ev = %lld)",
                  static_cast<long long>(E), static_cast<long long>(Ev));
    }

    // An empty operand (a head dim or key count of 0) may have no data
    // pointer, and offsetting a null pointer is undefined: it stays null.
    const T* qd = DataOf<const T>(q);
    const T* kd = DataOf<const T>(k);
    const T* vd = DataOf<const T>(v);
    const T* md =
        mask != nullptr && !bool_mask ? DataOf<const T>(*mask) : nullptr;
    const uint8_t* keep = bool_mask ? DataOf<const uint8_t>(*mask) : nullptr;
    T* od = DataOf<T>(out);

    // The batch dims, walked as one linear index.
    const int batch_dims = n - 3;
    int64_t batch = 1;
    for (int d = 0; d < batch_dims; ++d) batch *= out.shape[d];

    // Units of one (batch, head) each: a head is computed by the same code,
    // its query blocks and its sums cut as one thread cuts them, whatever
    // share it falls in, so results do not depend on the thread count. Each
    // share has its own scratch.
    std::atomic<bool> out_of_memory{false};
    auto attend_units = [&](int64_t u0, int64_t u1) {
      // Scratch, per share: on the stack for the usual head sizes, else one
      // allocation.
      const int64_t e_room = on_stack ? kStackHead : E;
      const int64_t ev_room = on_stack ? kStackHead : Ev;
      A stack[4 * kStackHead];
      double total_stack[kStackHead];
      std::unique_ptr<A[]> heap;
      std::unique_ptr<double[]> total_heap;
      if (!on_stack) {
        if (sized) {
          heap.reset(new (std::nothrow) A[rows]);
          total_heap.reset(new (std::nothrow) double[Ev]);
        }
        if (!heap || !total_heap) {
          out_of_memory.store(true, std::memory_order_relaxed);
          return;
        }
      }
      // The blocks of a query chunk, where the call has one (see the top).
      std::unique_ptr<float[]> block_memory;
      std::unique_ptr<double[]> block_totals;
      BlockScratch blocks;
      if constexpr (std::is_same_v<A, float>) {
        const int64_t floats = BlockScratch::Floats(E, Ev);
        const int64_t doubles = BlockScratch::Doubles(Ev);
        if (L >= kBlockedMinRows && S > 0 && E > 0 && Ev > 0 && floats > 0 &&
            doubles > 0) {
          block_memory.reset(new (std::nothrow) float[floats]);
          block_totals.reset(new (std::nothrow) double[doubles]);
          if (!block_memory || !block_totals) {
            out_of_memory.store(true, std::memory_order_relaxed);
            return;
          }
          blocks.Carve(block_memory.get(), block_totals.get(), E, Ev);
        }
      }
      Scratch<A> w;
      w.q = on_stack ? stack : heap.get();
      w.k = w.q + e_room;
      w.v = w.k + e_room;
      w.acc = w.v + ev_room;
      w.total = on_stack ? total_stack : total_heap.get();

      for (int64_t u = u0; u < u1; ++u) {
        const int64_t b = u / heads, h = u % heads;
        int64_t off_q = 0, off_k = 0, off_v = 0, off_m = 0, off_o = 0;
        for (int64_t d = batch_dims - 1, rest = b; d >= 0; --d) {
          const int64_t i = rest % out.shape[d];
          rest /= out.shape[d];
          off_q += i * q.strides[d];
          off_k += i * k.strides[d];
          off_v += i * v.strides[d];
          off_o += i * out.strides[d];
          if (mask != nullptr) off_m += i * mask->strides[d];
        }
        {
          const int64_t kvh = h / group;
          RowArgs<T> r;
          r.q_step = q.strides[n - 1];
          r.k = Advance(kd, off_k + kvh * k.strides[n - 3]);
          r.k_row = k.strides[n - 2];
          r.k_step = k.strides[n - 1];
          r.v = Advance(vd, off_v + kvh * v.strides[n - 3]);
          r.v_row = v.strides[n - 2];
          r.v_step = v.strides[n - 1];
          r.mask_step = mask != nullptr ? mask->strides[n - 1] : 0;
          r.out_step = out.strides[n - 1];
          r.e = E;
          r.ev = Ev;
          r.scale = scale;
          // The blocks exist for the float32-accumulating types only.
          if constexpr (std::is_same_v<A, float>) {
            if (block_memory) {
              HeadArgs<T> hd;
              hd.q = Advance(qd, off_q + h * q.strides[n - 3]);
              hd.q_row = q.strides[n - 2];
              hd.q_step = r.q_step;
              hd.k = r.k;
              hd.k_row = r.k_row;
              hd.k_step = r.k_step;
              hd.v = r.v;
              hd.v_row = r.v_row;
              hd.v_step = r.v_step;
              const int64_t m_head =
                  mask != nullptr ? off_m + h * mask->strides[n - 3] : 0;
              hd.mask = md != nullptr ? md + m_head : nullptr;
              hd.keep = keep != nullptr ? keep + m_head : nullptr;
              hd.mask_row = mask != nullptr ? mask->strides[n - 2] : 0;
              hd.mask_step = r.mask_step;
              hd.out = od + off_o + h * out.strides[n - 3];
              hd.out_row = out.strides[n - 2];
              hd.out_step = r.out_step;
              hd.L = L;
              hd.S = S;
              hd.e = E;
              hd.ev = Ev;
              hd.causal = causal;
              hd.scale = static_cast<float>(scale);
              bool done = false;
              TF_CPU_DISPATCH(AttendHead, hd, blocks, &done);
              if (done) continue;
            }
          }
          for (int64_t i = 0; i < L; ++i) {
            r.q = Advance(qd,
                          off_q + h * q.strides[n - 3] + i * q.strides[n - 2]);
            r.out = Advance(
                od, off_o + h * out.strides[n - 3] + i * out.strides[n - 2]);
            const int64_t m_row = mask != nullptr
                                      ? off_m + h * mask->strides[n - 3] +
                                            i * mask->strides[n - 2]
                                      : 0;
            r.mask = md != nullptr ? md + m_row : nullptr;
            r.keep = keep != nullptr ? keep + m_row : nullptr;
            // Causal: keys up to i (top-left) or i + S - L (lower-right).
            int64_t keys = S;
            if (causal != 0) {
              const int64_t last = causal == 1 ? i : i + S - L;
              keys = last + 1 < S ? (last + 1 > 0 ? last + 1 : 0) : S;
            }
            r.keys = keys;
            TF_CPU_DISPATCH(AttendRow, r, w);
          }
        }
      }
    };
    // A unit's steps, about L * S * (E + Ev), saturated: from kShareWork on
    // a unit is a share of its own.
    const double unit_work = static_cast<double>(L) * static_cast<double>(S) *
                             (static_cast<double>(E) + static_cast<double>(Ev));
    const int64_t cost = unit_work < static_cast<double>(kShareWork)
                             ? static_cast<int64_t>(unit_work)
                             : kShareWork;
    ParallelFor(batch * heads, cost, attend_units);
    if (out_of_memory.load(std::memory_order_relaxed)) {
      return Fail(call, TF_ERROR_OUT_OF_MEMORY,
                  "scaled_dot_product_attention: no memory for the scratch "
                  "rows or blocks (E = %lld, Ev = %lld)",
                  static_cast<long long>(E), static_cast<long long>(Ev));
    }
    return TF_OK;
  }
};

constexpr auto kTable = KernelsFor<Attention>(FloatTypes{});

}  // namespace

KernelList AttentionKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
