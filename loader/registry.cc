// The kernel registry: loads plugin files in search order, keeps every
// plugin it accepted, explains every one it did not, and answers which kernel
// serves an (op, device type, dtype).
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <exception>
#include <map>
#include <unordered_map>

#include "loader/discovery.h"
#include "loader/known_values.h"
#include "loader/loader.h"
#include "loader/log.h"
#include "loader/op_table.h"
#include "loader/open_plugin.h"

namespace torchferry {
namespace {

// Op index (16 bits), device type (32 bits), dtype code and bits (8 each) in
// one word. Lanes are always 1 for a registered kernel, so they need no bits.
uint64_t KernelKey(int op_index, int32_t device_type, tf_dtype dtype) {
  return (static_cast<uint64_t>(static_cast<uint16_t>(op_index)) << 48) |
         (static_cast<uint64_t>(static_cast<uint32_t>(device_type)) << 16) |
         (static_cast<uint64_t>(dtype.code) << 8) | dtype.bits;
}

const char* KindName(int32_t kind) {
  return kind == TF_PLUGIN_FALLBACK ? "fallback" : "native";
}

std::string KernelLabel(const KernelInfo& k) {
  return fmt::format("({}, {}, {})", k.op, DeviceName(k.device_type),
                     DtypeName(k.dtype));
}

}  // namespace

struct Registry::Impl {
  std::unordered_map<uint64_t, KernelEntry> table;
  std::vector<std::unique_ptr<Plugin>> plugins;
  std::vector<Skipped> skipped;
  std::vector<Shadowed> shadowed;
  std::vector<uint64_t> shadowed_keys;  // parallel to `shadowed`
  std::vector<DeclaredOp> declared;

  int DeclaredIndex(std::string_view name) const {
    for (size_t i = 0; i < declared.size(); ++i) {
      if (declared[i].name == name) return static_cast<int>(i);
    }
    return -1;
  }
  // Why `v`'s declarations cannot join the registry, or "".
  std::string DeclarationConflict(const std::string& path,
                                  const ValidationResult& v) const;

  void Skip(const std::string& path, const std::string& name,
            const std::string& reason, LogLevel level = LogLevel::kWarn) {
    Log(level, "loader", "skipped " + reason);
    skipped.push_back({path, name, reason});
  }

  const Plugin* LoadFileOrSkip(const std::string& path);
  void Register(const Plugin& plugin, const ValidationResult& validation);
};

Registry::Registry() : impl_(std::make_unique<Impl>()) {}
Registry::~Registry() = default;

void Registry::Load(const LoaderOptions& options) {
  SetLogLevel(options.log_level);
  // LoadFile catches what one plugin can throw; only a full heap gets past it
  // to here, and loading fewer plugins beats failing the caller's import.
  try {
    for (const Skipped& entry : options.unresolved_entry_points) {
      impl_->Skip(entry.path, entry.name, entry.reason);
    }
    for (const std::string& name : options.ignored_environment) {
      Log(LogLevel::kWarn, "loader",
          fmt::format("{} is set but ignored: this process runs with "
                      "privileges its caller may lack (setuid, setgid or "
                      "file capabilities), so the environment does not choose "
                      "the code it loads",
                      name));
    }
    for (const EntryPointPath& entry : options.entry_points) {
      Log(LogLevel::kDebug, "loader",
          fmt::format("entry point {}: '{}'", entry.label, entry.path));
    }
    std::vector<Skipped> unusable;
    const std::vector<std::string> files =
        ListPluginFiles(options.search_path, &unusable);
    for (const Skipped& entry : unusable) {
      impl_->Skip(entry.path, entry.name, entry.reason);
    }
    std::map<std::pair<dev_t, ino_t>, std::string> seen;
    for (const std::string& path : files) {
      const std::string stem = PluginStem(path);
      if (!IsSelected(options.selection, stem)) {
        impl_->Skip(path, "",
                    fmt::format("{}: '{}' is not selected by "
                                "TORCHFERRY_PLUGINS='{}'",
                                path.substr(path.rfind('/') + 1), stem,
                                options.selection),
                    LogLevel::kDebug);
        continue;
      }
      // One file reached twice (a folder on TORCHFERRY_PLUGIN_PATH that an
      // entry point also names, a symlink to it) is one plugin: loaded once,
      // and the second path listed with why, at debug level (nothing is
      // wrong).
      struct stat info;
      if (::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
        const auto [first, inserted] =
            seen.emplace(std::pair{info.st_dev, info.st_ino}, path);
        if (!inserted) {
          impl_->Skip(path, "",
                      fmt::format("{}: the file '{}' reached again on the "
                                  "search path; loaded once",
                                  path, first->second),
                      LogLevel::kDebug);
          continue;
        }
      }
      LoadFile(path);
    }
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "loader",
        fmt::format("stopped loading plugins: {}", e.what()));
  }
}

