#include "loader/log.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "loader/environment.h"

namespace torchferry {

std::optional<LogLevel> ParseLogLevel(std::string_view text) {
  if (text == "debug") return LogLevel::kDebug;
  if (text == "info") return LogLevel::kInfo;
  if (text == "warn") return LogLevel::kWarn;
  if (text == "error") return LogLevel::kError;
  if (text == "off") return LogLevel::kOff;
  return std::nullopt;
}

std::optional<LogLevel> LogLevelFromEnvironment(bool complain) {
  const char* env = ReadEnvironment(EnvVar::kLog);
  if (env == nullptr) return std::nullopt;
  std::optional<LogLevel> parsed = ParseLogLevel(env);
  if (!parsed && complain) {
    std::fprintf(stderr,
                 "torchferry: [loader] TORCHFERRY_LOG='%s' is not a log "
                 "level; expected debug, info, warn, error or off; using "
                 "warn\n",
                 env);
  }
  return parsed.value_or(LogLevel::kWarn);
}

namespace {

// Read from the environment once, so that a plugin logging from its entry
// function (before any options were applied) already obeys TORCHFERRY_LOG.
std::atomic<int32_t>& LevelStorage() {
  static std::atomic<int32_t> level = static_cast<int32_t>(
      LogLevelFromEnvironment(/*complain=*/true).value_or(LogLevel::kWarn));
  return level;
}

}  // namespace

LogLevel GetLogLevel() {
  return static_cast<LogLevel>(LevelStorage().load(std::memory_order_relaxed));
}

void SetLogLevel(LogLevel level) {
  LevelStorage().store(static_cast<int32_t>(level), std::memory_order_relaxed);
}

bool LogEnabled(LogLevel level) {
  return level != LogLevel::kOff &&
         static_cast<int32_t>(level) >=
             LevelStorage().load(std::memory_order_relaxed);
}

void Log(LogLevel level, std::string_view source,
         std::string_view message) noexcept {
  if (!LogEnabled(level)) return;
  try {
    // One fwrite per line keeps lines from concurrent threads whole.
    std::string line;
    line.reserve(source.size() + message.size() + 16);
    line.append("torchferry: [").append(source).append("] ").append(message);
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), stderr);
  } catch (...) {
    // Out of memory while logging: dropping the line is all we can do.
  }
}

}  // namespace torchferry
