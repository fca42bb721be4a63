// SPDX-License-Identifier: LGPL-2.1-or-later
// The shim's argv, read once as the real runtime reads it (libexecaff's
// runtime_command_line.hpp, from the option table of that runtime:
// runtime_options.hpp) and then carried typed: the global options the shim
// uses, the command, and for `exec` its options, the container id and the
// command.  Nothing is refused here: a line the runtime would refuse keeps
// `problem`, and exec_command decides what that means.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "runtime_command_line.hpp"

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
  // The table it was read by: the runtime's release when known, else the
  // newest of its kind (runtime_options.hpp).  nullptr: a runtime neither
  // runc nor crun, read by both, where both read it alike.
  const RuntimeOptionTable* table = nullptr;
  RuntimeCommandLine read;        // the whole reading
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

  // Why the runtime's parser would refuse this line (read.problem), or why
  // the shim cannot tell how the runtime reads it.
  std::optional<std::string> problem;
};

// `runtime`: the real runtime's path; its file name gives the kind (runc,
// crun), and the newest table of that kind reads the line.
[[nodiscard]] CommandLine parse_command_line(int argc, char** argv, const std::string& runtime);

// The same line read again by `table` (the runtime's exact release, once
// known: exec_command.cpp).
[[nodiscard]] CommandLine reread_command_line(const CommandLine& line,
                                              const RuntimeOptionTable& table);

// The token that carries `value` as a new value of `option`.
[[nodiscard]] std::string replaced_token(const OptionValue& option, const std::string& value);

}  // namespace execaff::shim