const Plugin* Registry::LoadFile(const std::string& path) {
  // The boundary: nothing a plugin or a full heap does may escape to the
  // caller, which is usually a Python import.
  try {
    return impl_->LoadFileOrSkip(path);
  } catch (const std::exception& e) {
    impl_->Skip(
        path, "",
        fmt::format("{}: internal error while loading: {}", path, e.what()),
        LogLevel::kError);
  } catch (...) {
    impl_->Skip(path, "", path + ": internal error while loading",
                LogLevel::kError);
  }
  return nullptr;
}

const Plugin* Registry::Impl::LoadFileOrSkip(const std::string& path) {
  OpenedPlugin opened = OpenPlugin(path);
  const ValidationResult& v = opened.validation;
  if (!opened.ok) {
    Skip(path, v.name, opened.error);
    return nullptr;
  }
  for (const auto& existing : plugins) {
    if (existing->name == v.name) {
      Skip(path, v.name,
           fmt::format("{}: plugin '{}' is already loaded from {}; expected "
                       "each plugin name once in the search path; remove one "
                       "of the two files",
                       path, v.name, existing->path));
      return nullptr;
    }
  }
  const std::string conflict = DeclarationConflict(path, v);
  if (!conflict.empty()) {
    Skip(path, v.name, conflict);
    return nullptr;
  }
  for (const std::string& note : v.notes) Log(LogLevel::kDebug, "loader", note);
  tf_status init_status;
  std::string init_error = InitPlugin(opened, path, &init_status);
  if (!init_error.empty()) {
    // A backend whose device is absent (no GPU, no driver) is the normal
    // case on most machines: `info` lists it, but it does not warn on every
    // import.
    Skip(path, v.name, init_error,
         init_status == TF_ERROR_DEVICE ? LogLevel::kInfo : LogLevel::kWarn);
    return nullptr;
  }

  auto plugin = std::make_unique<Plugin>();
  plugin->name = v.name;
  plugin->version = v.version;
  plugin->path = path;
  plugin->kind = v.kind;
  plugin->abi_major = v.abi_major;
  plugin->abi_minor = v.abi_minor;
  plugin->dl_handle = opened.dl_handle;
  plugin->descriptor = opened.descriptor;
  plugin->set_option = v.set_option;
  plugin->skipped_kernels = v.skipped_kernels;
  for (const ValidatedKernel& k : v.kernels) {
    plugin->kernels.push_back({KernelOpName(v, k), k.device_type, k.dtype});
  }
  for (const ValidatedOp& op : v.ops) {
    plugin->declared_ops.push_back(op.schema.qualified_name());
  }
  plugins.push_back(std::move(plugin));
  const Plugin& loaded = *plugins.back();
  for (const ValidatedOp& op : v.ops) {
    if (DeclaredIndex(op.schema.qualified_name()) >= 0) continue;
    declared.push_back(
        {op.schema, op.schema.qualified_name(), op.spelling, op.doc, &loaded});
  }
  Register(loaded, v);
  Log(LogLevel::kInfo, "loader",
      fmt::format("loaded {} plugin '{}' {} (ABI {}.{}) from {}: {} kernel(s)",
                  KindName(loaded.kind), loaded.name, loaded.version,
                  loaded.abi_major, loaded.abi_minor, path,
                  loaded.kernels.size()));
  return &loaded;
}

