// Where plugin files are found and which of them the user selected. Nothing
// here opens a library: selection happens on file names, before dlopen.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace torchferry {

// Splits a colon-separated path list, dropping empty entries.
std::vector<std::string> SplitSearchPath(std::string_view path_list);

// The files to try, in search order: a folder contributes its
// `torchferry_*.so` regular files sorted by name, a file entry is taken as
// is. An entry that does not exist is logged (warn) and skipped.
std::vector<std::string> ListPluginFiles(
    const std::vector<std::string>& search_path);

// The name a plugin is selected by: the file's name without its folder,
// without ".so" and without the "torchferry_" prefix.
std::string PluginStem(std::string_view path);

// Whether `stem` passes a TORCHFERRY_PLUGINS selection: comma-separated fnmatch
// globs, a leading '-' excludes. Without any including glob every stem is
// included; an exclusion always wins. Empty selection: everything.
bool IsSelected(std::string_view selection, std::string_view stem);

}  // namespace torchferry
