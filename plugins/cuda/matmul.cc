// matmul through cuBLAS's strided-batched GEMM. Operands whose innermost two
// dims are row- or column-major (one of them of unit stride) map onto it by
// choosing transposes; other layouts are refused with a clear message.
#include <climits>

#include "plugins/cuda/call_util.h"
#include "plugins/cuda/cublas_api.h"
#include "plugins/cuda/dtype.h"
#include "plugins/cuda/fill_zero.h"
#include "plugins/cuda/matmul_plan.h"
#include "plugins/cuda/ops.h"

namespace torchferry::cuda {
namespace {

MatrixView ViewOf(const tf_tensor& t) {
  return MatrixView{t.shape[0],   t.shape[1],   t.shape[2],
                    t.strides[0], t.strides[1], t.strides[2]};
}

bool FitsInt(int64_t value) { return value >= 0 && value <= INT_MAX; }

const char* StatusText(const CublasApi& api, cublasStatus_t status) {
  return api.status_string != nullptr ? api.status_string(status)
                                      : "see cublas_api.h";
}

// cuBLAS's element type and compute type for a dtype. float32 computes in
// full float32 (no TF32), as torch does by default.
bool GemmTypes(Dtype dtype, cudaDataType* data_type,
               cublasComputeType_t* compute_type) {
  switch (dtype) {
    case Dtype::kFloat32:
      *data_type = CUDA_R_32F;
      break;
    case Dtype::kFloat16:
      *data_type = CUDA_R_16F;
      break;
    case Dtype::kBFloat16:
      *data_type = CUDA_R_16BF;
      break;
    case Dtype::kFloat64:
      *data_type = CUDA_R_64F;
      *compute_type = kCublasCompute64F;
      return true;
    default:
      return false;
  }
  *compute_type = kCublasCompute32F;
  return true;
}

}  // namespace

tf_status Matmul(const tf_call* call) {
  const tf_tensor& a = InputTensor(call, 0);
  const tf_tensor& b = InputTensor(call, 1);
  const tf_tensor& out = call->outputs[0];
  const Dtype dtype = DtypeOf(a.dtype);
  cudaDataType data_type;
  cublasComputeType_t compute_type;
  if (!GemmTypes(dtype, &data_type, &compute_type)) {
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "matmul: expected float32, float64, float16 or bfloat16, "
                "found %s",
                DtypeName(dtype));
  }
  if (a.ndim != 3 || b.ndim != 3 || out.ndim != 3) {
    return Fail(call, TF_ERROR_INVALID_ARGUMENT,
                "matmul: expected 3-D operands from the host, found %d-D a, "
                "%d-D b, %d-D out",
                a.ndim, b.ndim, out.ndim);
  }
  const MatrixView av = ViewOf(a), bv = ViewOf(b), outv = ViewOf(out);
  if (outv.batch == 0 || outv.rows == 0 || outv.cols == 0) return TF_OK;

  DeviceGuard guard(call, out.device.device_id);
  if (guard.status() != TF_OK) return guard.status();
  if (av.cols == 0) return FillZero(call, out, "matmul");

  GemmPlan plan;
  const char* culprit = "";
  if (!PlanGemm(av, bv, outv, &plan, &culprit)) {
    const MatrixView& bad = culprit[0] == 'a'   ? av
                            : culprit[0] == 'b' ? bv
                                                : outv;
    return Fail(call, TF_ERROR_UNSUPPORTED,
                "matmul: expected each matrix to have unit stride in one of "
                "its two last dims (row- or column-major), found %s with "
                "strides [%lld, %lld, %lld]; call .contiguous() on it first",
                culprit, static_cast<long long>(bad.batch_stride),
                static_cast<long long>(bad.row_stride),
                static_cast<long long>(bad.col_stride));
  }
  if (!FitsInt(plan.m) || !FitsInt(plan.n) || !FitsInt(plan.k) ||
      !FitsInt(plan.a.ld) || !FitsInt(plan.b.ld) || !FitsInt(plan.ldc) ||
      !FitsInt(plan.batch)) {
    return Fail(
        call, TF_ERROR_UNSUPPORTED,
        "matmul: expected sizes and leading dims below 2^31 for "
        "cuBLAS, found m=%lld n=%lld k=%lld batch=%lld; split the "
        "product",
        static_cast<long long>(outv.rows), static_cast<long long>(outv.cols),
        static_cast<long long>(av.cols), static_cast<long long>(outv.batch));
  }

  const char* why = "";
  const CublasApi* api = GetCublas(&why);
  if (api == nullptr) return Fail(call, TF_ERROR_UNSUPPORTED, "%s", why);
  PooledCublasHandle handle(*api, out.device.device_id);
  if (handle.get() == nullptr) {
    return Fail(call, TF_ERROR_DEVICE,
                "matmul: cublasCreate failed with status %d (%s) using %s; "
                "the device may be out of memory",
                handle.create_status(),
                StatusText(*api, handle.create_status()), api->origin);
  }
  cublasStatus_t status = api->set_stream(handle.get(), StreamOf(call));
  if (status != kCublasSuccess) {
    return Fail(call, TF_ERROR_DEVICE,
                "matmul: cublasSetStream failed with status %d (%s)", status,
                StatusText(*api, status));
  }

  const float alpha_f = 1.0f, beta_f = 0.0f;
  const double alpha_d = 1.0, beta_d = 0.0;
  const bool is_double = compute_type == kCublasCompute64F;
  const void* alpha = is_double ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta = is_double ? static_cast<const void*>(&beta_d) : &beta_f;
  const void* first = plan.swapped ? DataOf(b) : DataOf(a);
  const void* second = plan.swapped ? DataOf(a) : DataOf(b);
  status = api->gemm_strided_batched(
      handle.get(), plan.a.transpose ? kCublasOpT : kCublasOpN,
      plan.b.transpose ? kCublasOpT : kCublasOpN, static_cast<int>(plan.m),
      static_cast<int>(plan.n), static_cast<int>(plan.k), alpha, first,
      data_type, static_cast<int>(plan.a.ld), plan.a.batch_stride, second,
      data_type, static_cast<int>(plan.b.ld), plan.b.batch_stride, beta,
      DataOf(out), data_type, static_cast<int>(plan.ldc), plan.batch_stride_c,
      static_cast<int>(plan.batch), compute_type, kCublasGemmDefault);
  if (status != kCublasSuccess) {
    return Fail(
        call, TF_ERROR_DEVICE,
        "matmul: cublasGemmStridedBatchedEx failed with status %d (%s) "
        "for %s m=%lld n=%lld k=%lld batch=%lld",
        status, StatusText(*api, status), DtypeName(dtype),
        static_cast<long long>(outv.rows), static_cast<long long>(outv.cols),
        static_cast<long long>(av.cols), static_cast<long long>(outv.batch));
  }
  return TF_OK;
}

}  // namespace torchferry::cuda
