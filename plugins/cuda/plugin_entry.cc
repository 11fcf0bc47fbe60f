// The plugin's one exported symbol: its descriptor, its kernel table and its
// init. Everything else in the library is hidden.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <mutex>

#include "abi/torchferry.h"
#include "plugins/cuda/call_util.h"
#include "plugins/cuda/dtype.h"
#include "plugins/cuda/ops.h"

namespace torchferry::cuda {
namespace {

const tf_host_api* g_host = nullptr;

constexpr Dtype kFloat[] = {Dtype::kFloat32, Dtype::kFloat16, Dtype::kBFloat16,
                            Dtype::kFloat64};
constexpr Dtype kFloatInt[] = {Dtype::kFloat32,  Dtype::kFloat16,
                               Dtype::kBFloat16, Dtype::kFloat64,
                               Dtype::kInt32,    Dtype::kInt64};
constexpr Dtype kFloatIntWideUnsigned[] = {
    Dtype::kFloat32, Dtype::kFloat16, Dtype::kBFloat16,
    Dtype::kFloat64, Dtype::kInt32,   Dtype::kInt64,
    Dtype::kUInt16,  Dtype::kUInt32,  Dtype::kUInt64};
constexpr Dtype kAll[] = {Dtype::kFloat32, Dtype::kFloat16, Dtype::kBFloat16,
                          Dtype::kFloat64, Dtype::kInt32,   Dtype::kInt64,
                          Dtype::kInt16,   Dtype::kInt8,    Dtype::kUInt8,
                          Dtype::kUInt16,  Dtype::kUInt32,  Dtype::kUInt64,
                          Dtype::kBool};

// Room for 64 ops of up to 16 dtypes each (kAll has thirteen).
constexpr size_t kMaxKernels = 64 * 16;
tf_kernel g_kernels[kMaxKernels];
size_t g_num_kernels = 0;

template <size_t N>
void Register(const char* op, tf_kernel_fn fn, const Dtype (&dtypes)[N]) {
  for (Dtype dtype : dtypes) {
    tf_kernel& kernel = g_kernels[g_num_kernels++];
    kernel.struct_size = sizeof(tf_kernel);
    kernel.op = op;
    kernel.device_type = TF_DEVICE_CUDA;
    kernel.dtype = AbiDtype(dtype);
    kernel.fn = fn;
    kernel.kernel_data = nullptr;
  }
}

void BuildKernelTable() {
  Register("abs", &NoThrow<Abs>, kFloatInt);
  Register("neg", &NoThrow<Neg>, kFloatInt);
  Register("exp", &NoThrow<ExpOp>, kFloat);
  Register("silu", &NoThrow<SiluOp>, kFloat);
  Register("clamp", &NoThrow<Clamp>, kFloatInt);
  Register("stack", &NoThrow<Stack>, kAll);
  Register("add", &NoThrow<Add>, kFloatInt);
  Register("mul", &NoThrow<Mul>, kFloatIntWideUnsigned);
  Register("cast", &NoThrow<Cast>, kAll);
  Register("silu_and_mul", &NoThrow<SiluAndMul>, kFloat);
  Register("rms_norm", &NoThrow<RmsNorm>, kFloat);
  Register("add_rms_norm", &NoThrow<AddRmsNorm>, kFloat);
  Register("softmax", &NoThrow<Softmax>, kFloat);
  Register("matmul", &NoThrow<Matmul>, kFloat);
  Register("noop", &NoThrow<Noop>, kAll);
  // attention
  Register("rotary_embedding", &NoThrow<RotaryEmbedding>, kFloat);
  Register("scaled_dot_product_attention", &NoThrow<Attention>, kFloat);
  // linear
  Register("linear", &NoThrow<Linear>, kFloat);
  // embedding and cat
  Register("embedding", &NoThrow<Embedding>, kAll);
  Register("cat", &NoThrow<Cat>, kAll);
}

tf_status Init(void* error_sink) {
  // cudaGetDeviceCount loads the driver but creates no context, so a process
  // that never runs a CUDA kernel pays no GPU memory for this plugin.
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess || count == 0) {
    // A driver too old for this runtime reports the same error as no driver
    // at all; its version tells them apart and what to do.
    int driver = 0;
    cudaDriverGetVersion(&driver);
    char hint[160] = "";
    if (driver > 0 && driver < CUDART_VERSION) {
      std::snprintf(hint, sizeof(hint),
                    " (the installed driver supports CUDA %d.%d, this "
                    "plugin's runtime is CUDA %d.%d: update the driver)",
                    driver / 1000, driver % 1000 / 10, CUDART_VERSION / 1000,
                    CUDART_VERSION % 1000 / 10);
    }
    char message[512];
    std::snprintf(message, sizeof(message),
                  "no CUDA device available: %s; the cuda plugin needs an "
                  "NVIDIA driver and GPU%s",
                  error != cudaSuccess ? cudaGetErrorString(error)
                                       : "the driver reports 0 devices",
                  hint);
    return g_host->set_error(error_sink, TF_ERROR_DEVICE, message);
  }
  return TF_OK;
}

// CUDART_VERSION is e.g. 13000 for 13.0.
#define TF_STRINGIFY_(x) #x
#define TF_STRINGIFY(x) TF_STRINGIFY_(x)
#ifndef TORCHFERRY_CUDA_ARCHS
#define TORCHFERRY_CUDA_ARCHS "sm_80 sm_90 compute_90"
#endif

const tf_plugin* Describe() {
  static tf_plugin plugin;
  static std::once_flag once;
  std::call_once(once,
                 [] {
                   BuildKernelTable();
                   plugin.struct_size = sizeof(tf_plugin);
                   plugin.abi_version_major = TF_ABI_VERSION_MAJOR;
                   plugin.abi_version_minor = TF_ABI_VERSION_MINOR;
                   plugin.name = "cuda";
                   plugin.version = "0.1.0 (CUDA runtime " TF_STRINGIFY(
        CUDART_VERSION) ", static; GPU code " TORCHFERRY_CUDA_ARCHS ")";
                   plugin.kind = TF_PLUGIN_NATIVE;
                   plugin.reserved = 0;
                   plugin.init = &Init;
                   plugin.set_option = nullptr;
                   plugin.kernels = g_kernels;
                   plugin.num_kernels = g_num_kernels;
                 });
  return &plugin;
}

}  // namespace
}  // namespace torchferry::cuda

extern "C" TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_minor;
  if (host == nullptr || host->set_error == nullptr) return nullptr;
  if (host_abi_major != TF_ABI_VERSION_MAJOR) {
    if (host->log != nullptr) {
      char message[160];
      std::snprintf(message, sizeof(message),
                    "built for torchferry ABI %d.x, the host speaks %u.x; "
                    "use a cuda plugin built for the host's ABI",
                    TF_ABI_VERSION_MAJOR, host_abi_major);
      host->log(TF_LOG_ERROR, "cuda", message);
    }
    return nullptr;
  }
  torchferry::cuda::g_host = host;
  return torchferry::cuda::Describe();
}
