// SPDX-License-Identifier: LGPL-2.1-or-later
#include "node_config_source.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "error.hpp"
#include "shim_config.hpp"

namespace execaff::cli {
namespace {

// Sets a variable for the lifetime of the object, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

NodeConfig read_node_config(const std::string& path) {
  NodeConfig config;
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return config;
  // Today's reader is the shim's: it takes its path from EXECAFF_CONFIG and
  // insists on a runtime, which the CLI does not need; any executable stands
  // in (EXECAFF_RUNTIME overrides the file's "runtime" after the file has
  // been checked and parsed whole).
  const ScopedEnv config_path("EXECAFF_CONFIG", path);
  const ScopedEnv runtime("EXECAFF_RUNTIME", "/proc/self/exe");
  const shim::ShimConfig shim = shim::load_shim_config();
  config.handler_default = shim.handler_default;
  config.housekeeping_cpus = shim.housekeeping_cpus;
  config.path = path;
  return config;
}

}  // namespace execaff::cli
