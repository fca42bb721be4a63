// SPDX-License-Identifier: LGPL-2.1-or-later
#include "explain.hpp"

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "command_options.hpp"
#include "container_program.hpp"
#include "cpu_set.hpp"
#include "decide.hpp"
#include "error.hpp"
#include "exec_program.hpp"
#include "file_reader.hpp"
#include "json_writer.hpp"
#include "node_facts.hpp"
#include "preflight.hpp"
#include "process_privileges.hpp"
#include "spec_json.hpp"

namespace execaff::cli {
namespace {

constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;

int usage_error(const std::string& message, const char* usage) {
  std::cerr << "execaff: " << message << "\n" << usage;
  return kExitUsage;
}

execaff::CpuSet parse_list_option(const char* option, const char* value) {
  try {
    return execaff::CpuSet::parse(value);
  } catch (const execaff::Error& e) {
    throw e.wrap(std::string("--") + option);
  }
}

// The emulated path's pre-flight for this exec.  The program is looked up
// only with --container-pid (through /proc/<pid>/root, as the shim does),
// resolved as the shim resolves it (exec_program.hpp).
void write_preflight(json::Writer& out, const DecideRequest& request, const ExecArgv& argv,
                     RuntimeRules rules, const std::string& root) {
  preflight::PreflightInput in;
  in.config = &*request.config;
  in.init_pid = request.container_pid;
  in.root = root;
  // The exec's process: its own file, else config.json's (the CLI form).
  const ProcessObject& process = request.process ? *request.process : request.config->process;
  if (request.container_pid) {
    const ExecProgram exec = resolve_exec_program(request, argv, rules);
    in.program = exec.program;
    in.program_found = !exec.program.empty() && program_may_exist(*request.container_pid, exec);
  }
  preflight::PreflightReport report = preflight::run_preflight(in);
  report.checks.insert(report.checks.begin() + 1,
                       preflight::check_process_privileges(process.capabilities));
  report.write_json(out);
}

}  // namespace

int run_explain_command(int argc, char** argv, const char* usage) {
  enum : int {
    kBundle = 1000,
    kProcess,
    kRoot,
    kCaller,
    kPid,
    kCpuset,
    kHousekeeping,
    kDefault,
    kRuntime,
    kEnv,
    kCwd,
  };
  const std::vector<option> options = with_shared_options({
      {"bundle", required_argument, nullptr, kBundle},
      {"process", required_argument, nullptr, kProcess},
      {"root", required_argument, nullptr, kRoot},
      {"caller-cpus", required_argument, nullptr, kCaller},
      {"container-pid", required_argument, nullptr, kPid},
      {"container-cpuset", required_argument, nullptr, kCpuset},
      {"housekeeping", required_argument, nullptr, kHousekeeping},
      {"handler-default", required_argument, nullptr, kDefault},
      {"runtime", required_argument, nullptr, kRuntime},
      {"env", required_argument, nullptr, kEnv},
      {"cwd", required_argument, nullptr, kCwd},
  });
  std::optional<std::string> bundle;
  std::optional<std::string> process_file;
  std::optional<RuntimeRules> rules;
  NodeOptions node;
  ExecArgv exec_argv;
  execaff::DecideRequest request;
  try {
    optind = 2;
    opterr = 0;
    // "+": the first non-option is the exec's program, as in `runc exec`.
    for (int c; (c = getopt_long(argc, argv, "+", options.data(), nullptr)) != -1;) {
      if (take_shared_option(c, optarg, node)) continue;
      switch (c) {
        case kBundle: bundle = optarg; break;
        case kProcess: process_file = optarg; break;
        case kRoot: node.root_fs = optarg; break;  // the older spelling of --root-fs
        case kCaller: request.caller_cpus = parse_list_option("caller-cpus", optarg); break;
        case kCpuset:
          request.container_cpuset = parse_list_option("container-cpuset", optarg);
          break;
        case kHousekeeping: request.housekeeping = parse_list_option("housekeeping", optarg); break;
        case kDefault: request.handler_default = optarg; break;
        case kRuntime:
          rules = parse_runtime_rules(optarg);
          if (!rules) {
            return usage_error("--runtime " + execaff::quoted(optarg) + " is not runc or crun",
                               usage);
          }
          break;
        case kEnv: exec_argv.env.emplace_back(optarg); break;
        case kCwd: exec_argv.cwd = optarg; break;
        case kPid: {
          char* end = nullptr;
          errno = 0;
          const long pid = std::strtol(optarg, &end, 10);
          if (errno != 0 || end == optarg || *end != '\0' || pid <= 0 || pid > 4194304) {
            return usage_error(
                "--container-pid " + execaff::quoted(optarg) + " is not a process id", usage);
          }
          request.container_pid = static_cast<pid_t>(pid);
          break;
        }
        default:
          return usage_error(
              "explain: unknown or incomplete option " + execaff::quoted(argv[optind - 1]), usage);
      }
    }
    if (node.help) {
      std::cout << usage;
      return 0;
    }
    if (optind < argc) exec_argv.program = argv[optind];
    if (!bundle) return usage_error("explain needs --bundle DIR", usage);
    if (const auto problem = root_fs_problem(node)) return usage_error(*problem, usage);

    // As the shim on this node would decide: its config's handler default,
    // housekeeping CPUs and runtime, unless an option says otherwise.
    const NodeConfig config = read_node_config(node);
    if (!request.handler_default) request.handler_default = config.handler_default;
    if (!request.housekeeping) request.housekeeping = config.housekeeping_cpus;
    if (!rules) rules = config.runtime ? runtime_rules_of(*config.runtime) : RuntimeRules::runc;

    const std::string config_path = *bundle + "/config.json";
    const std::string config_text = execaff::read_file(config_path);
    if (process_file) {
      request.process = execaff::parse_process_document(
          execaff::read_file(*process_file), "process file " + execaff::quoted(*process_file));
    }
    request.config =
        execaff::parse_config_document(config_text, "config " + execaff::quoted(config_path));
    const execaff::NodeFacts facts(node.root_fs);
    const execaff::Decision decision = execaff::decide(facts, request);
    // One object: the decision's members, then "preflight" (null when the
    // exec is not pinned, so there is no trampoline to check).
    json::Writer out;
    out.open_object();
    execaff::write_decision_members(out, decision);
    out.key("preflight");
    if (decision.pinned && decision.final) {
      write_preflight(out, request, exec_argv, *rules, node.root_fs);
    } else {
      out.null();
    }
    out.close_object();
    std::cout << out.text() << "\n";
    return 0;
  } catch (const execaff::Error& e) {
    std::cerr << "execaff explain: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace execaff::cli
