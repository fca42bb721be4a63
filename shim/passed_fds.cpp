// SPDX-License-Identifier: LGPL-2.1-or-later
#include "passed_fds.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "error.hpp"

namespace execaff::shim {

int memfd_with(const char* name, const void* bytes, std::size_t size, int at, Placement place) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    const int code = errno;
    throw Error(code, std::string("memfd_create(") + name + "): " + errno_text(code));
  }
  const auto* p = static_cast<const char*>(bytes);
  std::size_t left = size;
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n <= 0) {
      const int code = n < 0 ? errno : EIO;
      ::close(fd);
      throw Error(code, std::string("writing memfd ") + name + ": " + errno_text(code));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  (void)::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  int placed = -1;
  if (place == Placement::exactly) {
    // dup3 without O_CLOEXEC gives a descriptor the runtime inherits.
    placed = fd == at ? (::fcntl(fd, F_SETFD, 0) == 0 ? fd : -1) : ::dup3(fd, at, 0);
  } else if (fd >= at) {
    // Already high enough (the common case): inheritable in place.
    placed = ::fcntl(fd, F_SETFD, 0) == 0 ? fd : -1;
  } else {
    placed = ::fcntl(fd, F_DUPFD, at);  // F_DUPFD clears FD_CLOEXEC
  }
  const int code = errno;
  if (placed != fd) ::close(fd);
  if (placed < 0) {
    throw Error(code, std::string("placing memfd ") + name + " at fd " + std::to_string(at) + ": " +
                          errno_text(code));
  }
  return placed;
}

unsigned preserved_fd_count(const CommandLine& line) {
  if (!line.preserve_fds) return 0;
  const std::string& v = line.preserve_fds->value;
  char* end = nullptr;
  errno = 0;
  const unsigned long n = std::strtoul(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || n > 1024) {
    throw Error(EINVAL, "--preserve-fds " + quoted(v) + " is not a count of file descriptors");
  }
  return static_cast<unsigned>(n);
}

// crun reads the variable with a bare strtoll: so does this.
unsigned listen_fd_count(const ContainerState& state) {
  const char* value = std::getenv("LISTEN_FDS");
  if (!state.crun || value == nullptr) return 0;
  const long long n = std::strtoll(value, nullptr, 10);
  return n > 0 && n <= 1024 ? static_cast<unsigned>(n) : 0;
}

std::string fd_path(int fd) {
  return "/proc/self/fd/" + std::to_string(fd);
}

}  // namespace execaff::shim
