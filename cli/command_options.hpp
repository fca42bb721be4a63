// SPDX-License-Identifier: LGPL-2.1-or-later
// The options `execaff audit` and `execaff explain` share — where the node
// is (--root-fs), its config (--config), --help — defined once: one getopt
// table, one parser, one check and one place the CLI reads the node config
// (libexecaff's reader, the shim's and the forked crun's).
#pragma once

#include <getopt.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "node_config.hpp"

namespace execaff::cli {

// getopt_long values of the shared options; a command's own start at 1000.
enum SharedOption : int { kOptionRootFs = 900, kOptionConfig, kOptionHelp };

struct NodeOptions {
  std::string root_fs = "/";               // the node's files are read under it
  std::optional<std::string> config_path;  // --config
  bool help = false;
};

// A command's own options followed by the shared ones, terminated: a table
// for getopt_long.
[[nodiscard]] std::vector<option> with_shared_options(std::initializer_list<option> own);

// Takes `c` when it is a shared option (true), with its argument `value`.
[[nodiscard]] bool take_shared_option(int c, const char* value, NodeOptions& options);

// The error message for a --root-fs that is not an absolute path to a
// readable directory; nullopt when it is one.
[[nodiscard]] std::optional<std::string> root_fs_problem(const NodeOptions& options);

// The node config: --config FILE, else /etc/execaff/shim.json under
// --root-fs.  An absent file is no config (path ""): a node without the
// shim.  Throws Error with the shim's own message for a file that is there
// but invalid, unsafe (not root-owned, group/other-writable) or unreadable.
[[nodiscard]] NodeConfig read_node_config(const NodeOptions& options);

}  // namespace execaff::cli
