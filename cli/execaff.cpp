// SPDX-License-Identifier: LGPL-2.1-or-later
// `execaff`: the operator's front door to libexecaff.
//   execaff cpus LIST        canonical form of a CPU list, or the parser's error
//   execaff explain ...      what execaff would do to an exec, as JSON
//   execaff audit ...        what on the node is off its CPUs (audit.cpp)
#include <getopt.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "audit.hpp"
#include "cpu_set.hpp"
#include "decide.hpp"
#include "error.hpp"
#include "node_facts.hpp"
#include "spec_json.hpp"

namespace {

constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage =
    "usage: execaff cpus LIST\n"
    "       execaff explain --bundle DIR [--process FILE] [--root DIR]\n"
    "                       [--caller-cpus LIST] [--container-pid PID]\n"
    "                       [--container-cpuset LIST] [--housekeeping LIST]\n"
    "                       [--handler-default first|first-core|LIST|disable]\n"
    "       execaff audit [--root DIR]... [--root-fs DIR] [--config FILE] [--json]\n"
    "                     [--prometheus FILE]   (read-only; execaff audit --help)\n"
    "       execaff --version\n"
    "\n"
    "explain prints the decision for one exec into the container of bundle DIR as\n"
    "JSON: {\"pinned\", \"initial\", \"final\", \"source\", \"reason\", ...}.  Node facts\n"
    "are read under --root (default /); the caller's CPUs default to this\n"
    "process's affinity.\n";

int usage_error(const std::string& message) {
  std::cerr << "execaff: " << message << "\n" << kUsage;
  return kExitUsage;
}

int run_cpus(int argc, char** argv) {
  if (argc != 3) return usage_error("cpus takes exactly one LIST");
  try {
    const execaff::CpuSet set = execaff::CpuSet::parse(argv[2]);
    std::cout << set.format() << "\n";
    return 0;
  } catch (const execaff::Error& e) {
    std::cerr << "execaff cpus: " << e.what() << "\n";
    return kExitBadInput;
  }
}

execaff::CpuSet parse_list_option(const char* option, const char* value) {
  try {
    return execaff::CpuSet::parse(value);
  } catch (const execaff::Error& e) {
    throw e.wrap(std::string("--") + option);
  }
}

int run_explain(int argc, char** argv) {
  enum : int { kBundle = 1000, kProcess, kRoot, kCaller, kPid, kCpuset, kHousekeeping, kDefault };
  static const option options[] = {
      {"bundle", required_argument, nullptr, kBundle},
      {"process", required_argument, nullptr, kProcess},
      {"root", required_argument, nullptr, kRoot},
      {"caller-cpus", required_argument, nullptr, kCaller},
      {"container-pid", required_argument, nullptr, kPid},
      {"container-cpuset", required_argument, nullptr, kCpuset},
      {"housekeeping", required_argument, nullptr, kHousekeeping},
      {"handler-default", required_argument, nullptr, kDefault},
      {nullptr, 0, nullptr, 0},
  };
  std::optional<std::string> bundle;
  std::optional<std::string> process_file;
  std::string root = "/";
  execaff::DecideRequest request;
  try {
    optind = 2;
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, "", options, nullptr)) != -1;) {
      switch (c) {
        case kBundle: bundle = optarg; break;
        case kProcess: process_file = optarg; break;
        case kRoot: root = optarg; break;
        case kCaller: request.caller_cpus = parse_list_option("caller-cpus", optarg); break;
        case kCpuset:
          request.container_cpuset = parse_list_option("container-cpuset", optarg);
          break;
        case kHousekeeping: request.housekeeping = parse_list_option("housekeeping", optarg); break;
        case kDefault: request.handler_default = optarg; break;
        case kPid: {
          char* end = nullptr;
          errno = 0;
          const long pid = std::strtol(optarg, &end, 10);
          if (errno != 0 || end == optarg || *end != '\0' || pid <= 0 || pid > 4194304) {
            return usage_error("--container-pid " + execaff::quoted(optarg) +
                               " is not a process id");
          }
          request.container_pid = static_cast<pid_t>(pid);
          break;
        }
        default:
          return usage_error("explain: unknown or incomplete option " +
                             execaff::quoted(argv[optind - 1]));
      }
    }
    if (optind != argc) {
      return usage_error("explain: unexpected argument " + execaff::quoted(argv[optind]));
    }
    if (!bundle) return usage_error("explain needs --bundle DIR");

    const std::string config_path = *bundle + "/config.json";
    request.config_json = execaff::read_document_file(config_path);
    request.config_source = "config " + execaff::quoted(config_path);
    if (process_file) {
      request.process_json = execaff::read_document_file(*process_file);
      request.process_source = "process file " + execaff::quoted(*process_file);
    }
    const execaff::NodeFacts node(root);
    std::cout << execaff::decision_to_json(execaff::decide(node, request)) << "\n";
    return 0;
  } catch (const execaff::Error& e) {
    std::cerr << "execaff explain: " << e.what() << "\n";
    return kExitBadInput;
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) return usage_error("missing command");
    const std::string_view command = argv[1];
    if (command == "cpus") return run_cpus(argc, argv);
    if (command == "explain") return run_explain(argc, argv);
    if (command == "audit") return execaff::cli::run_audit_command(argc, argv);
    if (command == "--version") {
      std::cout << "execaff " << EXECAFF_VERSION << "\n";
      return 0;
    }
    if (command == "--help" || command == "-h") {
      std::cout << kUsage;
      return 0;
    }
    return usage_error("unknown command " + execaff::quoted(command));
  } catch (const std::exception& e) {
    std::cerr << "execaff: " << e.what() << "\n";
    return kExitBadInput;
  }
}
