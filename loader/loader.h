// The plugin loader: finds plugin libraries, dlopens them, negotiates the ABI
// version, validates every descriptor field, and registers their kernels.
// It depends on abi/ only; core/ builds on it. One bad plugin never takes the
// host or the other plugins down: it becomes a Skipped entry with a reason.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "abi/torchferry.h"
#include "loader/op_schema.h"
#include "loader/validate.h"

namespace torchferry {

enum class LogLevel : int32_t {
  kDebug = TF_LOG_DEBUG,
  kInfo = TF_LOG_INFO,
  kWarn = TF_LOG_WARN,
  kError = TF_LOG_ERROR,
  kOff = 100,
};

// A plugin file that was not loaded, and why: what was expected, what was
// found (dlerror text included).
struct Skipped {
  std::string path;
  std::string name;  // may be empty when the descriptor was never read
  std::string reason;
};

// A plugin folder or file an installed distribution registered under the
// `torchferry.plugins` entry point group. The Python package resolves entry
// points (it runs the vendor's code that names the path); the loader treats
// the path like any search path entry.
struct EntryPointPath {
  std::string label;  // "name = value (distribution)", for the log
  std::string path;
};

// True in a process that runs with privileges its caller may lack: the
// kernel's AT_SECURE (setuid, setgid or file capabilities at exec), or real
// and effective user or group ids that differ. Such a process must not let
// the caller's environment choose the code it runs (glibc's secure_getenv,
// which ignores LD_LIBRARY_PATH there).
bool SecureExecution();

// Where to look and what to take. FromEnvironment() reads
// TORCHFERRY_PLUGIN_PATH, TORCHFERRY_PLUGINS and TORCHFERRY_LOG through
// loader/environment.h; when `secure` (SecureExecution() unless given) it
// ignores the first two, which choose the shared objects the process loads,
// and names them in ignored_environment.
struct LoaderOptions {
  // Folders or files, searched in this order: TORCHFERRY_PLUGIN_PATH, then
  // the entry points' paths, then the package's own plugin folder. A folder
  // contributes its `torchferry_*.so` files sorted by name.
  std::vector<std::string> search_path;
  // Comma-separated name globs; `-glob` excludes. Empty: take every plugin.
  std::string selection;
  LogLevel log_level = LogLevel::kWarn;
  // The entry points whose paths are in search_path (for the debug log).
  std::vector<EntryPointPath> entry_points = {};
  // Entry points that named no usable path (their module failed to import, a
  // callable raised, a value of the wrong type, a missing file): each is a
  // skipped plugin with its reason.
  std::vector<Skipped> unresolved_entry_points = {};
  // The variables that were set but not read because the process is
  // privileged (see SecureExecution()).
  std::vector<std::string> ignored_environment = {};

  static LoaderOptions FromEnvironment(
      const std::string& package_plugin_dir,
      std::vector<EntryPointPath> entry_points = {},
      std::vector<Skipped> unresolved_entry_points = {},
      bool secure = SecureExecution());
};

// The error sink that tf_call.error_sink and tf_plugin.init point at.
struct ErrorSink {
  tf_status status = TF_OK;
  std::string message;
};

struct KernelInfo {
  std::string op;
  int32_t device_type;
  tf_dtype dtype;
};

struct Plugin {
  std::string name;
  std::string version;
  std::string path;
  int32_t kind;  // TF_PLUGIN_NATIVE or TF_PLUGIN_FALLBACK
  uint32_t abi_major;
  uint32_t abi_minor;
  std::vector<KernelInfo> kernels;
  void* dl_handle;  // never closed: kernels may be running until exit
  // What the plugin's entry returned. The host reads nothing from it after
  // loading: what it needs (kernels, set_option) was copied at validation.
  const tf_plugin* descriptor;
  tf_status (*set_option)(const char* key, const char* value,
                          void* error_sink);  // copied; NULL: no options
  std::vector<std::string> declared_ops;      // "namespace::name", ABI 1.1
  // Kernels left out because this host's ABI minor lacks their op or dtype.
  std::vector<SkippedKernel> skipped_kernels;
};

// An op a plugin declared (ABI 1.1). Several plugins may declare one name
// when they spell the same schema; the first to load is recorded here.
struct DeclaredOp {
  OpSchema schema;
  std::string name;      // schema.qualified_name()
  std::string spelling;  // schema.ToString()
  std::string doc;
  const Plugin* declared_by;
};

// A kernel that lost to another plugin's kernel for the same key.
struct Shadowed {
  KernelInfo kernel;
  std::string loser;   // plugin name
  std::string winner;  // plugin name
};

struct KernelEntry {
  tf_kernel_fn fn;
  void* kernel_data;
  const Plugin* plugin;
  tf_infer_fn infer;  // the plugin's infer of a declared op; NULL otherwise
};

// Kernels keyed by (op, device type, dtype). Precedence: a native plugin's
// kernel beats a fallback plugin's; between plugins of the same kind, the one
// found first in the search order wins. Lookups are cheap but not free; core
// caches them per op.
class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Discovers and loads every plugin the options allow. Safe to call once.
  void Load(const LoaderOptions& options);
  // Loads one file (tests use this to load synthetic plugins one by one).
  // Returns the plugin, or nullptr with the reason recorded in skipped().
  const Plugin* LoadFile(const std::string& path);

  const KernelEntry* Find(std::string_view op, int32_t device_type,
                          tf_dtype dtype) const;

  // Ops are numbered built-in first (loader/op_table.h), then declared ops
  // in the order plugins declared them: the number keys the registry.
  int OpIndexOf(std::string_view op) const;  // -1 when no op has the name
  size_t num_ops() const;
  const std::vector<DeclaredOp>& declared_ops() const;

  // The loaded plugin called `name`, or nullptr.
  const Plugin* FindPlugin(std::string_view name) const;

  // Hands a user option to a plugin's set_option. An unknown plugin
  // (TF_ERROR_INVALID_ARGUMENT) or one without options (TF_ERROR_UNSUPPORTED)
  // is reported through `sink` like a failure the plugin set itself. Kernels
  // of that plugin may be running; the plugin applies the change atomically
  // (ABI.md).
  tf_status SetOption(std::string_view plugin_name, const std::string& key,
                      const std::string& value, ErrorSink* sink);

  const std::vector<std::unique_ptr<Plugin>>& plugins() const;
  const std::vector<Skipped>& skipped() const;
  const std::vector<Shadowed>& shadowed() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The host service table handed to every plugin's entry function.
const tf_host_api* HostApi();

// Sets the answer HostApi()->query gives for `key` (e.g. "torch.version").
void SetHostQuery(const std::string& key, const std::string& value);

}  // namespace torchferry
