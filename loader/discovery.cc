#include "loader/discovery.h"

#include <dirent.h>
#include <errno.h>
#include <fmt/format.h>
#include <fnmatch.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "loader/environment.h"
#include "loader/file_kind.h"
#include "loader/loader.h"
#include "loader/log.h"

namespace torchferry {
namespace {

constexpr std::string_view kFilePrefix = "torchferry_";
constexpr std::string_view kFileSuffix = ".so";

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.substr(s.size() - suffix.size()) == suffix;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// Every name of the plugin pattern, whatever it is: opening it says what it
// is (a FIFO or a folder of that name is reported, not skipped in silence).
// Empty with `*error` set when the folder cannot be read.
std::vector<std::string> PluginFilesIn(const std::string& folder, int* error) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) {
    *error = errno;
    return names;
  }
  while (const dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (name.size() > kFilePrefix.size() + kFileSuffix.size() &&
        StartsWith(name, kFilePrefix) && EndsWith(name, kFileSuffix)) {
      names.emplace_back(name);
    }
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  std::vector<std::string> files;
  for (const std::string& name : names) {
    files.push_back(folder.back() == '/' ? folder + name : folder + "/" + name);
  }
  return files;
}

}  // namespace

std::vector<std::string> SplitSearchPath(std::string_view path_list) {
  std::vector<std::string> entries;
  while (!path_list.empty()) {
    size_t colon = path_list.find(':');
    std::string_view entry = path_list.substr(0, colon);
    if (!entry.empty()) entries.emplace_back(entry);
    if (colon == std::string_view::npos) break;
    path_list.remove_prefix(colon + 1);
  }
  return entries;
}

std::vector<std::string> ListPluginFiles(
    const std::vector<std::string>& search_path,
    std::vector<Skipped>* unusable) {
  std::vector<std::string> files;
  auto refuse = [&](const std::string& entry, const std::string& what) {
    std::string reason = fmt::format(
        "plugin search path entry '{}' {}; expected a folder or a plugin "
        "file; check TORCHFERRY_PLUGIN_PATH",
        entry, what);
    if (unusable != nullptr) {
      unusable->push_back({entry, "", std::move(reason)});
    } else {
      Log(LogLevel::kWarn, "loader", reason);
    }
  };
  for (const std::string& entry : search_path) {
    struct stat info;
    if (entry.empty()) continue;
    // stat only tells a folder from the rest; a file entry is opened (and
    // judged) without blocking by OpenPlugin, whatever it turns out to be.
    if (::stat(entry.c_str(), &info) != 0) {
      refuse(entry, DescribePathError(entry, errno));
      continue;
    }
    if (S_ISDIR(info.st_mode)) {
      int error = 0;
      std::vector<std::string> found = PluginFilesIn(entry, &error);
      if (error != 0) {
        refuse(entry,
               "is a folder that cannot be listed (" + ErrnoText(error) + ")");
        continue;
      }
      Log(LogLevel::kDebug, "loader",
          fmt::format("{} plugin file(s) in '{}'", found.size(), entry));
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(entry);
    }
  }
  return files;
}

std::string PluginStem(std::string_view path) {
  size_t slash = path.rfind('/');
  std::string_view name =
      slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (EndsWith(name, kFileSuffix)) name.remove_suffix(kFileSuffix.size());
  if (StartsWith(name, kFilePrefix)) name.remove_prefix(kFilePrefix.size());
  return std::string(name);
}

bool IsSelected(std::string_view selection, std::string_view stem) {
  const std::string stem_z(stem);
  bool any_include = false;
  bool included = false;
  while (true) {
    size_t comma = selection.find(',');
    std::string_view glob = Trim(selection.substr(0, comma));
    if (!glob.empty()) {
      bool exclude = glob.front() == '-';
      if (exclude) glob.remove_prefix(1);
      const std::string glob_z(glob);
      bool matches = ::fnmatch(glob_z.c_str(), stem_z.c_str(), 0) == 0;
      if (exclude && matches) return false;
      if (!exclude) {
        any_include = true;
        included = included || matches;
      }
    }
    if (comma == std::string_view::npos) break;
    selection.remove_prefix(comma + 1);
  }
  return !any_include || included;
}

bool SecureExecution() {
  return ::getauxval(AT_SECURE) != 0 || ::getuid() != ::geteuid() ||
         ::getgid() != ::getegid();
}

LoaderOptions LoaderOptions::FromEnvironment(
    const std::string& package_plugin_dir,
    std::vector<EntryPointPath> entry_points,
    std::vector<Skipped> unresolved_entry_points, bool secure) {
  LoaderOptions options;
  // A variable that chooses which shared objects load is the caller's to set
  // only when the caller could load them itself (the table says which).
  if (const char* path = ReadEnvironment(EnvVar::kPluginPath, secure,
                                         &options.ignored_environment)) {
    options.search_path = SplitSearchPath(path);
  }
  // An installed vendor's plugin comes after the user's explicit path (which
  // can shadow it) and before the package's own plugins (which it shadows).
  for (const EntryPointPath& entry : entry_points) {
    options.search_path.push_back(entry.path);
  }
  options.entry_points = std::move(entry_points);
  options.unresolved_entry_points = std::move(unresolved_entry_points);
  if (!package_plugin_dir.empty()) {
    options.search_path.push_back(package_plugin_dir);
  }
  if (const char* selection = ReadEnvironment(EnvVar::kPlugins, secure,
                                              &options.ignored_environment)) {
    options.selection = selection;
  }
  // GetLogLevel()'s first use has read (and complained about) the variable;
  // read again, as it may have changed since, quietly.
  options.log_level = GetLogLevel();
  if (std::optional<LogLevel> level = LogLevelFromEnvironment(false)) {
    options.log_level = *level;
  }
  return options;
}

}  // namespace torchferry
