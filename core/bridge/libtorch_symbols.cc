#include "core/bridge/libtorch_symbols.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <cstring>
#include <string>
#include <type_traits>

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

// Stores the address dlsym gave into the AotiApi member `Member`.
template <auto Member>
void Store(AotiApi& api, void* address) {
  using Fn = std::remove_reference_t<decltype(api.*Member)>;
  api.*Member = reinterpret_cast<Fn>(address);
}

struct Symbol {
  const char* name;
  void (*store)(AotiApi&, void*);
  // Every torch >= 2.3 exports it: the bridge refuses to start without it.
  // The others may be NULL (aoti.h says from which torch each comes).
  bool required;
};

constexpr bool kRequired = true, kOptional = false;

// The AOTI C shim in libtorch_cpu.so, in AotiApi's order.
constexpr Symbol kCpuSymbols[] = {
    {"aoti_torch_get_data_ptr", &Store<&AotiApi::get_data_ptr>, kRequired},
    {"aoti_torch_get_dim", &Store<&AotiApi::get_dim>, kRequired},
    {"aoti_torch_get_sizes", &Store<&AotiApi::get_sizes>, kRequired},
    {"aoti_torch_get_strides", &Store<&AotiApi::get_strides>, kRequired},
    {"aoti_torch_get_dtype", &Store<&AotiApi::get_dtype>, kRequired},
    {"aoti_torch_get_device_type", &Store<&AotiApi::get_device_type>,
     kRequired},
    {"aoti_torch_get_device_index", &Store<&AotiApi::get_device_index>,
     kRequired},
    {"aoti_torch_get_storage_offset", &Store<&AotiApi::get_storage_offset>,
     kRequired},
    {"aoti_torch_get_storage_size", &Store<&AotiApi::get_storage_size>,
     kRequired},
    {"aoti_torch_delete_tensor_object", &Store<&AotiApi::delete_tensor_object>,
     kRequired},
    {"aoti_torch_grad_mode_is_enabled", &Store<&AotiApi::grad_mode_is_enabled>,
     kRequired},
    {"aoti_torch_device_type_cpu", &Store<&AotiApi::device_type_cpu>,
     kRequired},
    {"aoti_torch_device_type_cuda", &Store<&AotiApi::device_type_cuda>,
     kRequired},
    {"aoti_torch_get_layout", &Store<&AotiApi::get_layout>, kOptional},
    {"aoti_torch_device_type_meta", &Store<&AotiApi::device_type_meta>,
     kOptional},
    {"aoti_torch_layout_strided", &Store<&AotiApi::layout_strided>, kOptional},
    {"torch_tensor_from_pyobject", &Store<&AotiApi::tensor_from_pyobject>,
     kOptional},
    {"torch_exception_get_what_without_backtrace",
     &Store<&AotiApi::exception_get_what>, kOptional},
    {"aoti_torch_empty_strided", &Store<&AotiApi::empty_strided>, kOptional},
    {"torch_tensor_to_pyobject", &Store<&AotiApi::tensor_to_pyobject>,
     kOptional},
};

// In libtorch_cuda.so, which only CUDA builds of torch load.
constexpr Symbol kCudaSymbols[] = {
    {"aoti_torch_get_current_cuda_stream",
     &Store<&AotiApi::get_current_cuda_stream>, kOptional},
};

// Looks every symbol of `symbols` up in `handle` into `api`; returns the
// names of the required ones that are missing, comma-separated, or "".
template <size_t N>
std::string ResolveAll(void* handle, const Symbol (&symbols)[N], AotiApi* api) {
  std::string missing;
  for (const Symbol& s : symbols) {
    void* address = dlsym(handle, s.name);
    s.store(*api, address);
    if (address == nullptr && s.required) {
      missing += fmt::format("{}{}", missing.empty() ? "" : ", ", s.name);
    }
  }
  return missing;
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
  const std::string missing = ResolveAll(cpu, kCpuSymbols, &lib->api);
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
    if (cuda != nullptr) ResolveAll(cuda, kCudaSymbols, &lib->api);
  }
  return true;
}

}  // namespace torchferry
