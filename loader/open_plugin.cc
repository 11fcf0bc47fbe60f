#include "loader/open_plugin.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include "loader/elf_check.h"
#include "loader/file_kind.h"
#include "loader/known_values.h"
#include "loader/loader.h"
#include "loader/log.h"

namespace torchferry {
namespace {

std::string FileName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Without a slash dlopen would search the library path instead of the file.
std::string DlopenPath(const std::string& path) {
  return path.find('/') == std::string::npos ? "./" + path : path;
}

std::string LastDlerror() {
  const char* error = ::dlerror();
  return error != nullptr ? error : "no dlerror() message";
}

}  // namespace

OpenedPlugin OpenPlugin(const std::string& path) {
  OpenedPlugin opened;
  const std::string file = FileName(path);
  {
    // dlopen opens the path again: someone able to swap the file in between
    // can as well put any code there, so this guards against accidents (a
    // FIFO, a folder, a cut-short copy), not against the folder's owner.
    const RegularFile regular(path);
    if (!regular.ok()) {
      opened.error = fmt::format(
          "{}: cannot load the library: {} {}; expected a regular file "
          "holding a shared library (check TORCHFERRY_PLUGIN_PATH and what "
          "the plugin folders hold)",
          file, path, regular.problem());
      return opened;
    }
    const std::string truncated = CheckElfSegments(regular.fd());
    if (!truncated.empty()) {
      opened.error =
          fmt::format("{}: cannot load the library: {}", file, truncated);
      return opened;
    }
  }
  ::dlerror();  // clear a stale message so the one we report is ours
  opened.dl_handle = ::dlopen(DlopenPath(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (opened.dl_handle == nullptr) {
    opened.error = fmt::format(
        "{}: cannot load the library: {}; expected a shared library built for "
        "this platform whose dependencies are all found (check with `ldd {}`)",
        file, LastDlerror(), path);
    return opened;
  }
  ::dlerror();
  void* symbol = ::dlsym(opened.dl_handle, TF_PLUGIN_ENTRY_SYMBOL);
  if (symbol == nullptr) {
    opened.error = fmt::format(
        "{}: no entry symbol '{}' ({}); expected a plugin that exports it "
        "with TF_PLUGIN_EXPORT (check with `nm -D --defined-only {}`)",
        file, TF_PLUGIN_ENTRY_SYMBOL, LastDlerror(), path);
    return opened;
  }
  auto entry = reinterpret_cast<tf_plugin_entry_fn>(symbol);
  opened.descriptor =
      entry(TF_ABI_VERSION_MAJOR, TF_ABI_VERSION_MINOR, HostApi());
  opened.validation = ValidateDescriptor(opened.descriptor, file);
  if (!opened.validation.ok) {
    opened.error = opened.validation.error;
    return opened;
  }
  opened.ok = true;
  return opened;
}

std::string InitPlugin(const OpenedPlugin& opened, const std::string& file,
                       tf_status* status) {
  *status = TF_OK;
  const ValidationResult& v = opened.validation;
  if (v.init != nullptr) {
    ErrorSink sink;
    *status = v.init(&sink);
    if (*status != TF_OK) {
      return fmt::format(
          "{}: init of plugin '{}' failed with {}: {}", FileName(file), v.name,
          StatusName(*status),
          sink.message.empty() ? "(the plugin set no message)" : sink.message);
    }
  }
  // The host keeps only what it copied at validation; a descriptor that no
  // longer says the same breaks the ABI's promise, and whatever the plugin
  // meant by the change, its kernels would not be the ones it now lists.
  const std::string change =
      DescriptorChange(v, opened.descriptor, FileName(file));
  if (change.empty()) return "";
  *status = TF_ERROR_INTERNAL;
  return fmt::format(
      "{}: plugin '{}' changed its descriptor {}: {}; a descriptor and "
      "everything it points to must stay unchanged while the library is "
      "loaded (abi/ABI.md, Loading); fix the plugin",
      FileName(file), v.name,
      v.init != nullptr ? "during init" : "after it was validated", change);
}

}  // namespace torchferry
