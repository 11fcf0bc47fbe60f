// The one log of the host and its plugins: lines on stderr reading
// `torchferry: [source] message`, filtered by a process-wide level that
// TORCHFERRY_LOG (debug|info|warn|error|off) sets at first use.
#pragma once

#include <optional>
#include <string_view>

#include "loader/loader.h"

namespace torchferry {

// "debug", "info", "warn", "error" or "off" (case-sensitive); nullopt for
// anything else.
std::optional<LogLevel> ParseLogLevel(std::string_view text);

// TORCHFERRY_LOG's level, read through the environment table: nullopt when
// unset, kWarn when not a level (with a line on stderr when `complain`).
std::optional<LogLevel> LogLevelFromEnvironment(bool complain);

// The current level: TORCHFERRY_LOG's at first use (kWarn when unset or not
// understood), until SetLogLevel changes it.
LogLevel GetLogLevel();
void SetLogLevel(LogLevel level);

bool LogEnabled(LogLevel level);

// Writes one line when `level` passes the filter. Never throws: plugins reach
// it through the C ABI.
void Log(LogLevel level, std::string_view source,
         std::string_view message) noexcept;

}  // namespace torchferry
