// matmul: out[B, m, n] = a[B, m, k] @ b[B, k, n], any strides, accumulating
// in float32 (float64 for float64).
//
// The loop order is i-k-j: for a block of rows of a and a chunk of columns of
// out, each row of b is read once (converted to the accumulate type into a
// small panel) and added, scaled by a[i, p], into every row's accumulator.
// The innermost loop is then a unit-stride a*x+y over stack arrays, which
// vectorises whatever b's layout, and the chunk of b for a column block is
// reused from cache by every row block. Accumulators live on the stack.
#include <cstdint>
#include <type_traits>

#include "call.h"
#include "dtype.h"
#include "kernel_table.h"

namespace torchferry::cpu {
namespace {

constexpr int64_t kRowBlock = 4;
constexpr int64_t kColumnChunk = 256;

struct Strided2d {
  int64_t rows;  // stride between rows, in elements
  int64_t cols;  // stride between columns
};

template <typename A>
inline void ScaledAdd(A* __restrict acc, const A* __restrict x, A scale,
                      int64_t n) {
  for (int64_t j = 0; j < n; ++j) acc[j] += scale * x[j];
}

// One matrix product: m x k times k x n.
template <typename T>
void MatmulOne(const T* a, Strided2d as, const T* b, Strided2d bs, T* out,
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
        T* out_row = out + (i0 + r) * os.rows + j0 * os.cols;
        for (int64_t j = 0; j < jn; ++j) {
          out_row[j * os.cols] = Store<T>(static_cast<ComputeOf<T>>(acc[r][j]));
        }
      }
    }
  }
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
    const T* a_data = DataOf<const T>(a);
    const T* b_data = DataOf<const T>(b);
    T* out_data = DataOf<T>(out);
    for (int64_t i = 0; i < batch; ++i) {
      MatmulOne<T>(a_data + i * a_batch, {a.strides[1], a.strides[2]},
                   b_data + i * b_batch, {b.strides[1], b.strides[2]},
                   out_data + i * out.strides[0],
                   {out.strides[1], out.strides[2]}, m, k, n);
    }
    return TF_OK;
  }
};

constexpr auto kTable = KernelsFor<Matmul>(FloatTypes{});

}  // namespace

KernelList MatmulKernels() { return {kTable.data(), kTable.size()}; }

}  // namespace torchferry::cpu
