// Checks PlanGemm against a host emulation of cuBLAS's column-major
// strided-batched GEMM: for many operand layouts, the planned call must
// produce exactly the row-major product, write nothing else, and respect
// cuBLAS's leading-dimension rules. Runs without a GPU.
#include "plugins/cuda/matmul_plan.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using torchferry::cuda::GemmPlan;
using torchferry::cuda::MatrixView;
using torchferry::cuda::PlanGemm;

int failures = 0;

#define EXPECT(cond, ...)                                  \
  do {                                                     \
    if (!(cond)) {                                         \
      ++failures;                                          \
      std::fprintf(stderr, "%s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                   \
      std::fprintf(stderr, "\n");                          \
    }                                                      \
  } while (0)

enum class Layout { kRowMajor, kColMajor, kPaddedRow, kPaddedCol, kStrided };

const char* Name(Layout layout) {
  switch (layout) {
    case Layout::kRowMajor:
      return "row";
    case Layout::kColMajor:
      return "col";
    case Layout::kPaddedRow:
      return "padded-row";
    case Layout::kPaddedCol:
      return "padded-col";
    case Layout::kStrided:
      return "strided";
  }
  return "?";
}

// A view over its own buffer; `shared_batch` gives batch stride 0.
struct Matrix {
  MatrixView view;
  std::vector<double> data;
  double& at(int64_t p, int64_t i, int64_t j) {
    return data[p * view.batch_stride + i * view.row_stride +
                j * view.col_stride];
  }
};

Matrix Make(int64_t batch, int64_t rows, int64_t cols, Layout layout,
            bool shared_batch) {
  Matrix m;
  int64_t rs = 0, cs = 0;
  switch (layout) {
    case Layout::kRowMajor:
      rs = cols, cs = 1;
      break;
    case Layout::kColMajor:
      rs = 1, cs = rows;
      break;
    case Layout::kPaddedRow:
      rs = cols + 3, cs = 1;
      break;
    case Layout::kPaddedCol:
      rs = 1, cs = rows + 5;
      break;
    case Layout::kStrided:
      rs = 2 * cols, cs = 2;
      break;
  }
  const int64_t span = (rows - 1) * rs + (cols - 1) * cs + 1;
  const int64_t bs = shared_batch ? 0 : span + 7;
  m.view = MatrixView{batch, rows, cols, bs, rs, cs};
  m.data.assign(static_cast<size_t>((batch - 1) * bs + span + 8), NAN);
  return m;
}

void Fill(Matrix* m, unsigned seed) {
  std::srand(seed);
  for (int64_t p = 0; p < m->view.batch; ++p) {
    for (int64_t i = 0; i < m->view.rows; ++i) {
      for (int64_t j = 0; j < m->view.cols; ++j) {
        m->at(p, i, j) = std::rand() % 17 - 8;
      }
    }
  }
}

// cuBLAS: C(m x n) = op(A) op(B), column-major, batched by stride.
void EmulateCublas(const GemmPlan& plan, const double* a, const double* b,
                   double* c) {
  for (int64_t p = 0; p < plan.batch; ++p) {
    const double* pa = a + p * plan.a.batch_stride;
    const double* pb = b + p * plan.b.batch_stride;
    double* pc = c + p * plan.batch_stride_c;
    for (int64_t i = 0; i < plan.m; ++i) {
      for (int64_t j = 0; j < plan.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < plan.k; ++l) {
          const double x =
              plan.a.transpose ? pa[l + i * plan.a.ld] : pa[i + l * plan.a.ld];
          const double y =
              plan.b.transpose ? pb[j + l * plan.b.ld] : pb[l + j * plan.b.ld];
          sum += x * y;
        }
        pc[i + j * plan.ldc] = sum;
      }
    }
  }
}

int64_t Max1(int64_t v) { return v < 1 ? 1 : v; }

void Check(int64_t batch, int64_t m, int64_t n, int64_t k, Layout la, Layout lb,
           Layout lo, bool a_shared, bool b_shared) {
  Matrix a = Make(batch, m, k, la, a_shared);
  Matrix b = Make(batch, k, n, lb, b_shared);
  Matrix out = Make(batch, m, n, lo, false);
  Fill(&a, 1);
  Fill(&b, 2);
  GemmPlan plan;
  const char* why = "";
  const bool planned = PlanGemm(a.view, b.view, out.view, &plan, &why);
  const bool strided = la == Layout::kStrided || lb == Layout::kStrided ||
                       lo == Layout::kStrided;
  const char* tag = "";
  char buf[160];
  std::snprintf(buf, sizeof(buf),
                "B=%lld m=%lld n=%lld k=%lld a=%s b=%s out=%s",
                static_cast<long long>(batch), static_cast<long long>(m),
                static_cast<long long>(n), static_cast<long long>(k), Name(la),
                Name(lb), Name(lo));
  tag = buf;
  if (!planned) {
    // Only a layout without a unit stride may be refused, and only where
    // that stride matters (a dim of size 1 makes any layout readable).
    EXPECT(strided, "%s: refused (%s) a readable layout", tag, why);
    return;
  }
  // cuBLAS's leading-dimension rules.
  const int64_t a_rows = plan.a.transpose ? plan.k : plan.m;
  const int64_t b_rows = plan.b.transpose ? plan.n : plan.k;
  EXPECT(plan.a.ld >= Max1(a_rows), "%s: lda %lld too small", tag,
         static_cast<long long>(plan.a.ld));
  EXPECT(plan.b.ld >= Max1(b_rows), "%s: ldb %lld too small", tag,
         static_cast<long long>(plan.b.ld));
  EXPECT(plan.ldc >= Max1(plan.m), "%s: ldc %lld too small", tag,
         static_cast<long long>(plan.ldc));

  const double* first = plan.swapped ? b.data.data() : a.data.data();
  const double* second = plan.swapped ? a.data.data() : b.data.data();
  EmulateCublas(plan, first, second, out.data.data());

  int64_t written = 0;
  for (double v : out.data) written += std::isnan(v) ? 0 : 1;
  EXPECT(written == batch * m * n, "%s: wrote %lld elements, expected %lld",
         tag, static_cast<long long>(written),
         static_cast<long long>(batch * m * n));
  for (int64_t p = 0; p < batch; ++p) {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double expected = 0;
        for (int64_t l = 0; l < k; ++l)
          expected += a.at(p, i, l) * b.at(p, l, j);
        const double got = out.at(p, i, j);
        if (got != expected) {
          EXPECT(false, "%s: out[%lld,%lld,%lld] = %g, expected %g", tag,
                 static_cast<long long>(p), static_cast<long long>(i),
                 static_cast<long long>(j), got, expected);
          return;
        }
      }
    }
  }
}

}  // namespace

