// SPDX-License-Identifier: LGPL-2.1-or-later
#include "native_support.hpp"

#include <elf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace execaff::shim {
namespace {

bool read_at(int fd, void* buffer, std::size_t size, off_t offset) {
  return ::pread(fd, buffer, size, offset) == static_cast<ssize_t>(size);
}

std::size_t align4(std::size_t n) {
  return (n + 3) & ~std::size_t{3};
}

bool notes_have_mark(const std::vector<unsigned char>& notes) {
  std::size_t at = 0;
  while (at + sizeof(Elf64_Nhdr) <= notes.size()) {
    Elf64_Nhdr header;
    std::memcpy(&header, notes.data() + at, sizeof header);
    const std::size_t name_at = at + sizeof header;
    const std::size_t desc_at = name_at + align4(header.n_namesz);
    const std::size_t next = desc_at + align4(header.n_descsz);
    if (next > notes.size() || next <= at) return false;
    if (header.n_type == kNoteTypeExecCpuAffinity &&
        header.n_namesz == std::strlen(kNoteName) + 1 &&
        std::memcmp(notes.data() + name_at, kNoteName, header.n_namesz) == 0) {
      return true;
    }
    at = next;
  }
  return false;
}

}  // namespace

bool runtime_has_native_mark(const std::string& binary) noexcept {
  const int fd = ::open(binary.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool found = false;
  try {
    Elf64_Ehdr ehdr;
    if (read_at(fd, &ehdr, sizeof ehdr, 0) && std::memcmp(ehdr.e_ident, ELFMAG, SELFMAG) == 0 &&
        ehdr.e_ident[EI_CLASS] == ELFCLASS64 && ehdr.e_phentsize == sizeof(Elf64_Phdr) &&
        ehdr.e_phnum < 256) {
      std::vector<Elf64_Phdr> phdrs(ehdr.e_phnum);
      if (read_at(fd, phdrs.data(), phdrs.size() * sizeof(Elf64_Phdr),
                  static_cast<off_t>(ehdr.e_phoff))) {
        for (const Elf64_Phdr& ph : phdrs) {
          if (ph.p_type != PT_NOTE || ph.p_filesz > 64 * 1024) continue;
          std::vector<unsigned char> notes(ph.p_filesz);
          if (read_at(fd, notes.data(), notes.size(), static_cast<off_t>(ph.p_offset)) &&
              notes_have_mark(notes)) {
            found = true;
            break;
          }
        }
      }
    }
  } catch (...) {
    found = false;
  }
  ::close(fd);
  return found;
}

}  // namespace execaff::shim
