// BLIS's typed API (bli_?gemm) takes a row and a column stride for each
// operand, so every layout torch hands over (row- or column-major, a
// transposed view such as weight.t(), a sliced view) goes to BLIS without a
// copy; BLIS packs what it needs itself.
#include "gemm.h"

#include <blis.h>

#include "isa.h"

namespace torchferry::cpu {
namespace {

// BLIS picks its kernels from CPUID once, and on an AVX-512 Intel CPU whose
// model it does not know it cannot count the FMA units and falls back to its
// AVX2 kernels ("haswell"). Where the plugin's tier is AVX-512 and BLIS chose
// haswell, gemm calls of at least kWideRows rows pass BLIS's AVX-512 context
// ("skx") instead. Measured on a model-167 Xeon, one thread, float32
// [m, K] @ [K, K], b contiguous / b = W.t(), skx's time over haswell's:
// K = 1024: m = 8 1.76 / 2.53, m = 32 0.95 / 1.17, m = 64 0.78 / 0.82,
// m = 128 0.62 / 0.65, m = 512 0.64 / 0.66; K = 256: m = 32 0.82 / 1.10,
// m = 64 0.77 / 0.81, m = 512 0.63 / 0.63 (skx's 32-row micro-tile wastes
// most of its work on fewer rows). [1024, 1024]^2: 121 against 210 GFLOP/s,
// torch 218. A cap of TORCHFERRY_CPU_ISA=avx2 keeps BLIS's own choice, as
// does a BLIS built without the skx configuration.
constexpr int64_t kWideRows = 64;

// The native context of what bli_gks_lookup_id returns, whose type changed:
// cntx_t** in BLIS 0.9 (Debian 12), const cntx_t* const* in 1.x (Debian 13),
// the native context itself (const cntx_t*) in 2.x (Debian unstable). 0.9's
// calls take a cntx_t*, so that type is kept; BLIS never writes through it.
[[maybe_unused]] inline cntx_t* NativeContext(cntx_t** contexts) {
  return contexts != nullptr ? contexts[BLIS_NAT] : nullptr;
}
[[maybe_unused]] inline cntx_t* NativeContext(const cntx_t* const* contexts) {
  return contexts != nullptr ? const_cast<cntx_t*>(contexts[BLIS_NAT])
                             : nullptr;
}
[[maybe_unused]] inline cntx_t* NativeContext(const cntx_t* context) {
  return const_cast<cntx_t*>(context);
}

cntx_t* WideContext() {
  static cntx_t* const context = []() -> cntx_t* {
    bli_init();
    if (ActiveTier() != Tier::kAvx512 ||
        bli_arch_query_id() != BLIS_ARCH_HASWELL) {
      return nullptr;  // BLIS's own
    }
    return NativeContext(bli_gks_lookup_id(BLIS_ARCH_SKX));
  }();
  return context;
}

// BLIS checks that strides describe a matrix that does not overlap itself
// and aborts the process otherwise; a dim of size 1 may carry any stride in
// torch (its stride is never used), so it is given one BLIS accepts. Zero,
// negative and self-overlapping strides (a read-only view may have them) are
// left to the caller's loop.
bool Canonical(GemmOperand s, int64_t rows, int64_t cols, inc_t* rs,
               inc_t* cs) {
  int64_t r = s.rows;
  int64_t c = s.cols;
  if (rows == 1 && cols == 1) {
    r = 1;
    c = 1;
  } else if (rows == 1) {
    r = c * cols;
  } else if (cols == 1) {
    c = r * rows;
  }
  if (r <= 0 || c <= 0) return false;
  const bool row_major = c == 1 && (r >= cols || rows == 1);
  const bool col_major = r == 1 && (c >= rows || cols == 1);
  const bool general = r >= c * cols || c >= r * rows;
  if (!row_major && !col_major && !general) return false;
  *rs = static_cast<inc_t>(r);
  *cs = static_cast<inc_t>(c);
  return true;
}

// BLIS's blocked path alone (gemm.h says why). The settings are read once;
// each call hands BLIS its own copy, because the API takes the runtime by a
// non-const pointer and product shares run on several threads at once.
rntm_t NoSmallKernels() {
  static const rntm_t settings = [] {
    rntm_t r;
    bli_rntm_init_from_global(&r);
    bli_rntm_disable_l3_sup(&r);
    return r;
  }();
  return settings;
}

template <typename T, typename Fn, typename GemvFn>
bool Run(Fn fn, GemvFn gemv, const T* a, GemmOperand as, const T* b,
         GemmOperand bs, T* c, GemmOperand cs, int64_t m, int64_t k, int64_t n,
         int64_t whole_m) {
  inc_t rsa, csa, rsb, csb, rsc, csc;
  if (!Canonical(as, m, k, &rsa, &csa) || !Canonical(bs, k, n, &rsb, &csb) ||
      !Canonical(cs, m, n, &rsc, &csc)) {
    return false;
  }
  T one = 1;
  T zero = 0;
  // BLIS's 0.9 API takes non-const pointers to its inputs; it only reads
  // them.
  if (whole_m == 1 && k > 0) {
    // One row (a decode step's linear): BLIS's gemm packs all of b for it,
    // a copy never reused, and is 5-7x slower than gemv, which reads b
    // once in place. c = a b is c^T = b^T a^T: b^T has b's strides swapped.
    gemv(BLIS_NO_TRANSPOSE, BLIS_NO_CONJUGATE, static_cast<dim_t>(n),
         static_cast<dim_t>(k), &one, const_cast<T*>(b), csb, rsb,
         const_cast<T*>(a), csa, &zero, c, csc, nullptr, nullptr);
    return true;
  }
  rntm_t runtime = NoSmallKernels();
  fn(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, static_cast<dim_t>(m),
     static_cast<dim_t>(n), static_cast<dim_t>(k), &one, const_cast<T*>(a), rsa,
     csa, const_cast<T*>(b), rsb, csb, &zero, c, rsc, csc,
     whole_m >= kWideRows ? WideContext() : nullptr, &runtime);
  return true;
}

}  // namespace

bool Gemm(const float* a, GemmOperand as, const float* b, GemmOperand bs,
          float* c, GemmOperand cs, int64_t m, int64_t k, int64_t n,
          int64_t whole_m) {
  return Run(&bli_sgemm_ex, &bli_sgemv_ex, a, as, b, bs, c, cs, m, k, n,
             whole_m);
}

bool Gemm(const double* a, GemmOperand as, const double* b, GemmOperand bs,
          double* c, GemmOperand cs, int64_t m, int64_t k, int64_t n,
          int64_t whole_m) {
  return Run(&bli_dgemm_ex, &bli_dgemv_ex, a, as, b, bs, c, cs, m, k, n,
             whole_m);
}

}  // namespace torchferry::cpu
