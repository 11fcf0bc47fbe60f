// Broken at run time: init lets a C++ exception escape.
#include <stdexcept>

#include "tests/abi/v1_0/torchferry.h"  // built as a 1.0 plugin, like synthetic.h

namespace {

tf_status ok_kernel(const tf_call*) { return TF_OK; }

tf_status throwing_init(void*) {
  throw std::runtime_error("throwinit: exception escaped init");
}

const tf_kernel kKernels[] = {
    {sizeof(tf_kernel), "abs", TF_DEVICE_CPU, {TF_DTYPE_FLOAT, 32, 1},
     &ok_kernel, nullptr},
};

const tf_plugin kPlugin = {sizeof(tf_plugin),
                           TF_ABI_VERSION_MAJOR,
                           TF_ABI_VERSION_MINOR,
                           "throwinit",
                           "0.0.1",
                           TF_PLUGIN_NATIVE,
                           0,
                           &throwing_init,
                           nullptr,
                           kKernels,
                           1};

}  // namespace

extern "C" TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t, uint32_t, const tf_host_api*) {
  return &kPlugin;
}
