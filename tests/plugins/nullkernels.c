/* Broken: claims two kernels but has no array. */
#include "synthetic.h"

static const tf_plugin plugin = {sizeof(tf_plugin),
                                 TF_ABI_VERSION_MAJOR,
                                 TF_ABI_VERSION_MINOR,
                                 "nullkernels",
                                 "0.0.1",
                                 TF_PLUGIN_NATIVE,
                                 0,
                                 NULL,
                                 NULL,
                                 NULL,
                                 2};
SYNTHETIC_ENTRY(plugin)
