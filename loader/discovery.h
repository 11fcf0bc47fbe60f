// Where plugin files are found and which of them the user selected. Nothing
// here opens a library: selection happens on file names, before dlopen.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace torchferry {

// Splits a colon-separated path list, dropping empty entries.
std::vector<std::string> SplitSearchPath(std::string_view path_list);

struct Skipped;

// The files to try, in search order: a folder contributes every entry named
// `torchferry_*.so`, sorted by name, and a file entry is taken as is. What
// each of them is gets checked when it is opened (open_plugin.h): a FIFO, a
// socket or a folder of that name is skipped there with its reason, never
// left out in silence. An entry that cannot be used at all (it does not
// exist, is a symbolic link loop, cannot be listed) is added to `*unusable`
// with its reason, or logged (warn) when `unusable` is NULL.
std::vector<std::string> ListPluginFiles(
    const std::vector<std::string>& search_path,
    std::vector<Skipped>* unusable = nullptr);

// The name a plugin is selected by: the file's name without its folder,
// without ".so" and without the "torchferry_" prefix.
std::string PluginStem(std::string_view path);

// Whether `stem` passes a TORCHFERRY_PLUGINS selection: comma-separated fnmatch
// globs, a leading '-' excludes. Without any including glob every stem is
// included; an exclusion always wins. Empty selection: everything.
bool IsSelected(std::string_view selection, std::string_view stem);

}  // namespace torchferry
