#include "core/bridge/libtorch_symbols.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <cstring>

namespace torchferry {
namespace {

// Returns the path of the first loaded object whose file name is `basename`.
std::string FindLoadedLibrary(const char* basename) {
  struct Search {
    const char* basename;
    std::string found;
  } search{basename, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        const char* path = info->dlpi_name;
        if (path == nullptr || path[0] == '\0') return 0;
        const char* slash = std::strrchr(path, '/');
        const char* name = slash ? slash + 1 : path;
        if (std::strcmp(name, s->basename) != 0) return 0;
        s->found = path;
        return 1;
      },
      &search);
  return search.found;
}

template <typename Fn>
void Resolve(void* handle, const char* symbol, Fn* out) {
  *out = reinterpret_cast<Fn>(dlsym(handle, symbol));
}

}  // namespace

bool ResolveTorchLibrary(TorchLibrary* lib, std::string* error) {
  lib->cpu_library_path = FindLoadedLibrary("libtorch_cpu.so");
  if (lib->cpu_library_path.empty()) {
    *error =
        "libtorch_cpu.so is not loaded in this process; `import torch` before "
        "importing torchferry's native module";
    return false;
  }
  void* cpu = dlopen(lib->cpu_library_path.c_str(),
                     RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (cpu == nullptr) {
    *error = fmt::format("could not take a handle to {}: {}",
                         lib->cpu_library_path, dlerror());
    return false;
  }
  lib->cpu_handle = cpu;
  AotiApi& a = lib->api;
  Resolve(cpu, "aoti_torch_get_data_ptr", &a.get_data_ptr);
  Resolve(cpu, "aoti_torch_get_dim", &a.get_dim);
  Resolve(cpu, "aoti_torch_get_sizes", &a.get_sizes);
  Resolve(cpu, "aoti_torch_get_strides", &a.get_strides);
  Resolve(cpu, "aoti_torch_get_dtype", &a.get_dtype);
  Resolve(cpu, "aoti_torch_get_device_type", &a.get_device_type);
  Resolve(cpu, "aoti_torch_get_device_index", &a.get_device_index);
  Resolve(cpu, "aoti_torch_get_layout", &a.get_layout);
  Resolve(cpu, "aoti_torch_get_storage_offset", &a.get_storage_offset);
  Resolve(cpu, "aoti_torch_get_storage_size", &a.get_storage_size);
  Resolve(cpu, "aoti_torch_delete_tensor_object", &a.delete_tensor_object);
  Resolve(cpu, "aoti_torch_grad_mode_is_enabled", &a.grad_mode_is_enabled);
  Resolve(cpu, "aoti_torch_device_type_cpu", &a.device_type_cpu);
  Resolve(cpu, "aoti_torch_device_type_cuda", &a.device_type_cuda);
  Resolve(cpu, "aoti_torch_device_type_meta", &a.device_type_meta);
  Resolve(cpu, "aoti_torch_layout_strided", &a.layout_strided);
  Resolve(cpu, "torch_tensor_from_pyobject", &a.tensor_from_pyobject);
  Resolve(cpu, "torch_exception_get_what_without_backtrace",
          &a.exception_get_what);
  Resolve(cpu, "aoti_torch_empty_strided", &a.empty_strided);
  Resolve(cpu, "torch_tensor_to_pyobject", &a.tensor_to_pyobject);

  const std::pair<const char*, const void*> required[] = {
      {"aoti_torch_get_data_ptr",
       reinterpret_cast<const void*>(a.get_data_ptr)},
      {"aoti_torch_get_dim", reinterpret_cast<const void*>(a.get_dim)},
      {"aoti_torch_get_sizes", reinterpret_cast<const void*>(a.get_sizes)},
      {"aoti_torch_get_strides", reinterpret_cast<const void*>(a.get_strides)},
      {"aoti_torch_get_dtype", reinterpret_cast<const void*>(a.get_dtype)},
      {"aoti_torch_get_device_type",
       reinterpret_cast<const void*>(a.get_device_type)},
      {"aoti_torch_get_device_index",
       reinterpret_cast<const void*>(a.get_device_index)},
      {"aoti_torch_get_storage_offset",
       reinterpret_cast<const void*>(a.get_storage_offset)},
      {"aoti_torch_get_storage_size",
       reinterpret_cast<const void*>(a.get_storage_size)},
      {"aoti_torch_delete_tensor_object",
       reinterpret_cast<const void*>(a.delete_tensor_object)},
      {"aoti_torch_grad_mode_is_enabled",
       reinterpret_cast<const void*>(a.grad_mode_is_enabled)},
      {"aoti_torch_device_type_cpu",
       reinterpret_cast<const void*>(a.device_type_cpu)},
      {"aoti_torch_device_type_cuda",
       reinterpret_cast<const void*>(a.device_type_cuda)},
  };
  std::string missing;
  for (const auto& [symbol, fn] : required) {
    if (fn == nullptr) {
      missing += fmt::format("{}{}", missing.empty() ? "" : ", ", symbol);
    }
  }
  if (!missing.empty()) {
    // torch 2.2 and older lack some, 1.13 all of them.
    *error = fmt::format(
        "{} lacks the AOTI C shim functions {}, which every torch >= 2.3 "
        "exports; this torch is too old or not a standard build (pip install "
        "'torch>=2.3')",
        lib->cpu_library_path, missing);
    return false;
  }

  const std::string python_path = FindLoadedLibrary("libtorch_python.so");
  void* python =
      python_path.empty()
          ? nullptr
          : dlopen(python_path.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
  if (python != nullptr) {
    Resolve(python, "_Z16THPVariable_WrapRKN2at10TensorBaseE",
            &lib->variable_wrap);
  }

  // The CUDA stream getter lives in libtorch_cuda.so, loaded only by CUDA
  // builds of torch.
  lib->cuda_library_path = FindLoadedLibrary("libtorch_cuda.so");
  if (!lib->cuda_library_path.empty()) {
    void* cuda = dlopen(lib->cuda_library_path.c_str(),
                        RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
    if (cuda != nullptr) {
      Resolve(cuda, "aoti_torch_get_current_cuda_stream",
              &a.get_current_cuda_stream);
    }
  }
  return true;
}

}  // namespace torchferry
