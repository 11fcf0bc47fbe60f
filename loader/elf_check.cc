#include "loader/elf_check.h"

#include <elf.h>
#include <fmt/format.h>

#include <cstring>
#include <fstream>

namespace torchferry {

std::string CheckElfSegmentsInFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return "";  // dlopen reports unreadable files
  const auto size = static_cast<uint64_t>(file.tellg());
  Elf64_Ehdr header;
  file.seekg(0);
  if (!file.read(reinterpret_cast<char*>(&header), sizeof(header)) ||
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
  file.seekg(static_cast<std::streamoff>(header.e_phoff));
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    if (!file.read(reinterpret_cast<char*>(&segment), sizeof(segment))) {
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
