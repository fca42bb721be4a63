// SPDX-License-Identifier: LGPL-2.1-or-later
// What the runtime will start for an exec — program, environment, working
// directory — read from a process object (the exec's process file, or
// config.json's "process" for the CLI form).  The emulated path needs them
// to look the program up in the container before replacing it by the
// trampoline.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace execaff {

struct ProcessLaunch {
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string cwd;
};

// `json` is a process document (`under_key` empty) or a config.json whose
// process object is under "process".  Missing members are empty; a wrong
// type is an Error naming `source`.
[[nodiscard]] ProcessLaunch read_process_launch(const std::string& json, std::string_view under_key,
                                                std::string_view source);

}  // namespace execaff
