// SPDX-License-Identifier: LGPL-2.1-or-later
#include "early_cpuset_join.hpp"

#include <fcntl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "error.hpp"

namespace execaff::shim {

bool kernel_resets_affinity_on_join() {
  utsname name{};
  if (::uname(&name) != 0) return true;  // assume the older, stricter behaviour
  // "6.18.0-1-cloud-amd64": major and minor, read with from_chars (sscanf
  // alone would link glibc's whole scanf family into the static shim).
  const char* const end = name.release + ::strnlen(name.release, sizeof name.release);
  unsigned major = 0;
  unsigned minor = 0;
  const auto [dot, major_error] = std::from_chars(name.release, end, major);
  if (major_error != std::errc() || dot == end || *dot != '.') return true;
  if (std::from_chars(dot + 1, end, minor).ec != std::errc()) return true;
  return major < 6 || (major == 6 && minor < 2);
}

void join_cgroup_of(const std::string& cpuset_file) {
  const auto slash = cpuset_file.rfind('/');
  const std::string procs = cpuset_file.substr(0, slash) + "/cgroup.procs";
  const int fd = ::open(procs.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    const int code = errno;
    throw Error(code,
                "joining the container's cpuset early: " + quoted(procs) + ": " + errno_text(code));
  }
  // "0" is the writing process itself (cgroup-v2.rst; v1 accepts it too).
  const ssize_t written = ::write(fd, "0", 1);
  const int code = errno;
  ::close(fd);
  if (written != 1) {
    throw Error(code, "joining the container's cpuset early: writing to " + quoted(procs) + ": " +
                          errno_text(code));
  }
}

}  // namespace execaff::shim
