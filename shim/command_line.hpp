// SPDX-License-Identifier: LGPL-2.1-or-later
// Reading a runtime command line the way runc and crun do — global options,
// the command, and for `exec` its options, the container id and the
// command — without ever refusing an option we do not know.  The shim only
// needs to find a few values and to rewrite a few tokens; everything else
// passes through untouched.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace execaff::shim {

// An option's value and where it stands, so it can be replaced in place.
struct OptionValue {
  std::string value;
  std::size_t index = 0;     // argv index of the token holding the value
  bool inline_form = false;  // "--opt=value" / "-pvalue": the value is a suffix
  std::string prefix;        // what precedes the value in that token
};

struct CommandLine {
  std::vector<std::string> argv;  // exactly as received
  std::size_t command_index = 0;  // argv index of the command (0: none)
  std::string command;            // "exec", "create", ... ("" when none)

  // Global options.
  std::optional<std::string> root;
  std::optional<std::string> log;
  std::optional<std::string> log_format;
  bool debug = false;

  // exec only.
  std::optional<OptionValue> process;
  std::optional<OptionValue> preserve_fds;
  std::vector<std::string> env;  // --env values, CLI form
  std::optional<std::string> cwd;
  std::size_t container_id_index = 0;  // 0: no id
  std::string container_id;
  std::size_t program_index = 0;  // CLI form: first token of the command (0: none)
};

// Never refuses: an unknown "--name" without "=" is taken as a flag, and an
// exec without a container id leaves container_id empty (the runtime prints
// its own usage error).
[[nodiscard]] CommandLine parse_command_line(int argc, char** argv);

// The token that carries `value` as a new value of `option`.
[[nodiscard]] std::string replaced_token(const CommandLine& line, const OptionValue& option,
                                         const std::string& value);

}  // namespace execaff::shim
