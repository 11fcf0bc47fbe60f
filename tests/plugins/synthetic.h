/*
 * Shared pieces of the synthetic test plugins. Each plugin in this folder is
 * correct except for the one thing its file name says, so that a test can
 * tell the loader rejects it for that reason and no other.
 *
 * They are built against the frozen ABI 1.0 header (tests/abi/v1_0), as a
 * plugin built years ago was: every host of major 1 must keep loading them.
 * A plugin that needs a newer minor includes abi/torchferry.h first.
 */
#ifndef TORCHFERRY_TESTS_SYNTHETIC_H_
#define TORCHFERRY_TESTS_SYNTHETIC_H_

#include <stddef.h>
#include <stdint.h>

#include "tests/abi/v1_0/torchferry.h"

/* A kernel that accepts any call and does nothing. */
static inline tf_status synthetic_ok_kernel(const tf_call* call) {
  (void)call;
  return TF_OK;
}

#define SYNTHETIC_F32 \
  { TF_DTYPE_FLOAT, 32, 1 }

/* A well-formed kernel entry for (op, device, dtype) running fn. */
#define SYNTHETIC_KERNEL(op, device, dtype, fn) \
  { sizeof(tf_kernel), op, device, dtype, fn, NULL }

/* A well-formed ABI 1.0 descriptor with the given kernel array. */
#define SYNTHETIC_PLUGIN(name, kind, kernels)                            \
  {                                                                      \
    sizeof(tf_plugin), TF_ABI_VERSION_MAJOR, TF_ABI_VERSION_MINOR, name, \
        "0.0.1", kind, 0, NULL, NULL, kernels,                           \
        sizeof(kernels) / sizeof(kernels[0])                             \
  }

/* The exported entry, returning `descriptor` whatever the host is. */
#define SYNTHETIC_ENTRY(descriptor)                          \
  TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry( \
      uint32_t host_abi_major, uint32_t host_abi_minor,      \
      const tf_host_api* host) {                             \
    (void)host_abi_major;                                    \
    (void)host_abi_minor;                                    \
    (void)host;                                              \
    return &descriptor;                                      \
  }

#endif /* TORCHFERRY_TESTS_SYNTHETIC_H_ */
