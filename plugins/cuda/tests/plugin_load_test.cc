// Loads torchferry_cuda.so the way the host does, with a stub host table,
// and checks its descriptor. Then calls init: on a machine without an NVIDIA
// GPU it must fail with the "no CUDA device available" reason (and never
// crash); with a GPU it must succeed.
// Usage: cuda_plugin_load_test PATH_TO_PLUGIN
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "abi/torchferry.h"

namespace {

std::string last_error;
tf_status last_status = TF_OK;

void Log(int32_t level, const char* plugin, const char* message) {
  std::printf("log[%d] %s: %s\n", level, plugin, message);
}

tf_status SetError(void*, tf_status status, const char* message) {
  last_status = status;
  last_error = message;
  return status;
}

const char* Query(const char*) { return nullptr; }

int Fail(const char* what) {
  std::fprintf(stderr, "FAIL: %s\n", what);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return Fail("usage: cuda_plugin_load_test PLUGIN.so");
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) return Fail(dlerror());
  auto entry = reinterpret_cast<tf_plugin_entry_fn>(
      dlsym(library, TF_PLUGIN_ENTRY_SYMBOL));
  if (entry == nullptr) return Fail("no torchferry_plugin_entry symbol");

  tf_host_api host{};
  host.struct_size = sizeof(host);
  host.abi_version_major = TF_ABI_VERSION_MAJOR;
  host.abi_version_minor = TF_ABI_VERSION_MINOR;
  host.log = Log;
  host.set_error = SetError;
  host.query = Query;

  if (entry(TF_ABI_VERSION_MAJOR + 1, 0, &host) != nullptr) {
    return Fail("the plugin accepted a host of another ABI major");
  }
  const tf_plugin* plugin =
      entry(TF_ABI_VERSION_MAJOR, TF_ABI_VERSION_MINOR, &host);
  if (plugin == nullptr) return Fail("entry returned NULL");
  if (plugin->struct_size < sizeof(tf_plugin)) return Fail("struct_size");
  if (std::strcmp(plugin->name, "cuda") != 0) return Fail("name is not cuda");
  if (plugin->kind != TF_PLUGIN_NATIVE) return Fail("kind is not NATIVE");
  if (plugin->init == nullptr) return Fail("no init");
  std::printf("plugin %s %s, %zu kernels\n", plugin->name, plugin->version,
              plugin->num_kernels);
  for (size_t i = 0; i < plugin->num_kernels; ++i) {
    const tf_kernel& k = plugin->kernels[i];
    if (k.struct_size != sizeof(tf_kernel) || k.fn == nullptr ||
        k.device_type != TF_DEVICE_CUDA || k.dtype.lanes != 1) {
      return Fail("a malformed kernel entry");
    }
    for (size_t j = 0; j < i; ++j) {
      const tf_kernel& o = plugin->kernels[j];
      if (std::strcmp(o.op, k.op) == 0 && o.dtype.code == k.dtype.code &&
          o.dtype.bits == k.dtype.bits) {
        return Fail("two kernels for one (op, dtype)");
      }
    }
  }

  const tf_status status = plugin->init(nullptr);
  if (status == TF_OK) {
    std::printf("init: OK (a CUDA device is present)\n");
    return 0;
  }
  std::printf("init failed with status %d: %s\n", status, last_error.c_str());
  if (last_status != status)
    return Fail("init's status differs from set_error's");
  if (last_error.rfind("no CUDA device available: ", 0) != 0 ||
      last_error.find("the cuda plugin needs an NVIDIA driver and GPU") ==
          std::string::npos) {
    return Fail("init failed without the no-device reason");
  }
  return 0;
}
