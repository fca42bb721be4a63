// SPDX-License-Identifier: LGPL-2.1-or-later
// The shim's configuration: the node config (libexecaff's node_config.hpp,
// the file the forked crun reads too), read on every invocation and never
// cached, plus $EXECAFF_RUNTIME.  A missing config where one is needed, a
// half-written or invalid one, or one that anyone but root could have
// written is refused with the reason — except that a command the shim only
// passes through still runs when the runtime is known (`problem` below).
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>

#include "node_config.hpp"

namespace execaff::shim {

// The node config (libexecaff's NodeConfig, the one type for the shim, the
// CLI and the forked crun) and what only the shim adds to it.
struct ShimConfig {
  // node.runtime is the runtime in force: $EXECAFF_RUNTIME's when set, else
  // the file's; after load_shim_config it is always set.
  NodeConfig node;
  std::string runtime_from;  // "EXECAFF_RUNTIME", or "shim config \"PATH\""
  // Set only for a pass-through command run despite a broken config: the
  // reason, for the warning the shim logs.
  std::optional<std::string> problem;
  // The runtime's stat(2), taken when load_shim_config checked it.
  struct stat runtime_status {};

  [[nodiscard]] const std::string& runtime() const { return *node.runtime; }
};

// EXECAFF_RUNTIME names the runtime; the file named by EXECAFF_CONFIG, else
// /etc/execaff/shim.json, holds the rest (and the runtime when the variable
// is unset).  The default file may be absent when EXECAFF_RUNTIME is set.
// With `pass_through` (any command but exec) a broken config is not fatal
// when the runtime is known from EXECAFF_RUNTIME or from the part of the
// file read before the error: CRI-O must be able to stop and delete
// containers while the file is half-written.  The runtime must be an
// absolute path to an executable regular file; every other runtime is an
// error (one rule: the shim exits 1 whatever is wrong with it).  With
// `pass_through` execute permission is left to the execve that follows.
[[nodiscard]] ShimConfig load_shim_config(bool pass_through);

// What load_shim_config adds for a command it does not pass through:
// Error (exit 1, the one wording below) when the runtime is not executable.
void check_runtime_executable(const ShimConfig& config);

// The one wording of "this runtime cannot be started", for load_shim_config
// and for an execve that fails (`why`: the reason, e.g. errno's text).
[[nodiscard]] std::string runtime_not_executable(const ShimConfig& config, const std::string& why);

// Throws Error(ELOOP) when the runtime load_shim_config checked is this
// very binary.
void refuse_self_as_runtime(const ShimConfig& config);

}  // namespace execaff::shim
