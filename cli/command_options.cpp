// SPDX-License-Identifier: LGPL-2.1-or-later
#include "command_options.hpp"

#include <unistd.h>

#include "error.hpp"
#include "procfs.hpp"

namespace execaff::cli {
namespace {

const option kSharedOptions[] = {
    {"root-fs", required_argument, nullptr, kOptionRootFs},
    {"config", required_argument, nullptr, kOptionConfig},
    {"help", no_argument, nullptr, kOptionHelp},
};

}  // namespace

std::vector<option> with_shared_options(std::initializer_list<option> own) {
  std::vector<option> table(own);
  table.insert(table.end(), std::begin(kSharedOptions), std::end(kSharedOptions));
  table.push_back({nullptr, 0, nullptr, 0});
  return table;
}

bool take_shared_option(int c, const char* value, NodeOptions& options) {
  switch (c) {
    case kOptionRootFs: options.root_fs = value; return true;
    case kOptionConfig: options.config_path = value; return true;
    case kOptionHelp: options.help = true; return true;
    default: return false;
  }
}

std::optional<std::string> root_fs_problem(const NodeOptions& options) {
  const std::string& dir = options.root_fs;
  if (!dir.empty() && dir.front() == '/' && ::access(dir.c_str(), R_OK | X_OK) == 0) {
    return std::nullopt;
  }
  return "--root-fs " + quoted(dir) + " is not a readable directory (an absolute path)";
}

NodeConfig read_node_config(const NodeOptions& options) {
  const std::string path =
      options.config_path ? *options.config_path : under_root(options.root_fs, kNodeConfigPath);
  return load_node_config({path, false});
}

}  // namespace execaff::cli
