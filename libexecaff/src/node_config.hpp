// SPDX-License-Identifier: LGPL-2.1-or-later
// The node's execaff configuration, /etc/execaff/shim.json (or the file
// named by $EXECAFF_CONFIG): one reader for execaff-shim, which reads it on
// every invocation, and for the forked crun, which reads it on every exec
// (contrib/crun/DESIGN.md).  Never cached (seed 002: a component that read
// its config once, too early).
//
// Read as an attacker would write it (issue 11, section 3): the file is
// opened once, walking the path one component at a time with O_NOFOLLOW,
// and every directory on the way and the file itself are checked on the
// descriptor that was opened — owned by root, writable by no one else (a
// root-owned sticky directory such as /tmp passes: only root may rename or
// remove root's entries in it).  A symbolic link anywhere on the path, a
// duplicate key, an unknown key, a wrong type or a half-written file is an
// error naming the file and the reason, never a silent default.
#pragma once

#include <optional>
#include <string>

#include "cpu_set.hpp"
#include "error.hpp"

namespace execaff {

inline constexpr const char* kNodeConfigPath = "/etc/execaff/shim.json";
inline constexpr const char* kNodeConfigVariable = "EXECAFF_CONFIG";

// "detect" / "auto", true, false.
enum class ConfigSwitch { automatic, yes, no };
enum class OnFailure { fail, run_unpinned };

struct NodeConfig {
  std::string path;  // the file that was read; "" when none was
  // The shim's keys.
  std::optional<std::string> runtime;
  ConfigSwitch native = ConfigSwitch::automatic;
  OnFailure on_failure = OnFailure::fail;
  ConfigSwitch early_cpuset_join = ConfigSwitch::automatic;
  bool debug = false;
  // The decision's keys, for the shim and the fork alike.
  std::optional<std::string> handler_default;
  std::optional<CpuSet> housekeeping_cpus;
  // The forked crun's (contrib/crun); the shim reads and ignores it.
  bool crun_first_image_pin = false;
};

// Where the config is: $EXECAFF_CONFIG when set (the file must then exist),
// else kNodeConfigPath (which may be absent).
struct NodeConfigLocation {
  std::string path;
  bool required = false;
};
[[nodiscard]] NodeConfigLocation node_config_location();

// A config that cannot be used.  runtime_before_error() is the "runtime"
// read before the error, from a file whose ownership and path passed the
// checks, when the error is not about the runtime itself: it lets the shim
// pass `state`, `kill` and `delete` through while the file is half-written.
class NodeConfigError : public Error {
 public:
  NodeConfigError(const Error& error, std::optional<std::string> runtime)
      : Error(error), runtime_(std::move(runtime)) {}
  [[nodiscard]] const std::optional<std::string>& runtime_before_error() const noexcept {
    return runtime_;
  }

 private:
  std::optional<std::string> runtime_;
};

// Reads and checks the file at `location`.  An absent file that is not
// required gives a NodeConfig whose path is "".  Throws NodeConfigError.
[[nodiscard]] NodeConfig load_node_config(const NodeConfigLocation& location);

// The checks and the parse alone, on a document already read: `source`
// names it in messages.  Throws NodeConfigError.
[[nodiscard]] NodeConfig parse_node_config(std::string_view json, const std::string& source);

}  // namespace execaff
