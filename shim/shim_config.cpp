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

template <typename To>
To switch_to(ConfigSwitch value, To automatic, To yes, To no) {
  switch (value) {
    case ConfigSwitch::yes: return yes;
    case ConfigSwitch::no: return no;
    case ConfigSwitch::automatic: break;
  }
  return automatic;
}

void apply_node_config(ShimConfig& config, const NodeConfig& node) {
  if (node.runtime) {
    config.runtime = *node.runtime;
    config.runtime_from = "shim config " + quoted(node.path);
  }
  config.native = switch_to(node.native, NativeMode::detect, NativeMode::yes, NativeMode::no);
  config.handler_default = node.handler_default;
  config.housekeeping_cpus = node.housekeeping_cpus;
  config.on_failure = node.on_failure == execaff::OnFailure::run_unpinned ? OnFailure::run_unpinned
                                                                          : OnFailure::fail;
  config.early_cpuset_join = switch_to(node.early_cpuset_join, EarlyJoinMode::automatic,
                                       EarlyJoinMode::yes, EarlyJoinMode::no);
  config.debug = node.debug;
  config.path = node.path;
}

// One rule for a runtime the shim cannot start, whatever is wrong with it:
// exit 1 and a message naming it, where it came from and why.  (A directory
// used to pass access(X_OK) here and fail at execve with 126.)
void check_runtime(const ShimConfig& config) {
  const std::string which =
      "runtime " + quoted(config.runtime) + " (from " + config.runtime_from + ")";
  if (config.runtime.front() != '/') throw Error(EINVAL, which + " must be an absolute path");
  struct stat st {};
  if (::stat(config.runtime.c_str(), &st) != 0) {
    const int code = errno;
    throw Error(code, which + " is not executable: " + errno_text(code));
  }
  if (!S_ISREG(st.st_mode)) {
    throw Error(S_ISDIR(st.st_mode) ? EISDIR : EACCES,
                which + " is not executable: " +
                    (S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file"));
  }
  if (::access(config.runtime.c_str(), X_OK) != 0) {
    const int code = errno;
    throw Error(code, which + " is not executable: " + errno_text(code));
  }
}

}  // namespace

ShimConfig load_shim_config(bool pass_through) {
  ShimConfig config;
  const NodeConfigLocation location = node_config_location();
  const char* env_runtime = std::getenv("EXECAFF_RUNTIME");
  const bool runtime_from_env = env_runtime != nullptr && *env_runtime != '\0';
  try {
    apply_node_config(config, load_node_config(location));
  } catch (const NodeConfigError& e) {
    if (!pass_through) throw;
    // Nothing else of a broken file is used: only the runtime, to pass the
    // command through, and only when it is not in doubt.
    config = ShimConfig{};
    if (runtime_from_env) {
      config.runtime = env_runtime;
      config.runtime_from = "EXECAFF_RUNTIME";
    } else if (e.runtime_before_error()) {
      config.runtime = *e.runtime_before_error();
      config.runtime_from = "shim config " + quoted(location.path);
    } else {
      throw;
    }
    config.problem = e.what();
  }

  if (runtime_from_env) {
    config.runtime = env_runtime;
    config.runtime_from = "EXECAFF_RUNTIME";
  }
  if (config.runtime.empty()) {
    throw Error(ENOENT, "no runtime configured: set EXECAFF_RUNTIME or \"runtime\" in " +
                            quoted(location.path));
  }
  check_runtime(config);
  return config;
}

void refuse_self_as_runtime(const std::string& runtime) {
  struct stat self {};
  struct stat target {};
  if (::stat("/proc/self/exe", &self) == 0 && ::stat(runtime.c_str(), &target) == 0 &&
      self.st_dev == target.st_dev && self.st_ino == target.st_ino) {
    throw Error(ELOOP, "runtime " + quoted(runtime) +
                           " is execaff-shim itself; point EXECAFF_RUNTIME or \"runtime\" at "
                           "the real runc or crun");
  }
}

}  // namespace execaff::shim
