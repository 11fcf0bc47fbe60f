/* Broken: the entry declines this host (returns NULL), after logging why. */
#include "synthetic.h"

TF_PLUGIN_EXPORT const tf_plugin* torchferry_plugin_entry(
    uint32_t host_abi_major, uint32_t host_abi_minor, const tf_host_api* host) {
  (void)host_abi_major;
  (void)host_abi_minor;
  host->log(TF_LOG_WARN, "nullentry", "declining: no supported device");
  return NULL;
}
