// SPDX-License-Identifier: LGPL-2.1-or-later
// The CLI form of exec (`exec [options] ID PROGRAM ARGS...`, no --process)
// turned into the process document the runtime itself would build from it,
// so that a runtime applying execCPUAffinity natively can be handed one
// carrying the decision (spec/native.md, "The CLI form").
//
// Each runtime builds it its own way, read from its source:
// * runc >= 1.3 (getProcess in exec.go): config.json's whole `process`,
//   then args, --cwd, --apparmor, --process-label, --cap appended to the
//   bounding/effective/permitted sets (and ambient when the config has an
//   inheritable set), --env appended, terminal = --tty, --no-new-privs,
//   --user UID[:GID].  It copies config.json's execCPUAffinity along.
//   --additional-gids is not converted: runc 1.3.6 gives a single value
//   twice (groups "5 5", its CLI parser's doing), which is not modelled.
// * crun >= 1.19 (crun_command_exec in src/exec.c): a process of only what
//   the command line says — args, cwd ("/" when none: what crun then uses),
//   terminal, env (the container's when none), user (the container's when
//   none), the label and profile, --cap as effective/bounding/ambient/
//   permitted, noNewPrivileges only with --no-new-privs; crun then fills
//   the rest from the container as it does for a process file.  With
//   --env, the env as CrunEnv says.
//
// The options are those the shim read by the runtime's own table
// (command_line.hpp), in any spelling that runtime reads (Go's `-name`,
// argp's abbreviations and `-xVALUE`): the kept tokens go on as they came
// to the same runtime.  Not converted: an argp cluster (`-dt`, one token
// for options kept and options converted), a flag with a value,
// --additional-gids, a --user that is not UID[:GID] in
// decimal, runc's -e beside --env, which runc refuses, --cap with a
// config.json that has no capabilities) is not converted: the caller keeps
// the emulated path, which hands the runtime the options as they came.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command_line.hpp"
#include "spec_json.hpp"

namespace execaff::shim {

enum class CliDialect { runc, crun };

// What crun's CLI form does with the container's env when --env is given:
// 1.19-1.21 replace it by the --env values (src/exec.c, measured with
// 1.21); 1.28 applies the --env values over it, as putenv does (measured:
// crun PR #2082, "exec: use default env with --env").  Between them it is
// not known, and --env is not converted.
enum class CrunEnv { replaced, merged, unknown };

struct CliRuntime {
  CliDialect dialect = CliDialect::runc;
  CrunEnv crun_env = CrunEnv::unknown;
};

struct CliExec {
  std::vector<std::string> kept;  // tokens handed on as they came (--detach, --pid-file F, ...)
  std::vector<std::string> args;  // the program and its arguments
  std::vector<std::string> env;
  std::vector<std::string> caps;
  std::optional<std::string> cwd, user, apparmor, process_label;
  bool tty = false;
  bool no_new_privs = false;
};

// The exec options of the CLI form, or nullopt with `why` when one of them
// is not in the table or not in a spelling both parsers read alike.
[[nodiscard]] std::optional<CliExec> read_cli_exec(const CommandLine& line,
                                                   const CliRuntime& runtime, std::string* why);

// The process document `runtime` builds for `exec`, with `affinity` as
// its execCPUAffinity.  `config` is the container's config.json, parsed
// once (runc starts from its process as written; crun 1.28 from its env).
// nullopt with `why` when the runtime itself would fail or crash on this
// input (runc: --cap without capabilities in config.json), so the caller
// hands the command line on as it came.
[[nodiscard]] std::optional<std::string> cli_process_json(const CliExec& exec,
                                                          const CliRuntime& runtime,
                                                          const ConfigDocument& config,
                                                          const ExecCpuAffinity& affinity,
                                                          std::string* why);

// The argv that hands `exec` to the runtime as `--process PROCESS_PATH`:
// the global options and `exec` as they came, the kept options, then
// `--process PROCESS_PATH ID`.
[[nodiscard]] std::vector<std::string> cli_as_process_argv(const CommandLine& line,
                                                           const CliExec& exec,
                                                           const std::string& process_path);

}  // namespace execaff::shim
