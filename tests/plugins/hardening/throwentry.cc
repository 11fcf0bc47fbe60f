// Broken: the entry function lets a C++ exception escape (the ABI forbids
// it); the loader must contain it and skip the plugin.
#include <stdexcept>

#include "tests/abi/v1_0/torchferry.h"  // built as a 1.0 plugin, like synthetic.h

extern "C" TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t, uint32_t, const tf_host_api*) {
  throw std::runtime_error("throwentry: exception escaped the entry function");
}
