// SPDX-License-Identifier: LGPL-2.1-or-later
#include "shim_config.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "error.hpp"
#include "node_config.hpp"

namespace execaff::shim {
namespace {

// One rule for a runtime the shim cannot start, whatever is wrong with it:
// exit 1 and a message naming it, where it came from and why.  (A directory
// used to pass access(X_OK) here and fail at execve with 126.)  A command
// passed through skips access(2): its execve says the same, worded by
// runtime_not_executable, one syscall later and only when it fails.
void check_runtime(ShimConfig& config, bool pass_through) {
  const std::string& runtime = config.runtime();
  if (runtime.front() != '/') {
    throw Error(EINVAL, "runtime " + quoted(runtime) + " (from " + config.runtime_from +
                            ") must be an absolute path");
  }
  struct stat& st = config.runtime_status;
  if (::stat(runtime.c_str(), &st) != 0) {
    const int code = errno;
    throw Error(code, runtime_not_executable(config, errno_text(code)));
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(S_ISDIR(st.st_mode) ? EISDIR : EACCES,
                runtime_not_executable(config, S_ISDIR(st.st_mode) ? "it is a directory"
                                                                   : "it is not a regular file"));
  }
  if (!pass_through) check_runtime_executable(config);
}

}  // namespace

ShimConfig load_shim_config(bool pass_through) {
  ShimConfig config;
  const NodeConfigLocation location = node_config_location();
  const char* env_runtime = std::getenv("EXECAFF_RUNTIME");
  const bool runtime_from_env = env_runtime != nullptr && *env_runtime != '\0';
  try {
    config.node = load_node_config(location);
    config.runtime_from = "shim config " + quoted(config.node.path);
  } catch (const NodeConfigError& e) {
    if (!pass_through) throw;
    // Nothing else of a broken file is used: only the runtime, to pass the
    // command through, and only when it is not in doubt.
    if (!runtime_from_env && !e.runtime_before_error()) throw;
    config.node.runtime = e.runtime_before_error();
    config.runtime_from = "shim config " + quoted(location.path);
    config.problem = e.what();
  }

  if (runtime_from_env) {
    config.node.runtime = env_runtime;
    config.runtime_from = "EXECAFF_RUNTIME";
  }
  if (!config.node.runtime || config.node.runtime->empty()) {
    throw Error(ENOENT, "no runtime configured: set EXECAFF_RUNTIME or \"runtime\" in " +
                            quoted(location.path));
  }
  check_runtime(config, pass_through);
  return config;
}

void check_runtime_executable(const ShimConfig& config) {
  if (::access(config.runtime().c_str(), X_OK) != 0) {
    const int code = errno;
    throw Error(code, runtime_not_executable(config, errno_text(code)));
  }
}

std::string runtime_not_executable(const ShimConfig& config, const std::string& why) {
  return "runtime " + quoted(config.runtime()) + " (from " + config.runtime_from +
         ") is not executable: " + why;
}

void refuse_self_as_runtime(const ShimConfig& config) {
  struct stat self {};
  const struct stat& target = config.runtime_status;
  if (::stat("/proc/self/exe", &self) == 0 && self.st_dev == target.st_dev &&
      self.st_ino == target.st_ino) {
    throw Error(ELOOP, "runtime " + quoted(config.runtime()) +
                           " is execaff-shim itself; point EXECAFF_RUNTIME or \"runtime\" at "
                           "the real runc or crun");
  }
}

}  // namespace execaff::shim