void Registry::Impl::Register(const Plugin& plugin,
                              const ValidationResult& validation) {
  for (size_t i = 0; i < validation.kernels.size(); ++i) {
    const ValidatedKernel& k = validation.kernels[i];
    const KernelInfo& info = plugin.kernels[i];
    const int op_index =
        k.declared >= 0 ? static_cast<int>(kNumOps) + DeclaredIndex(info.op)
                        : k.op_index;
    const tf_infer_fn infer =
        k.declared >= 0 ? validation.ops[k.declared].infer : nullptr;
    const uint64_t key = KernelKey(op_index, info.device_type, info.dtype);
    const KernelEntry entry{k.fn, k.kernel_data, &plugin, infer};
    auto [it, inserted] = table.emplace(key, entry);
    if (inserted) continue;
    const Plugin* holder = it->second.plugin;
    const bool takes_over =
        plugin.kind == TF_PLUGIN_NATIVE && holder->kind == TF_PLUGIN_FALLBACK;
    const Plugin& winner = takes_over ? plugin : *holder;
    const Plugin& loser = takes_over ? *holder : plugin;
    if (takes_over) {
      it->second = entry;
      // Kernels that lost to the old holder now lose to the new one.
      for (size_t s = 0; s < shadowed.size(); ++s) {
        if (shadowed_keys[s] == key) shadowed[s].winner = plugin.name;
      }
    }
    shadowed.push_back({info, loser.name, winner.name});
    shadowed_keys.push_back(key);
    Log(LogLevel::kDebug, "loader",
        fmt::format("kernel {} of '{}' ({}) is shadowed by '{}' ({})",
                    KernelLabel(info), loser.name, KindName(loser.kind),
                    winner.name, KindName(winner.kind)));
  }
}

std::string Registry::Impl::DeclarationConflict(
    const std::string& path, const ValidationResult& v) const {
  for (const ValidatedOp& op : v.ops) {
    const int i = DeclaredIndex(op.schema.qualified_name());
    if (i < 0 || declared[i].spelling == op.spelling) continue;
    const DeclaredOp& first = declared[i];
    return fmt::format(
        "{}: plugin '{}' declares op '{}' as '{}', but plugin '{}' ({}) "
        "declared it as '{}'; expected one schema per op name (rename one, "
        "or spell the schema the same)",
        path, v.name, first.name, op.spelling, first.declared_by->name,
        first.declared_by->path, first.spelling);
  }
  if (declared.size() + v.ops.size() + kNumOps > 0xffff) {
    return fmt::format("{}: too many declared ops in this process", path);
  }
  return "";
}

int Registry::OpIndexOf(std::string_view op) const {
  const int builtin = OpIndex(op);
  if (builtin >= 0) return builtin;
  const int declared = impl_->DeclaredIndex(op);
  return declared < 0 ? -1 : static_cast<int>(kNumOps) + declared;
}

size_t Registry::num_ops() const { return kNumOps + impl_->declared.size(); }

const std::vector<DeclaredOp>& Registry::declared_ops() const {
  return impl_->declared;
}

const KernelEntry* Registry::Find(std::string_view op, int32_t device_type,
                                  tf_dtype dtype) const {
  const int op_index = OpIndexOf(op);
  if (op_index < 0 || dtype.lanes != 1) return nullptr;
  auto it = impl_->table.find(KernelKey(op_index, device_type, dtype));
  return it != impl_->table.end() ? &it->second : nullptr;
}

const Plugin* Registry::FindPlugin(std::string_view name) const {
  for (const auto& plugin : impl_->plugins) {
    if (plugin->name == name) return plugin.get();
  }
  return nullptr;
}

tf_status Registry::SetOption(std::string_view plugin_name,
                              const std::string& key, const std::string& value,
                              ErrorSink* sink) {
  ErrorSink local;
  if (sink == nullptr) sink = &local;
  *sink = ErrorSink{};
  const Plugin* plugin = FindPlugin(plugin_name);
  if (plugin == nullptr) {
    std::string loaded;
    for (const auto& p : impl_->plugins) {
      loaded += (loaded.empty() ? "" : ", ") + p->name;
    }
    sink->status = TF_ERROR_INVALID_ARGUMENT;
    sink->message =
        fmt::format("no plugin named '{}' is loaded; expected one of: {}",
                    plugin_name, loaded.empty() ? "(none loaded)" : loaded);
    return sink->status;
  }
  if (plugin->set_option == nullptr) {
    sink->status = TF_ERROR_UNSUPPORTED;
    sink->message = fmt::format(
        "plugin '{}' takes no options (its set_option is NULL); cannot set "
        "'{}'",
        plugin->name, key);
    return sink->status;
  }
  tf_status status = plugin->set_option(key.c_str(), value.c_str(), sink);
  sink->status = status;
  if (status != TF_OK && sink->message.empty()) {
    sink->message =
        fmt::format("set_option('{}', '{}') failed with {} and no message", key,
                    value, StatusName(status));
  }
  return status;
}

const std::vector<std::unique_ptr<Plugin>>& Registry::plugins() const {
  return impl_->plugins;
}
const std::vector<Skipped>& Registry::skipped() const { return impl_->skipped; }
const std::vector<Shadowed>& Registry::shadowed() const {
  return impl_->shadowed;
}

}  // namespace torchferry
