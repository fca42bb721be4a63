// SPDX-License-Identifier: LGPL-2.1-or-later
// Which program an exec runs, and how the runtime will look for it: from
// the exec's documents (its process file, else config.json's "process")
// plus what the exec's own command line adds, by the rules of the runtime
// that runs it.  One function for execaff-shim (whose emulated path must
// know the program before it puts the trampoline in its place) and for
// `execaff explain` (whose pre-flight says whether the program is there):
// both read the same inputs the same way.  No syscalls here; the look-up
// in the container is container_program.hpp's.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "decide.hpp"

namespace execaff {

// Whose exec this is.  runc and crun differ where the shim must follow
// them (measured with runc 1.1.5 and crun 1.8.1, tests/integration/FACTS.md
// §8):
//   * the CLI form's --env: runc appends the values to config.json's env;
//     crun replaces the env by them when there are any, PATH included (so
//     `crun exec -e A=b ID sh` finds no sh);
//   * $PATH: runc (Go's exec.LookPath) takes an empty element as "." and
//     refuses a match in a relative element; it looks a candidate up as Go's
//     filepath.Join spells it (lexically cleaned).  crun skips an empty
//     element, takes a relative one from cwd and looks the raw path up.
enum class RuntimeRules { runc, crun };

[[nodiscard]] const char* to_string(RuntimeRules rules) noexcept;

// "runc" or "crun"; nullopt for anything else.
[[nodiscard]] std::optional<RuntimeRules> parse_runtime_rules(std::string_view name) noexcept;

// The rules of the runtime binary at `path`, by its name: crun's for a name
// starting with "crun" (the forked "crun-execaff" too), runc's otherwise
// (runc, and a runtime we do not know: runc's is the common form).
[[nodiscard]] RuntimeRules runtime_rules_of(std::string_view path) noexcept;

// What the exec's command line says (`exec [--env K=V]... [--cwd DIR] ID
// PROGRAM [ARGS...]`).  Both runtimes ignore it when a process file is given.
struct ExecArgv {
  std::optional<std::string> program;  // nullopt: config.json's process.args[0]
  std::vector<std::string> env;        // the --env values, in order
  std::optional<std::string> cwd;
};

// The program the runtime will start and what it searches it with.
struct ExecProgram {
  std::string program;  // as the exec names it; "" when it names none
  std::vector<std::string> env;
  std::string cwd;
  RuntimeRules rules = RuntimeRules::runc;
};

// The process file (documents.process) when there is one; else
// config.json's "process" with `argv` on top, by `rules`.  Throws Error
// naming the document when args, env or cwd had the wrong type or a
// duplicate (ProcessLaunch::problem).
[[nodiscard]] ExecProgram resolve_exec_program(const DecideRequest& documents, const ExecArgv& argv,
                                               RuntimeRules rules);

// Go's filepath.Clean, lexically: the spelling of filepath.Join(dir, file)
// that runc looks a $PATH candidate up in ("/a/../bin/sh" is "/bin/sh"
// whatever /a is).  shim/go_path_clean.h is the freestanding trampoline's
// own copy; tests/unit/test_exec_program.cpp holds both to one table.
[[nodiscard]] std::string go_clean_path(std::string_view path);

}  // namespace execaff