int main() {
  const Layout layouts[] = {Layout::kRowMajor, Layout::kColMajor,
                            Layout::kPaddedRow, Layout::kPaddedCol,
                            Layout::kStrided};
  const int64_t sizes[][4] = {{1, 3, 4, 5}, {3, 2, 5, 4}, {2, 1, 4, 3},
                              {2, 4, 1, 3}, {2, 3, 4, 1}, {1, 1, 1, 1},
                              {4, 1, 1, 6}};
  int cases = 0;
  for (const auto& s : sizes) {
    for (Layout la : layouts) {
      for (Layout lb : layouts) {
        for (Layout lo : layouts) {
          for (int shared = 0; shared < 3; ++shared) {
            Check(s[0], s[1], s[2], s[3], la, lb, lo, shared == 1, shared == 2);
            ++cases;
          }
        }
      }
    }
  }
  // A layout that has no unit stride must be refused, naming the operand.
  {
    Matrix a = Make(1, 3, 4, Layout::kStrided, false);
    Matrix b = Make(1, 4, 5, Layout::kRowMajor, false);
    Matrix out = Make(1, 3, 5, Layout::kRowMajor, false);
    GemmPlan plan;
    const char* why = "";
    EXPECT(!PlanGemm(a.view, b.view, out.view, &plan, &why),
           "strided a was planned");
    EXPECT(why[0] == 'a', "refusal names %s, expected a", why);
  }
  std::printf("%d layout cases, %d failures\n", cases, failures);
  return failures == 0 ? 0 : 1;
}
