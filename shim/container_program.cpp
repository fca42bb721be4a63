// SPDX-License-Identifier: LGPL-2.1-or-later
#include "container_program.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace execaff::shim {
namespace {

enum class Lookup { found, absent, unknown };

Lookup look(int root_fd, const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const long fd = ::syscall(SYS_openat2, root_fd, path.c_str(), &how, sizeof how);
  if (fd < 0) {
    return errno == ENOENT || errno == ENOTDIR ? Lookup::absent : Lookup::unknown;
  }
  struct stat st {};
  const bool ok = ::fstat(static_cast<int>(fd), &st) == 0;
  ::close(static_cast<int>(fd));
  if (!ok) return Lookup::unknown;
  // A directory or a file with no execute bit is refused by the runtimes'
  // own look-up (runc's LookPath skips it; crun says permission denied).
  return S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0 ? Lookup::found : Lookup::absent;
}

std::string path_variable(const std::vector<std::string>& env) {
  std::string path;
  bool seen = false;
  for (const auto& entry : env) {  // the last one wins, as in the runtimes
    if (entry.rfind("PATH=", 0) == 0) {
      path = entry.substr(5);
      seen = true;
    }
  }
  return seen ? path : std::string();
}

}  // namespace

bool program_may_exist(pid_t init_pid, const std::string& program,
                       const std::vector<std::string>& env, const std::string& cwd,
                       PathRules rules) noexcept {
  try {
    if (program.empty()) return true;  // let the runtime say what it says
    const std::string root = "/proc/" + std::to_string(init_pid) + "/root";
    const int root_fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) return true;
    bool any_unknown = false;
    bool found = false;
    auto consider = [&](const std::string& candidate) {
      switch (look(root_fd, candidate)) {
        case Lookup::found: found = true; break;
        case Lookup::unknown: any_unknown = true; break;
        case Lookup::absent: break;
      }
    };
    const std::string here = cwd.empty() ? "/" : cwd;
    bool refused = false;
    if (program.find('/') != std::string::npos) {
      consider(program.front() == '/' ? program : here + "/" + program);
    } else {
      const std::string path = path_variable(env);
      std::size_t start = 0;
      while (!found && !refused && start <= path.size() && !path.empty()) {
        const std::size_t colon = std::min(path.find(':', start), path.size());
        std::string dir = path.substr(start, colon - start);
        start = colon + 1;
        if (dir.empty()) {
          if (rules == PathRules::crun) continue;
          dir = ".";
        }
        if (dir.front() == '/') {
          consider(dir + "/" + program);
        } else if (rules == PathRules::crun) {
          consider(here + "/" + dir + "/" + program);
        } else {
          // runc refuses this match (Go's ErrDot): hand the exec over so
          // that it says so, instead of the trampoline running it.
          switch (look(root_fd, here + "/" + dir + "/" + program)) {
            case Lookup::found: refused = true; break;
            case Lookup::unknown: any_unknown = true; break;
            case Lookup::absent: break;
          }
        }
      }
    }
    ::close(root_fd);
    return !refused && (found || any_unknown);
  } catch (...) {
    return true;
  }
}

}  // namespace execaff::shim
