// SPDX-License-Identifier: LGPL-2.1-or-later
// Where a container's bundle and init process are, read straight from the
// runtime's state files: `runc state` costs 3.5 ms and `crun state` 2.6 ms
// on the reference machine (tests/integration/FACTS.md), against a budget of
// 0.5 ms for the whole shim.
//   runc: <root>/<id>/state.json — init_process_pid, config.labels "bundle=…"
//   crun: <root>/<id>/status     — pid, bundle; <root>/<id>/config.json is
//         crun's own copy of the bundle's config.json.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace execaff {

struct ContainerState {
  std::string config_path;  // the config.json the runtime created it from
  pid_t init_pid = 0;
  std::string state_file;  // what was read, for messages
  // crun's layout (<root>/<id>/status).  crun's exec differs from runc's
  // where the shim must follow it: the CLI form's env, the $PATH search and
  // $LISTEN_FDS (exec_command.cpp, container_program.hpp).
  bool crun = false;
};

// The runtime's state root: --root when given, else its default by the
// binary's name (/run/runc, /run/crun, /run/youki).  nullopt when neither.
[[nodiscard]] std::optional<std::string> state_root(const std::optional<std::string>& root_option,
                                                    const std::string& runtime);

// nullopt when the container does not exist or the id is not a plain name
// (the runtime then reports that itself, exactly as without the shim).
// Throws Error naming the file when a state file exists but is broken.
// `fs_root` is prefixed to the bundle path a state file names (`execaff
// audit --root-fs`: the state files of a fixture tree name host paths).
[[nodiscard]] std::optional<ContainerState> read_container_state(const std::string& root,
                                                                 const std::string& id,
                                                                 const std::string& fs_root = "");

// The ids of the containers under a state root (directories holding a
// state.json or a status file), sorted.  Empty when `root` does not exist;
// Error naming the directory when it cannot be read.
[[nodiscard]] std::vector<std::string> list_container_ids(const std::string& root);

}  // namespace execaff
