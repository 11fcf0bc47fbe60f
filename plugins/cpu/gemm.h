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
bool Gemm(const float* a, GemmOperand as, const float* b, GemmOperand bs,
          float* c, GemmOperand cs, int64_t m, int64_t k, int64_t n);
bool Gemm(const double* a, GemmOperand as, const double* b, GemmOperand bs,
          double* c, GemmOperand cs, int64_t m, int64_t k, int64_t n);

}  // namespace torchferry::cpu
