#include "loader/environment.h"

#include <cstdlib>

#include "loader/loader.h"

namespace torchferry {

const std::vector<EnvVarInfo>& EnvironmentTable() {
  // Built once and kept: callers hold references into it until exit.
  static const std::vector<EnvVarInfo>* table = new std::vector<EnvVarInfo>{
      {EnvVar::kPluginPath, "TORCHFERRY_PLUGIN_PATH", true, "loader", "",
       "extra plugin folders or files, searched first"},
      {EnvVar::kPlugins, "TORCHFERRY_PLUGINS", true, "loader", "",
       "which plugins load: comma-separated name globs; -glob excludes"},
      {EnvVar::kBridge, "TORCHFERRY_BRIDGE", true, "bridge",
       "auto|shim|offset|exchange", "the bridge path"},
      {EnvVar::kTensorMeta, "TORCHFERRY_TENSOR_META", true, "bridge",
       "auto|getters", "how tensor metadata is read"},
      {EnvVar::kParallel, "TORCHFERRY_PARALLEL", true, "bridge",
       "auto|torch|host|serial", "what serves plugins' parallel_for"},
      {EnvVar::kLog, "TORCHFERRY_LOG", false, "loader",
       "debug|info|warn|error|off", "the log level"},
      {EnvVar::kCache, "TORCHFERRY_CACHE", false, "python", "",
       "where build-aten's plugin goes and is found; a privileged process "
       "does not search it"},
      {EnvVar::kCpuIsa, "TORCHFERRY_CPU_ISA", false, "plugin cpu",
       "baseline|avx2", "caps the cpu plugin's instruction set"},
      {EnvVar::kAtenStrategy, "TORCHFERRY_ATEN_STRATEGY", false, "plugin aten",
       "from_blob|source|pool", "how the aten plugin hands results back"},
  };
  return *table;
}

const EnvVarInfo& EnvironmentEntry(EnvVar var) {
  // The table lists the enum's values in order: the index is the value.
  return EnvironmentTable()[static_cast<int>(var)];
}

const char* ReadEnvironment(EnvVar var, bool secure,
                            std::vector<std::string>* ignored) {
  const EnvVarInfo& entry = EnvironmentEntry(var);
  const char* value = std::getenv(entry.name);
  if (value != nullptr && secure && entry.selects_code) {
    if (ignored != nullptr) ignored->emplace_back(entry.name);
    return nullptr;
  }
  return value;
}

const char* ReadEnvironment(EnvVar var) {
  return ReadEnvironment(var, SecureExecution());
}

std::vector<std::string> IgnoredEnvironmentVariables(bool secure) {
  std::vector<std::string> ignored;
  for (const EnvVarInfo& entry : EnvironmentTable()) {
    ReadEnvironment(entry.var, secure, &ignored);
  }
  return ignored;
}

}  // namespace torchferry
