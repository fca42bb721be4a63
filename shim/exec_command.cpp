// SPDX-License-Identifier: LGPL-2.1-or-later
#include "exec_command.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "apply.hpp"
#include "container_program.hpp"
#include "decide.hpp"
#include "early_cpuset_join.hpp"
#include "error.hpp"
#include "exec_native.hpp"
#include "exec_preflight.hpp"
#include "exec_program.hpp"
#include "file_reader.hpp"
#include "final_trampoline_image.h"
#include "native_cache.hpp"
#include "native_support.hpp"
#include "node_facts.hpp"
#include "passed_fds.hpp"
#include "read_tally.hpp"
#include "runtime_options.hpp"
#include "runtime_state.hpp"
#include "spec_json.hpp"

namespace execaff::shim {
namespace {

// The trampoline must sit at exactly 3 + K (K: the caller's --preserve-fds),
// the one fd the runtime will pass on next.  An fd the caller left open
// there would not have reached the container anyway; move it out of the way.
int place_trampoline(int target) {
  if (::fcntl(target, F_GETFD) >= 0) {
    const int moved = ::fcntl(target, F_DUPFD_CLOEXEC, target + 1);
    if (moved < 0) {
      const int code = errno;
      throw Error(code, "moving inherited fd " + std::to_string(target) + ": " + errno_text(code));
    }
    ::close(target);
  }
  return memfd_with("execaff-trampoline", kFinalTrampolineImage, sizeof kFinalTrampolineImage,
                    target, Placement::exactly);
}

std::vector<std::string> with_preserve_fds(const CommandLine& line, std::vector<std::string> argv,
                                           unsigned count) {
  if (line.preserve_fds) {
    argv[line.preserve_fds->index] =
        replaced_token(*line.preserve_fds, std::to_string(count));
  } else {
    argv.insert(argv.begin() + static_cast<long>(line.command_index) + 1,
                {"--preserve-fds", std::to_string(count)});
  }
  return argv;
}

// The container's cgroup cpuset as decide() read it, not read again.
std::optional<CgroupCpuset> decided_cgroup_cpuset(const Decision& decision) {
  if (decision.container_cpuset_file.empty() || !decision.container_cpuset) return std::nullopt;
  return CgroupCpuset{*decision.container_cpuset, decision.container_cpuset_file};
}

// The runtime as far as the native path cares (native_support.hpp).
// Asked only for an exec that is pinned.
NativeSupport native_support_of(const ShimConfig& config, const ContainerState& state,
                                const RuntimeLog& log) {
  switch (config.node.native) {
    case ConfigSwitch::no: return {};
    case ConfigSwitch::yes: {
      // Declared, not probed: the state directory's layout tells crun's
      // exec from runc's (the forked crun is a crun too).
      NativeSupport declared;
      declared.flavour = state.crun ? NativeFlavour::crun : NativeFlavour::runc;
      declared.evidence = "\"native\": true";
      return declared;
    }
    case ConfigSwitch::automatic: break;
  }
  std::string note;
  NativeSupport found =
      detect_native_support(config.runtime(), DetectOptions{kNativeCachePath}, &note);
  if (!note.empty()) log.debug_line(note);
  log.debug_line("runtime " + quoted(config.runtime()) + ": " +
                 (found.native() ? std::string("native ") + to_string(found.flavour)
                                 : std::string("not native")) +
                 " (" + found.evidence + ")");
  return found;
}

// Before 6.2 (early_cpuset_join.hpp): the shim joins the container's
// cpuset cgroup itself, so that the runtime's join of the process it starts
// is a move to where it already is, which keeps the mask.
void join_cpuset_early(const ShimConfig& config, const Decision& decision, const RuntimeLog& log) {
  const bool early = config.node.early_cpuset_join == ConfigSwitch::yes ||
                     (config.node.early_cpuset_join == ConfigSwitch::automatic &&
                      kernel_resets_affinity_on_join());
  if (!early || !decision.initial) return;
  // The cpuset decide() read from the container's cgroup, if it did.
  const auto cpuset = decided_cgroup_cpuset(decision);
  if (!cpuset) return;
  // Stand on a CPU the cpuset keeps before joining it.  The attach resets
  // the mask to the cpuset and moves a task running outside it at once, to
  // a CPU cpumask_any_and_distribute() picks — an isolated one as likely as
  // not (seen in the proof harness on 6.1: the shim on CPU 2 or 3 for a few
  // ms).  Already on initial ∩ cpuset (= F for exclusive CPUs), the attach
  // leaves it where it is.
  const CpuSet inside = decision.initial->intersected_with(cpuset->cpus);
  if (!inside.empty()) {
    try {
      (void)apply_affinity(0, inside, "initial");
    } catch (const Error& e) {
      log.debug_line(std::string("could not stand on ") + inside.format() +
                     " before the early join: " + e.what());
    }
  }
  join_cgroup_of(cpuset->file);
  log.debug_line("joined the container's cpuset early (" + cpuset->file +
                 ") so the runtime's join cannot reset the mask (kernels before 6.2)");
}

// The exec's command line as the runtime reads it, or nullopt when the
// runtime refuses it (its usage error, exit 1 for runc and 64 for crun,
// before anything runs: measured on every release the tables list, see
// spec/runtime-options.md).  A line the newest table of the runtime's kind
// cannot read is read again by the table of the release `--version` names:
// if that table reads it, that reading counts; if it too refuses it, so
// does the runtime.  A release no table lists leaves the shim unable to
// tell which token is the container id: Error, and on_failure decides —
// never an exec run unpinned without a word.
std::optional<CommandLine> readable_exec_line(const CommandLine& line, const ShimConfig& config,
                                              const RuntimeLog& log) {
  if (!line.problem) return line;
  std::string why;
  const auto version = runtime_version_line(config.runtime(), kVersionProbeTimeout, &why);
  const RuntimeOptionTable* exact =
      version ? runtime_option_table_of_version_line(*version) : nullptr;
  if (exact == nullptr) {
    throw Error(EINVAL, "cannot read the command line as runtime " + quoted(config.runtime()) +
                            " reads it: " + *line.problem + " by the option table of " +
                            (line.table != nullptr ? std::string(line.table->kind) + " " +
                                                         std::string(line.table->release)
                                                   : std::string("runc and crun")) +
                            ", and its release (" +
                            (version ? quoted(*version) : why) + ") has no table of its own");
  }
  if (exact == line.table) {
    log.debug_line("the runtime refuses this command line (" + *line.problem +
                   "): handed over untouched");
    return std::nullopt;
  }
  CommandLine again = reread_command_line(line, *exact);
  if (again.problem) {
    log.debug_line(std::string(exact->kind) + " " + std::string(exact->release) +
                   " refuses this command line (" + *again.problem + "): handed over untouched");
    return std::nullopt;
  }
  return again;
}

// With debug on, the files this exec read and the documents it parsed,
// logged on the way out: each once (issue 18; tests/integration/test_preflight.py).
class ReadSummary {
 public:
  explicit ReadSummary(const RuntimeLog& log) : log_(log) {
    if (log_.debug) tally::enable();
  }
  ~ReadSummary() {
    if (!log_.debug) return;
    try {
      log_.debug_line(tally::summary());
    } catch (...) {
    }
  }
  ReadSummary(const ReadSummary&) = delete;
  ReadSummary& operator=(const ReadSummary&) = delete;

