// Compiles where scaled_dot_product_attention takes enable_gqa (torch >=
// 2.5); older torches get k and v with their heads repeated to q's
// (plugins/aten/ops_attention.cc). Sets TORCHFERRY_ATEN_HAS_SDPA_GQA.
#include <ATen/ops/scaled_dot_product_attention.h>
at::Tensor Call(const at::Tensor& t) {
  return at::scaled_dot_product_attention(t, t, t, {}, 0.0, false, 1.0, true);
}
