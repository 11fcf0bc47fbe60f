/* Correct, from the future: built for a newer minor whose tf_plugin and
   tf_kernel have fields appended, and which knows an op this host does not.
   It must load, with that one kernel left out. */
#include "abi/torchferry.h"  // the newest header, not synthetic.h's 1.0 one
#include "synthetic.h"

typedef struct kernel_v1_next {
  tf_kernel v1;
  int64_t appended_kernel_field;
} kernel_v1_next;

typedef struct plugin_v1_next {
  tf_plugin v1;
  void* appended_plugin_field;
  uint64_t another_appended_field;
} plugin_v1_next;

static const kernel_v1_next kernels[] = {
    {{sizeof(kernel_v1_next), "abs", TF_DEVICE_CPU, SYNTHETIC_F32,
      synthetic_ok_kernel, NULL},
     7},
    {{sizeof(kernel_v1_next), "op_from_the_future", TF_DEVICE_CPU,
      SYNTHETIC_F32, synthetic_ok_kernel, NULL},
     8},
    {{sizeof(kernel_v1_next), "exp", TF_DEVICE_CPU, SYNTHETIC_F32,
      synthetic_ok_kernel, NULL},
     9},
};

static const plugin_v1_next plugin = {
    {sizeof(plugin_v1_next), TF_ABI_VERSION_MAJOR, TF_ABI_VERSION_MINOR + 1,
     "newerminor", "0.0.1", TF_PLUGIN_NATIVE, 0, NULL, NULL, &kernels[0].v1, 3,
     NULL, 0},
    NULL,
    42};

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_major;
  (void)host_abi_minor;
  (void)host;
  return &plugin.v1;
}
