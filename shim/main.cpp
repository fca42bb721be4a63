// SPDX-License-Identifier: LGPL-2.1-or-later
// execaff-shim: a drop-in OCI runtime.  Every command but `exec` is handed
// to the real runtime at once by execve — same argv, environment, fds, and
// so the same exit status and signals.  `exec` goes through exec_command.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "bundle_check.hpp"
#include "command_line.hpp"
#include "error.hpp"
#include "exec_command.hpp"
#include "runtime_log.hpp"
#include "shim_config.hpp"

namespace {

constexpr int kExitFailure = 1;

[[noreturn]] void exec_runtime(const execaff::shim::ShimConfig& config,
                               const std::vector<std::string>& argv,
                               const execaff::shim::RuntimeLog& log) {
  std::vector<char*> raw;
  raw.reserve(argv.size() + 1);
  for (const auto& arg : argv) raw.push_back(const_cast<char*>(arg.c_str()));
  raw.push_back(nullptr);
  ::execv(config.runtime().c_str(), raw.data());
  const int code = errno;
  // The one rule for a runtime that cannot be started (shim_config.hpp),
  // in the words load_shim_config uses.
  log.error(execaff::shim::runtime_not_executable(config, execaff::errno_text(code)));
  ::_exit(kExitFailure);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace execaff::shim;
  ShimConfig config;
  RuntimeLog log;
  // The config first, leniently (any command may pass through a broken
  // one): the runtime it names decides how the command line reads
  // (command_line.hpp).  Its error is reported once the command line has
  // said where errors go — podman and conmon report the runtime's log
  // file, not its stderr.
  std::optional<std::string> config_error;
  try {
    config = load_shim_config(/*pass_through=*/true);
  } catch (const std::exception& e) {
    config_error = e.what();
  }
  const CommandLine line =
      parse_command_line(argc, argv, config_error ? std::string() : config.runtime());
  log.file = line.log;
  log.format = line.log_format;
  log.debug = line.debug;
  // Only exec reads more of the config than the runtime: any other command
  // passes through even with a broken config, when the runtime is known.
  const bool pass_through = line.command != "exec";
  try {
    if (config_error) throw execaff::Error(EINVAL, *config_error);
    if (!pass_through && config.problem) throw execaff::Error(EINVAL, *config.problem);
    if (!pass_through) check_runtime_executable(config);
    refuse_self_as_runtime(config);
  } catch (const std::exception& e) {
    log.error(e.what());
    return kExitFailure;
  }
  if (config.problem) {
    log.warning_everywhere(*config.problem + "; passing " +
                           execaff::quoted(line.command.empty() ? "(no command)" : line.command) +
                           " through to runtime " + execaff::quoted(config.runtime()) + " (from " +
                           config.runtime_from + "); exec is refused until the config is fixed");
  }
  log.debug = line.debug || config.node.debug;

  if (line.command != "exec") {
    if (line.command == "create" || line.command == "run") {
      warn_if_exec_would_be_refused(line, config, log);
    }
    exec_runtime(config, line.argv, log);
  }

  try {
    exec_runtime(config, plan_exec(line, config, log), log);
  } catch (const std::exception& e) {
    const std::string what =
        "exec " + (line.container_id.empty() ? std::string() : execaff::quoted(line.container_id) + ": ") +
        e.what();
    if (config.node.on_failure == execaff::OnFailure::run_unpinned) {
      log.warning_everywhere(what + "; running it unpinned (on_failure = \"run-unpinned\")");
      exec_runtime(config, line.argv, log);
    }
    log.error(what);
    return kExitFailure;
  }
}
