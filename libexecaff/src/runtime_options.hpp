// SPDX-License-Identifier: LGPL-2.1-or-later
// Every option of the runtimes execaff wraps, one table per release: the
// global options and those of exec, create and run (spec/runtime-options.md).
// The only copy: the shim's reading of its argv, the CLI form's conversion,
// the bundle check, the C ABI the forked crun calls and the tests that hold
// each table against the runtime's own `--help` all read from here.
//
// runc (urfave/cli v1 over Go's flag package) and crun (glibc's argp) spell
// the same option differently; the table says which parser a release has
// and runtime_command_line.hpp reads a command line as that parser does.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace execaff {

// Whose parser reads the command line (runtime_command_line.cpp).
enum class OptionSyntax {
  go_flag,  // runc: -name and --name alike, =value or the next token, no clusters
  argp,     // crun: --name[=v], unique prefixes of --name, -x clusters, -xVALUE
};

enum class OptionArgument {
  none,      // a flag (Go's boolean flags still take "=true"/"=false")
  required,  // "=value", "-xVALUE" (argp) or the next token
  optional,  // argp's OPTION_ARG_OPTIONAL: only "=value" or "-xVALUE"
};

struct RuntimeOption {
  std::string_view name;    // long name without dashes: "pidfd-socket"
  std::string_view shorts;  // its one-letter forms: "e", "vV", "" for none
  OptionArgument argument = OptionArgument::none;
  bool repeatable = false;  // every occurrence counts (--env); else the last wins
  // Accepted but not in `--help` (runc 1.2+'s deprecated --criu, found by
  // tests/reliability's corpus: the help alone would miss it).
  bool hidden = false;
};

struct CommandOptions {
  std::string_view command;  // "exec", "create", "run"
  std::span<const RuntimeOption> options;
};

struct RuntimeOptionTable {
  std::string_view kind;     // "runc" or "crun": the binary's name
  std::string_view release;  // "1.3.6" (the forked crun: its base, "1.8.1")
  OptionSyntax syntax = OptionSyntax::go_flag;
  std::span<const RuntimeOption> global;
  std::span<const CommandOptions> commands;

  // The options of `command`, or nullopt for a command the table does not
  // list (its options are then not read: the command passes through).
  [[nodiscard]] std::optional<std::span<const RuntimeOption>> options_of(
      std::string_view command) const noexcept;
};

// Every table, oldest release of each kind first.
[[nodiscard]] std::span<const RuntimeOptionTable> runtime_option_tables() noexcept;

// The table of exactly this release ("1.3.6", "1.21"; build suffixes such
// as "+ds1" or crun's "-<commits>-<hash>" ignored), or nullptr.
[[nodiscard]] const RuntimeOptionTable* runtime_option_table(std::string_view kind,
                                                             std::string_view version) noexcept;

// The table for a runtime whose release is not known (or not listed): the
// newest of its kind.  An option an older release shares with it has the
// same argument and short forms (tests/unit/test_runtime_options.cpp), so
// a line it reads, it reads as that release does; a line with an option
// only the older release has (runc 1.1.5's --criu) it cannot read, and the
// release's own table then does (exec_command.cpp).
// nullptr for a kind that is neither runc nor crun.
[[nodiscard]] const RuntimeOptionTable* newest_runtime_option_table(std::string_view kind) noexcept;

// "runc" or "crun" from a runtime's path, by its file name's start (as the
// state root is found: runtime_state.hpp); "" for anything else.
[[nodiscard]] std::string_view runtime_kind_of(std::string_view path) noexcept;

// The table of the release a `--version` first line names ("runc version
// 1.1.5+ds1", "crun version 1.21"), or nullptr.
[[nodiscard]] const RuntimeOptionTable* runtime_option_table_of_version_line(
    std::string_view first_line) noexcept;

}  // namespace execaff
