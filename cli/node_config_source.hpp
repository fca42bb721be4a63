// SPDX-License-Identifier: LGPL-2.1-or-later
// The node config (/etc/execaff/shim.json) as the CLI needs it: the
// handler default and the housekeeping CPUs, which decide an exec as the
// shim would, through libexecaff's node-config reader (node_config.hpp),
// the one the shim and the forked crun use.
#pragma once

#include <optional>
#include <string>

#include "cpu_set.hpp"

namespace execaff::cli {

inline constexpr const char* kNodeConfigPath = "/etc/execaff/shim.json";

struct NodeConfig {
  std::optional<std::string> handler_default;
  std::optional<CpuSet> housekeeping_cpus;
  std::string path;  // "" when no file was read
};

// The node config at `path`; an absent file is no config (a node without
// the shim).  Throws Error with the shim's own message for a file that is
// there but invalid, unsafe (not root-owned, group/other-writable) or
// unreadable.
[[nodiscard]] NodeConfig read_node_config(const std::string& path);

}  // namespace execaff::cli
