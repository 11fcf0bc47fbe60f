#include "loader/elf_check.h"

#include <elf.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace torchferry {
namespace {

// Reads exactly `size` bytes at `offset`; false on a short read or an error.
bool ReadAt(int fd, uint64_t offset, void* out, size_t size) {
  auto* bytes = static_cast<unsigned char*>(out);
  while (size > 0) {
    const ssize_t n = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (n <= 0) return false;
    bytes += n;
    offset += static_cast<uint64_t>(n);
    size -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string CheckElfSegments(int fd) {
  struct stat info;
  if (::fstat(fd, &info) != 0) return "";  // dlopen reports unreadable files
  const auto size = static_cast<uint64_t>(info.st_size);
  Elf64_Ehdr header;
  if (!ReadAt(fd, 0, &header, sizeof(header)) ||
      std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_phentsize != sizeof(Elf64_Phdr)) {
    return "";
  }
  const uint64_t table_end =
      header.e_phoff + uint64_t{header.e_phnum} * sizeof(Elf64_Phdr);
  if (header.e_phoff > size || table_end > size) {
    return fmt::format(
        "the ELF program headers end at byte {} but the file has {} bytes; "
        "expected a complete shared library (was the copy cut short?)",
        table_end, size);
  }
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    if (!ReadAt(fd, header.e_phoff + uint64_t(i) * sizeof(Elf64_Phdr), &segment,
                sizeof(segment))) {
      return "the ELF program headers could not be read";
    }
    if (segment.p_type != PT_LOAD) continue;
    if (segment.p_offset > size || segment.p_filesz > size - segment.p_offset) {
      return fmt::format(
          "loadable segment {} ends at byte {} but the file has {} bytes; "
          "expected a complete shared library (was the copy cut short?)",
          i, segment.p_offset + segment.p_filesz, size);
    }
  }
  return "";
}

}  // namespace torchferry