 private:
  const RuntimeLog& log_;
};

}  // namespace

std::vector<std::string> plan_exec(const CommandLine& as_given, const ShimConfig& config,
                                   const RuntimeLog& log) {
  const ReadSummary summary(log);
  const std::vector<std::string>& untouched = as_given.argv;
  const std::optional<CommandLine> readable = readable_exec_line(as_given, config, log);
  // No id: the runtime's usage error to report.
  if (!readable || readable->container_id.empty()) return untouched;
  const CommandLine& line = *readable;
  const auto root = state_root(line.root, config.runtime());
  if (!root) {
    throw Error(EINVAL, "cannot tell where runtime " + quoted(config.runtime()) +
                            " keeps its state: name it runc or crun, or pass --root");
  }
  const auto state = read_container_state(*root, line.container_id);
  if (!state) {
    log.debug_line("container " + quoted(line.container_id) + " not found under " + quoted(*root) +
                   ": the runtime reports it");
    return untouched;
  }

  // Each document is read and parsed once; the typed documents then serve
  // the decision, the program look-up, the pre-flight and the rewrite.
  DecideRequest request;
  const std::string config_text = read_file(state->config_path);
  if (line.process) {
    std::optional<std::string> text = read_file_if_openable(line.process->value);
    if (!text) return untouched;  // the runtime's error to report
    request.process =
        parse_process_document(*text, "process file " + quoted(line.process->value));
  }
  // What the decision reads of config.json, by a skim: an exec that is not
  // pinned, or goes native with a process file, needs nothing else of it.
  // The process object as written only for the CLI form, which may be
  // converted into a process file (cli_process.hpp).
  const std::string config_source = "config " + quoted(state->config_path);
  request.config = parse_config_decision_view(config_text, config_source, !line.process);
  request.container_pid = state->init_pid;
  request.handler_default = config.node.handler_default;
  request.housekeeping = config.node.housekeeping_cpus;

  const NodeFacts node;
  const Decision decision = decide(node, request);
  if (log.debug) {
    log.debug_line("decision for " + quoted(line.container_id) + ": " + decision_to_json(decision));
  }
  if (!decision.pinned) return untouched;

  std::vector<std::string> argv = untouched;
  const unsigned preserved = preserved_fd_count(line);
  const NativeSupport runtime = native_support_of(config, *state, log);
  // The rest of config.json, parsed whole once, where it is read: by the
  // CLI form's conversion, the program look-up and the pre-flight.
  const auto read_whole_config = [&] {
    if (!request.config->whole) {
      request.config = parse_config_document(config_text, config_source, !line.process);
    }
  };
  if (!line.process || !runtime.native()) read_whole_config();
  std::optional<std::vector<std::string>> native;
  if (runtime.native()) {
    native = plan_native_exec(NativeExec{line, *state, request, decision, runtime}, log);
  }
  if (native) {
    argv = std::move(*native);
    log.debug_line("native: " + config.runtime() + " applies the field itself");
    // runc init runs between runc's join and its final (crun's grandchild
    // is blocked there): on a kernel that resets the mask at the join, the
    // attach would move it off initial to any CPU of the cpuset, an
    // isolated one too (seen in the proof's shim-runc136-field-unpinned
    // cell on 6.1: runc init on CPU 2 or 3 in 6 of 20 execs).  Only for
    // execaff's own decision: a field handed on is placed as bare runc
    // places it (an initial-only field ends on the whole cpuset there).
    const bool opted_in = decision.source == DecisionSource::annotation ||
                          decision.source == DecisionSource::handler_default;
    if (runtime.flavour == NativeFlavour::runc && opted_in) {
      join_cpuset_early(config, decision, log);
    }
  } else if (decision.final) {
    read_whole_config();
    // Emulated: the trampoline sets final after the join, then execs the
    // program.  Only when the program exists: otherwise the runtime must be
    // the one to say so (exit 255, its own message), as without the shim.
    // The exec's own command line is always known here: a CLI form with
    // no program (program "") is the runtime's usage error to report.
    const ExecArgv exec_argv{
        .program = line.program_index != 0 ? line.argv[line.program_index] : std::string(),
        .env = line.env,
        .cwd = line.cwd};
    const ExecProgram exec = resolve_exec_program(
        request, exec_argv, state->crun ? RuntimeRules::crun : RuntimeRules::runc);
    const std::string& program = exec.program;
    if (program.empty() || !program_may_exist(state->init_pid, exec)) {
      log.debug_line("program " + quoted(program) +
                     " is definitely not in the container: the runtime reports it");
      // A program that a process in the container creates after the
      // look-up would run as the bare runtime runs it: let it start on
      // initial at least (on 6.2+ kernels the join keeps initial ∩ cpuset,
      // which is F for exclusive CPUs).  Nothing the runtime prints changes.
      if (decision.initial) (void)apply_affinity(0, *decision.initial, "initial");
      return untouched;
    }
    require_trampoline_preflight(*request.config, state->init_pid, log);
    const int trampoline =
        place_trampoline(3 + static_cast<int>(preserved + listen_fd_count(*state)));
    // "Nr": the trampoline spells $PATH candidates as runc does (Go's
    // lexical filepath.Join); crun looks them up as they are.
    const std::vector<std::string> prefix = {fd_path(trampoline),
                                             std::to_string(trampoline) + (state->crun ? "" : "r"),
                                             decision.final->format()};
    argv = with_preserve_fds(line, argv, preserved + 1);
    if (line.process) {
      // The field is dropped: the runtime ignores it, and one that does not
      // (configured "native": false by mistake) must not apply it twice.
      const std::string json = rewritten_process(*request.process, std::nullopt, prefix);
      const int fd = memfd_with("execaff-process", json.data(), json.size(), trampoline + 1,
                                Placement::at_least);
      // with_preserve_fds may have inserted two tokens before --process.
      const long shift = line.preserve_fds ? 0 : 2;
      argv[line.process->index + static_cast<std::size_t>(shift)] =
          replaced_token(*line.process, fd_path(fd));
    } else {
      const long shift = line.preserve_fds ? 0 : 2;
      argv.insert(argv.begin() + static_cast<long>(line.program_index) + shift, prefix.begin(),
                  prefix.end());
    }
    log.debug_line("emulated: trampoline at fd " + std::to_string(trampoline) + " sets final " +
                   decision.final->format());
    join_cpuset_early(config, decision, log);
  }
  if (!native && !decision.final && line.process && decision.repaired) {
    // No trampoline (final is left to the join), but the field as written
    // is one the kernel refuses: a runtime that applies the field itself
    // (runc >= 1.3, crun >= 1.19) would fail the exec, crun 1.21 even
    // corrupts its heap on CPUs that are not there.  Hand it the decision.
    const std::string json =
        rewritten_process(*request.process, ExecCpuAffinity{decision.initial, decision.final});
    const int fd = memfd_with("execaff-process", json.data(), json.size(),
                              3 + static_cast<int>(preserved), Placement::at_least);
    argv[line.process->index] = replaced_token(*line.process, fd_path(fd));
    log.debug_line("the repaired field replaces the process file's: initial " +
                   decision.initial->format());
  }
  if (decision.initial) {
    // Inherited across execve and fork by the runtime and every helper it
    // starts (sched_setaffinity(2)); the shim is single-threaded here.
    const CpuSet given = apply_affinity(0, *decision.initial, "initial");
    log.debug_line("initial " + decision.initial->format() + " applied to the shim, kernel gave " +
                   given.format());
  }
  return argv;
}

}  // namespace execaff::shim
