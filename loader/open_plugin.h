// Opening one plugin file: dlopen, the entry symbol, the entry call, the
// descriptor's validation, and later its init. The registry decides what to do
// with the result; nothing here throws for a bad plugin.
#pragma once

#include <string>

#include "abi/torchferry.h"
#include "loader/validate.h"

namespace torchferry {

struct OpenedPlugin {
  bool ok = false;
  std::string error;  // when !ok: names the file, expected and found
  void* dl_handle = nullptr;
  const tf_plugin* descriptor = nullptr;
  ValidationResult validation;
};

// dlopens `path` (RTLD_NOW | RTLD_LOCAL), calls its entry and validates what
// it returns. The library stays open even on failure: its entry may already
// have run code whose teardown would be unsafe.
OpenedPlugin OpenPlugin(const std::string& path);

// Calls the init that validation copied (when there is one), then checks
// that the descriptor still says what was validated; returns "" on success,
// or why not: the message the plugin set, or what changed in the descriptor.
// `status` receives what init returned (TF_OK when there is no init).
std::string InitPlugin(const OpenedPlugin& opened, const std::string& file,
                       tf_status* status);

}  // namespace torchferry
