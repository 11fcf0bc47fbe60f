// A check of a plugin file before dlopen sees it. glibc maps a shared
// library's segments straight from the file: a file cut short (an
// interrupted copy or download) has intact headers but segments past its end,
// and touching them raises SIGBUS inside dlopen, killing the host. Nothing
// else in the file is judged here; dlopen does that and says why.
#pragma once

#include <string>

namespace torchferry {

// "" when the file is not a 64-bit ELF (dlopen will explain) or when every
// loadable segment lies within it; otherwise what is wrong.
std::string CheckElfSegmentsInFile(const std::string& path);

}  // namespace torchferry
