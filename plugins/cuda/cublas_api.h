// The few cuBLAS declarations matmul needs, written out here so that the
// plugin neither includes cuBLAS's headers nor links it: cuBLAS is found at
// the first matmul (usually the copy torch has loaded already), and a
// process without it loses matmul alone. Values match cublas_api.h of
// cuBLAS 12 and 13, whose ABI for these functions is the same.
#pragma once

#include <cuda_runtime_api.h>
#include <library_types.h>

namespace torchferry::cuda {

typedef struct cublasContext* cublasHandle_t;
typedef int cublasStatus_t;  // CUBLAS_STATUS_SUCCESS is 0
typedef int cublasOperation_t;
typedef int cublasComputeType_t;
typedef int cublasGemmAlgo_t;

constexpr cublasStatus_t kCublasSuccess = 0;
constexpr cublasOperation_t kCublasOpN = 0;
constexpr cublasOperation_t kCublasOpT = 1;
constexpr cublasComputeType_t kCublasCompute32F = 68;
constexpr cublasComputeType_t kCublasCompute64F = 70;
constexpr cublasGemmAlgo_t kCublasGemmDefault = -1;

struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t* handle);
  cublasStatus_t (*set_stream)(cublasHandle_t handle, cudaStream_t stream);
  cublasStatus_t (*gemm_strided_batched)(
      cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
      int m, int n, int k, const void* alpha, const void* a,
      cudaDataType a_type, int lda, long long stride_a, const void* b,
      cudaDataType b_type, int ldb, long long stride_b, const void* beta,
      void* c, cudaDataType c_type, int ldc, long long stride_c,
      int batch_count, cublasComputeType_t compute_type, cublasGemmAlgo_t algo);
  // May be NULL (older cuBLAS); then statuses are shown as numbers.
  const char* (*status_string)(cublasStatus_t status);
  const char* origin;  // which library file answered, for messages
};

// cuBLAS, loaded on first use; NULL when no copy could be found, with the
// reason (what was tried and what to do) in the returned string.
const CublasApi* GetCublas(const char** why);

// A cuBLAS handle for the current device, taken from a pool and returned by
// the destructor; handles are not safe to share between threads at once.
class PooledCublasHandle {
 public:
  PooledCublasHandle(const CublasApi& api, int device);
  ~PooledCublasHandle();
  PooledCublasHandle(const PooledCublasHandle&) = delete;
  PooledCublasHandle& operator=(const PooledCublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }
  // The status of cublasCreate when the pool had to make a handle.
  cublasStatus_t create_status() const { return create_status_; }

 private:
  int device_;
  cublasHandle_t handle_ = nullptr;
  cublasStatus_t create_status_ = kCublasSuccess;
};

}  // namespace torchferry::cuda
