// A check of a plugin file before dlopen sees it. glibc maps a shared
// library's segments straight from the file: a file cut short (an
// interrupted copy or download) has intact headers but segments past its end,
// and touching them raises SIGBUS inside dlopen, killing the host. Nothing
// else in the file is judged here; dlopen does that and says why.
#pragma once

#include <string>

namespace torchferry {

// `fd` is an open regular file (file_kind.h's RegularFile). "" when the file
// is not a 64-bit ELF (dlopen will explain) or when every loadable segment
// lies within it; otherwise what is wrong. Reads with pread, so the
// descriptor's offset does not matter.
std::string CheckElfSegments(int fd);

}  // namespace torchferry
