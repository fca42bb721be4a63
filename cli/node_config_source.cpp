// SPDX-License-Identifier: LGPL-2.1-or-later
#include "node_config_source.hpp"

#include "node_config.hpp"

namespace execaff::cli {

NodeConfig read_node_config(const std::string& path) {
  // libexecaff's reader, the one the shim and the forked crun use: the same
  // checked open and strict parse, and no runtime needed.
  const execaff::NodeConfig node = execaff::load_node_config({path, false});
  NodeConfig config;
  if (node.path.empty()) return config;  // absent: no config
  config.handler_default = node.handler_default;
  config.housekeeping_cpus = node.housekeeping_cpus;
  config.path = node.path;
  return config;
}

}  // namespace execaff::cli
