/* Broken: the kernels disagree on struct_size (the array's stride). */
#include "synthetic.h"

typedef struct kernel_v1_next {
  tf_kernel v1;
  int64_t appended_kernel_field;
} kernel_v1_next;

static const kernel_v1_next kernels[] = {
    {{sizeof(kernel_v1_next), "abs", TF_DEVICE_CPU, SYNTHETIC_F32,
      synthetic_ok_kernel, NULL},
     0},
    {{sizeof(tf_kernel), "exp", TF_DEVICE_CPU, SYNTHETIC_F32,
      synthetic_ok_kernel, NULL},
     0},
};
static const tf_plugin plugin = {sizeof(tf_plugin),
                                 TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR,
                                 "mixedkernelsize",
                                 "0.0.1",
                                 TF_PLUGIN_NATIVE,
                                 0,
                                 NULL,
                                 NULL,
                                 &kernels[0].v1,
                                 2};
SYNTHETIC_ENTRY(plugin)
