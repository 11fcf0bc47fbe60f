#include "kernel_table.h"

#include <initializer_list>

#include "dtypes.h"
#include "kernel_boundary.h"

namespace torchferry::aten {
namespace {

struct OpSpec {
  const char* name;
  OpBody body;
  std::vector<tf_dtype> dtypes;
};

std::vector<tf_dtype> Join(std::initializer_list<std::vector<tf_dtype>> parts) {
  std::vector<tf_dtype> joined;
  for (const auto& part : parts)
    joined.insert(joined.end(), part.begin(), part.end());
  return joined;
}

// The dtypes come from the ABI's op table intersected with what ATen
// implements; tests/aten checks every one of them against ATen.
std::vector<OpSpec> OpSpecs() {
  const std::vector<tf_dtype> floats{kFloat32, kFloat64, kFloat16, kBFloat16};
  const std::vector<tf_dtype> signed_ints{kInt8, kInt16, kInt32, kInt64};
  const std::vector<tf_dtype> numbers = Join({floats, signed_ints, {kUInt8}});
  const std::vector<tf_dtype> all = Join({numbers, {kBool}});
  // ATen computes only mul, casts and data movement for these.
  const std::vector<tf_dtype> wide_unsigned{kUInt16, kUInt32, kUInt64};
  const std::vector<tf_dtype> everything = Join({all, wide_unsigned});
  return {
      {"abs", Abs, numbers},
      {"neg", Neg, numbers},
      {"exp", Exp, floats},
      {"silu", Silu, floats},
      {"add", Add, all},
      {"mul", Mul, everything},
      {"clamp", Clamp, numbers},
      {"stack", Stack, everything},
      {"cast", Cast, everything},
      {"silu_and_mul", SiluAndMul, floats},
      {"rms_norm", RmsNorm, floats},
      {"softmax", Softmax, floats},
      {"matmul", Matmul, floats},
      {"noop", Noop, everything},
      // attention
      {"rotary_embedding", RotaryEmbedding, floats},
      {"scaled_dot_product_attention", Attention, floats},
      // linear
      {"linear", Linear, floats},
      // embedding and cat
      {"embedding", Embedding, all},
      {"cat", Cat, everything},
      {"add_rms_norm", AddRmsNorm, floats},
  };
}

std::vector<int32_t> DeviceTypes() {
#if defined(TORCHFERRY_ATEN_WITH_CUDA)
  return {TF_DEVICE_CPU, TF_DEVICE_CUDA};
#else
  // A torch without CUDA never holds a CUDA tensor.
  return {TF_DEVICE_CPU};
#endif
}

KernelTable* BuildTable() {
  auto* table = new KernelTable();
  for (const int32_t device_type : DeviceTypes()) {
    for (const OpSpec& spec : OpSpecs()) {
      for (const tf_dtype dtype : spec.dtypes) {
        KernelState& state = table->states.emplace_back();
        state.op = spec.name;
        state.body = spec.body;
        state.device_type = device_type;
        state.dtype = dtype;
        tf_kernel kernel{};
        kernel.struct_size = sizeof(tf_kernel);
        kernel.op = spec.name;
        kernel.device_type = device_type;
        kernel.dtype = dtype;
        kernel.fn = RunKernel;
        kernel.kernel_data = &state;
        table->kernels.push_back(kernel);
      }
    }
  }
  return table;
}

}  // namespace

const KernelTable& Kernels() {
  static const KernelTable* const table = BuildTable();
  return *table;
}

}  // namespace torchferry::aten
