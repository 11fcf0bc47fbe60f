// The service table every plugin receives: logging, error reporting and
// queries about the host. Each function is entered from C, so none may throw.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "loader/host_parallel.h"
#include "loader/loader.h"
#include "loader/log.h"

#ifndef TORCHFERRY_VERSION
#error "the build defines TORCHFERRY_VERSION (the project version)"
#endif

namespace torchferry {
namespace {

// Query answers must outlive every caller ("the string lives until the process
// ends"), even when a key is set again: old values are kept, never freed. The
// table itself is leaked so that plugins may still query during exit.
struct QueryTable {
  std::mutex mutex;
  std::map<std::string, std::unique_ptr<const std::string>, std::less<>>
      current;
  std::vector<std::unique_ptr<const std::string>> retired;
};

QueryTable& Queries() {
  static QueryTable* table = [] {
    auto* t = new QueryTable;
    t->current["host.version"] =
        std::make_unique<const std::string>(TORCHFERRY_VERSION);
    return t;
  }();
  return *table;
}

LogLevel ClampPluginLevel(int32_t level) {
  if (level <= TF_LOG_DEBUG) return LogLevel::kDebug;
  if (level >= TF_LOG_ERROR) return LogLevel::kError;
  return static_cast<LogLevel>(level);
}

void HostLog(int32_t level, const char* plugin_name,
             const char* message) noexcept {
  Log(ClampPluginLevel(level), plugin_name != nullptr ? plugin_name : "?",
      message != nullptr ? message : "(null message)");
}

tf_status HostSetError(void* error_sink, tf_status status,
                       const char* message) noexcept {
  auto* sink = static_cast<ErrorSink*>(error_sink);
  if (sink == nullptr) return status;
  sink->status = status;
  try {
    sink->message = message != nullptr ? message : "";
  } catch (...) {
    sink->message.clear();
  }
  return status;
}

const char* HostQuery(const char* key) noexcept {
  if (key == nullptr) return nullptr;
  QueryTable& table = Queries();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto it = table.current.find(std::string_view(key));
  return it != table.current.end() ? it->second->c_str() : nullptr;
}

const tf_host_api kHostApi = {
    sizeof(tf_host_api),  TF_ABI_VERSION_MAJOR,
    TF_ABI_VERSION_MINOR, &HostLog,
    &HostSetError,        &HostQuery,
    &ParallelFor,         &ParallelNumThreads,
    &ParallelThreadIndex,
};

}  // namespace

const tf_host_api* HostApi() { return &kHostApi; }

void SetHostQuery(const std::string& key, const std::string& value) {
  QueryTable& table = Queries();
  auto fresh = std::make_unique<const std::string>(value);
  std::lock_guard<std::mutex> lock(table.mutex);
  auto& slot = table.current[key];
  if (slot) table.retired.push_back(std::move(slot));
  slot = std::move(fresh);
}

}  // namespace torchferry
