// SPDX-License-Identifier: LGPL-2.1-or-later
// A runtime's command line read as that runtime's parser reads it (Go's
// flag package for runc, glibc's argp for crun), from the option table of
// its release (runtime_options.hpp): the global options, the command, the
// command's options, its first operand (exec's container id) and the rest.
// Pure: no syscalls, nothing refused — a line the runtime would refuse is
// read up to the token that makes it refuse, and `problem` says which.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime_options.hpp"

namespace execaff {

// One option as given: which one, where, and its value.
struct GivenOption {
  const RuntimeOption* option = nullptr;
  std::size_t index = 0;  // argv index of the token naming it
  // The token holds this option alone, spelled "--name", "--name=v", "-x",
  // or "-x" followed by its value; false for an argp cluster ("-dt",
  // "-dpFILE"), a Go "-name" and an argp abbreviation ("--proc").
  bool plain = true;
  std::optional<std::string> value;
  std::size_t value_index = 0;  // argv index of the token holding the value
  bool inline_value = false;    // the value is the end of that token ("--x=v", "-pFILE")
  std::string prefix;           // what precedes an inline value in its token
};

struct ReadProblem {
  std::size_t index = 0;  // the argv token the runtime's parser stops at
  std::string reason;     // `unknown option "--bogus"`, `"--proc" is ambiguous`, ...
};

struct RuntimeCommandLine {
  std::vector<GivenOption> global;
  std::size_t command_index = 0;  // 0: no command
  std::string command;
  // The command's options; read only for a command the table lists.
  std::vector<GivenOption> options;
  std::size_t operand_index = 0;  // the first token after them (exec: the id); 0: none
  std::optional<ReadProblem> problem;

  // The last occurrence of option `name` among `options` (or `global`).
  [[nodiscard]] const GivenOption* last(std::string_view name, bool global_option = false) const;
  // Every value of option `name` among the command's options, in order.
  [[nodiscard]] std::vector<std::string> values(std::string_view name) const;
};

[[nodiscard]] RuntimeCommandLine read_runtime_command_line(const RuntimeOptionTable& table,
                                                           std::span<const std::string> argv);

}  // namespace execaff
