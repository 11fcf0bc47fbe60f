// The CPU plugin's GEMM: c[m, n] = a[m, k] @ b[k, n] for float32 and float64
// on BLIS (statically linked, single-threaded build), with any positive
// element strides on every operand.
//
// BLIS was chosen by measurement against OpenBLAS 0.3.21, Eigen 3.4 and
// libxsmm 1.17 (Debian's builds, one thread, float32): it was fastest or
// level on every shape of one and eight rows, in both layouts of b (see the
// commit that introduced this file for the numbers).
#pragma once

#include <cstdint>

namespace torchferry::cpu {

struct GemmOperand {
  int64_t rows;  // stride between rows, in elements
  int64_t cols;  // stride between columns
};

// Computes c = a @ b and returns true, or returns false without touching c
// when a stride is one BLIS cannot take (zero or negative); the caller then
// uses its own loop. m, n and k are >= 1.
//
// c may be a block of rows or columns of a larger product of whole_m rows
// (a caller's share of a split product): each element of c is then what the
// unsplit product computes, bit for bit, whatever the block's size. BLIS's
// kernels for small products ("sup") change their order of sums with the
// product's size (zen3's float32 sup: [100, 256] @ [256, n] differs in most
// elements between n = 301 and n = 256), so they are never used; BLIS's
// blocked path sums every element in the same order for any m and n. One
// row goes to BLIS's gemv only where the whole product has one row.
bool Gemm(const float* a, GemmOperand as, const float* b, GemmOperand bs,
          float* c, GemmOperand cs, int64_t m, int64_t k, int64_t n,
          int64_t whole_m);
bool Gemm(const double* a, GemmOperand as, const double* b, GemmOperand bs,
          double* c, GemmOperand cs, int64_t m, int64_t k, int64_t n,
          int64_t whole_m);

}  // namespace torchferry::cpu
