// Finds cuBLAS at run time. torch's CUDA builds load it themselves, so the
// first choice is that copy (RTLD_NOLOAD); then the loader's search path;
// then the folders of CUDA libraries already in the process, which is where
// torch's pip wheels keep theirs (site-packages/nvidia/...).
#include <dlfcn.h>
#include <link.h>

#include <mutex>
#include <string>
#include <vector>

#include "plugins/cuda/cublas_api.h"

namespace torchferry::cuda {
namespace {

const char* const kSonames[] = {"libcublas.so.13", "libcublas.so.12"};

struct LoadResult {
  CublasApi api{};
  bool ok = false;
  std::string origin;
  std::string why;
};

void AddUnique(std::vector<std::string>* dirs, const std::string& dir) {
  for (const std::string& known : *dirs) {
    if (known == dir) return;
  }
  dirs->push_back(dir);
}

int CollectDir(dl_phdr_info* info, size_t, void* data) {
  auto* dirs = static_cast<std::vector<std::string>*>(data);
  const std::string path = info->dlpi_name ? info->dlpi_name : "";
  size_t at = path.find("/nvidia/");
  if (at != std::string::npos) {
    const std::string root = path.substr(0, at + 8);
    AddUnique(dirs, root + "cu13/lib");
    AddUnique(dirs, root + "cublas/lib");
  }
  at = path.find("/torch/lib/");
  if (at != std::string::npos) {
    const std::string site = path.substr(0, at);
    AddUnique(dirs, site + "/nvidia/cu13/lib");
    AddUnique(dirs, site + "/nvidia/cublas/lib");
  }
  if (path.find("/libcudart.so") != std::string::npos) {
    AddUnique(dirs, path.substr(0, path.rfind('/')));
  }
  return 0;
}

void* OpenCublas(std::string* origin, std::string* errors) {
  for (const char* soname : kSonames) {
    if (void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      *origin = std::string(soname) + " (already loaded)";
      return handle;
    }
  }
  for (const char* soname : kSonames) {
    if (void* handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL)) {
      *origin = soname;
      return handle;
    }
    const char* error = dlerror();
    *errors += std::string("\n  ") + (error ? error : soname);
  }
  std::vector<std::string> dirs;
  dl_iterate_phdr(CollectDir, &dirs);
  for (const std::string& dir : dirs) {
    for (const char* soname : kSonames) {
      const std::string path = dir + "/" + soname;
      if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        *origin = path;
        return handle;
      }
    }
  }
  return nullptr;
}

template <typename Fn>
bool Resolve(void* library, const char* name, Fn* fn, std::string* why) {
  *fn = reinterpret_cast<Fn>(dlsym(library, name));
  if (*fn != nullptr) return true;
  *why += std::string(" ") + name;
  return false;
}

LoadResult* Load() {
  auto* result = new LoadResult();
  std::string errors;
  void* library = OpenCublas(&result->origin, &errors);
  if (library == nullptr) {
    result->why =
        "matmul needs cuBLAS (libcublas.so.13 or libcublas.so.12) and none "
        "was loaded or found on the library path or beside torch's CUDA "
        "libraries; install torch's CUDA build or the nvidia-cublas wheel, "
        "or add libcublas's folder to LD_LIBRARY_PATH. dlopen said:" +
        errors;
    return result;
  }
  CublasApi& api = result->api;
  std::string missing;
  bool ok = Resolve(library, "cublasCreate_v2", &api.create, &missing);
  ok = Resolve(library, "cublasSetStream_v2", &api.set_stream, &missing) && ok;
  ok = Resolve(library, "cublasGemmStridedBatchedEx", &api.gemm_strided_batched,
               &missing) &&
       ok;
  std::string optional;
  Resolve(library, "cublasGetStatusString", &api.status_string, &optional);
  if (!ok) {
    result->why = "matmul: " + result->origin +
                  " lacks the cuBLAS functions it needs:" + missing +
                  "; install cuBLAS 12 or 13";
    return result;
  }
  api.origin = result->origin.c_str();
  result->ok = true;
  return result;
}

// Handles per device. cublasDestroy is never called: at process exit the
// driver may already be gone, and a handle costs little to keep.
std::mutex pool_mutex;
std::vector<std::vector<cublasHandle_t>>* pools = nullptr;

}  // namespace

const CublasApi* GetCublas(const char** why) {
  static LoadResult* const loaded = Load();
  if (!loaded->ok) {
    *why = loaded->why.c_str();
    return nullptr;
  }
  return &loaded->api;
}

PooledCublasHandle::PooledCublasHandle(const CublasApi& api, int device)
    : device_(device) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    if (pools != nullptr && device < static_cast<int>(pools->size()) &&
        !(*pools)[device].empty()) {
      handle_ = (*pools)[device].back();
      (*pools)[device].pop_back();
      return;
    }
  }
  // cublasCreate binds the handle to the current device, which the caller's
  // DeviceGuard has set to `device`.
  create_status_ = api.create(&handle_);
  if (create_status_ != kCublasSuccess) handle_ = nullptr;
}

PooledCublasHandle::~PooledCublasHandle() {
  if (handle_ == nullptr) return;
  std::lock_guard<std::mutex> lock(pool_mutex);
  try {
    if (pools == nullptr) {
      pools = new std::vector<std::vector<cublasHandle_t>>();
    }
    if (device_ >= static_cast<int>(pools->size())) {
      pools->resize(device_ + 1);
    }
    (*pools)[device_].push_back(handle_);
  } catch (...) {
    // Out of host memory: the handle is dropped, not returned.
  }
}

}  // namespace torchferry::cuda
