// Every TORCHFERRY_* variable the project reads, in one table: its name,
// whether it chooses the code a process runs, who reads it and what it means.
// The host's readers (loader and bridge) read through ReadEnvironment(); the
// list of variables a privileged process ignores, and what `python -m
// torchferry info` and `config` say about the variables, derive from it.
// Plugins are separate binaries that do not link the loader: they keep their
// own getenv, and their variables are listed here for the record.
#pragma once

#include <string>
#include <vector>

namespace torchferry {

enum class EnvVar : int {
  kPluginPath,
  kPlugins,
  kBridge,
  kTensorMeta,
  kParallel,
  kLog,
  kCache,
  kCpuIsa,
  kAtenStrategy,
};

struct EnvVarInfo {
  EnvVar var;
  const char* name;
  // Chooses which code the host runs: ignored in a privileged process (see
  // SecureExecution()), as glibc's secure_getenv ignores LD_LIBRARY_PATH.
  bool selects_code;
  const char* reader;  // "loader", "bridge", "python" or "plugin <name>"
  const char* values;  // "a|b|c" where the values are a fixed few, else ""
  const char* meaning;
};

// The whole table, in the order the host reads the variables.
const std::vector<EnvVarInfo>& EnvironmentTable();

const EnvVarInfo& EnvironmentEntry(EnvVar var);

// std::getenv of the variable, or nullptr when it is unset or when it
// selects code and `secure`; a variable so dropped is appended to `ignored`
// when given.
const char* ReadEnvironment(EnvVar var, bool secure,
                            std::vector<std::string>* ignored = nullptr);

// ReadEnvironment(var, SecureExecution()).
const char* ReadEnvironment(EnvVar var);

// The code-selecting variables that are set but not read because `secure`,
// in table order.
std::vector<std::string> IgnoredEnvironmentVariables(bool secure);

}  // namespace torchferry
