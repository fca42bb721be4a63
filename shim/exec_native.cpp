// SPDX-License-Identifier: LGPL-2.1-or-later
#include "exec_native.hpp"

#include "cli_process.hpp"
#include "error.hpp"
#include "passed_fds.hpp"
#include "spec_json.hpp"

namespace execaff::shim {
namespace {

bool above(const std::optional<CpuSet>& set, unsigned highest) {
  return set && set->last() && *set->last() > highest;
}

std::string describe(const std::optional<ExecCpuAffinity>& a) {
  if (!a) return "none";
  return "initial " + (a->initial ? quoted(a->initial->format()) : std::string("unset")) +
         ", final " + (a->final ? quoted(a->final->format()) : std::string("unset"));
}

bool decided_by_field(const Decision& d) {
  return d.source == DecisionSource::process || d.source == DecisionSource::config;
}

// The field the runtime applies for this exec when handed the argv as it
// came: the process file's; for a runc found by its version (libcontainer's
// ExecCPUAffinity default, and its CLI form, which copies config.json's
// process) else config.json's.  crun reads the process's only (its PR
// #1909 was closed), and of a runtime declared "native": true nothing more
// is assumed.
std::optional<ExecCpuAffinity> field_the_runtime_reads(const NativeExec& x) {
  const bool runc_default = x.runtime.flavour == NativeFlavour::runc && !x.runtime.version.empty();
  if (x.request.process) {
    if (x.request.process->affinity || !runc_default) return x.request.process->affinity;
  } else if (!runc_default) {
    return std::nullopt;
  }
  if (!x.request.config) return std::nullopt;
  return x.request.config->process.affinity;
}

CliRuntime cli_runtime_of(const NativeSupport& runtime) {
  if (runtime.flavour != NativeFlavour::crun) return {CliDialect::runc, CrunEnv::unknown};
  CrunEnv env = CrunEnv::unknown;
  if (const auto v = numeric_version(runtime.version)) {
    const unsigned minor = (*v)[0] == 1 ? (*v)[1] : 0;
    if ((*v)[0] == 1 && minor <= 21) env = CrunEnv::replaced;
    if ((*v)[0] > 1 || minor >= 28) env = CrunEnv::merged;
  }
  return {CliDialect::crun, env};
}

}  // namespace

std::optional<std::vector<std::string>> plan_native_exec(const NativeExec& x,
                                                         const RuntimeLog& log) {
  const Decision& d = x.decision;
  const ExecCpuAffinity wanted{d.initial, d.final};
  const std::string who = std::string(to_string(x.runtime.flavour)) +
                          (x.runtime.version.empty() ? "" : " " + x.runtime.version) + " (" +
                          x.runtime.evidence + ")";
  if (x.runtime.flavour == NativeFlavour::runc &&
      (above(d.initial, kRuncMaxCpu) || above(d.final, kRuncMaxCpu))) {
    log.debug_line("not native: " + who + " parses CPUs up to " + std::to_string(kRuncMaxCpu) +
                   " only, the decision is " + describe(wanted));
    return std::nullopt;
  }
  const bool is_fork = x.runtime.flavour == NativeFlavour::fork;
  // The runtime would apply exactly the decision from what it reads: hand
  // it the argv as it came.  (The fork decides with libexecaff itself and
  // has always been given the decision: kept so.)
  if (!is_fork && decided_by_field(d) && field_the_runtime_reads(x) == wanted) {
    log.debug_line("native: " + who + " applies the " + to_string(d.source) +
                   " field as decided (" + describe(wanted) + "): argv as it came");
    return x.line.argv;
  }
  const int lowest = 3 + static_cast<int>(preserved_fd_count(x.line) + listen_fd_count(x.state));

  if (x.line.process) {
    const std::string json = rewritten_process(*x.request.process, wanted);
    const int fd =
        memfd_with("execaff-process", json.data(), json.size(), lowest, Placement::at_least);
    std::vector<std::string> argv = x.line.argv;
    argv[x.line.process->index] = replaced_token(*x.line.process, fd_path(fd));
    log.debug_line("native: " + who + " gets a process file carrying the " + to_string(d.source) +
                   " decision (" + describe(wanted) + ") at fd " + std::to_string(fd));
    return argv;
  }

  if (is_fork || x.runtime.version.empty()) {
    // The conversion builds what a known runtime's CLI builds: not for
    // the fork (crun 1.8.1's CLI, deciding itself) nor a declared one.
    log.debug_line("not native: the CLI form over " + who + " stays emulated");
    return std::nullopt;
  }
  const CliRuntime cli_runtime = cli_runtime_of(x.runtime);
  std::string why;
  const auto cli = read_cli_exec(x.line, cli_runtime, &why);
  const ConfigDocument no_config;
  const auto json =
      cli ? cli_process_json(*cli, cli_runtime, x.request.config ? *x.request.config : no_config,
                             wanted, &why)
          : std::nullopt;
  if (!json) {
    log.debug_line("not native: the CLI form is not converted: " + why);
    return std::nullopt;
  }
  const int fd =
      memfd_with("execaff-process", json->data(), json->size(), lowest, Placement::at_least);
  log.debug_line("native: " + who + " gets the CLI form as a process file carrying the " +
                 to_string(d.source) + " decision (" + describe(wanted) + ") at fd " +
                 std::to_string(fd));
  return cli_as_process_argv(x.line, *cli, fd_path(fd));
}

}  // namespace execaff::shim
