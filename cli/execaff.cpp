// SPDX-License-Identifier: LGPL-2.1-or-later
// `execaff`: the operator's front door to libexecaff.
//   execaff cpus LIST        canonical form of a CPU list, or the parser's error
//   execaff explain ...      what execaff would do to an exec, as JSON
//   execaff audit ...        what on the node is off its CPUs (audit.cpp)
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#include "audit.hpp"
#include "cpu_set.hpp"
#include "error.hpp"
#include "explain.hpp"

namespace {

constexpr int kExitBadInput = 1;
constexpr int kExitUsage = 2;

constexpr const char* kUsage =
    "usage: execaff cpus LIST\n"
    "       execaff explain --bundle DIR [--process FILE] [--root-fs DIR] [--config FILE]\n"
    "                       [--caller-cpus LIST] [--container-pid PID]\n"
    "                       [--container-cpuset LIST] [--housekeeping LIST]\n"
    "                       [--handler-default first|first-core|LIST|disable]\n"
    "                       [--runtime runc|crun] [--env NAME=VALUE]... [--cwd DIR]\n"
    "                       [PROGRAM [ARGS...]]\n"
    "       execaff audit [--root DIR]... [--root-fs DIR] [--config FILE] [--json]\n"
    "                     [--prometheus FILE]   (read-only; execaff audit --help)\n"
    "       execaff --version\n"
    "\n"
    "explain prints the decision for one exec into the container of bundle DIR as\n"
    "JSON: {\"pinned\", \"initial\", \"final\", \"source\", \"reason\", ..., \"preflight\"},\n"
    "the last saying, for a pinned exec, whether the emulated path can work there\n"
    "(seccomp, capabilities, /proc, memfd, the program).  It decides as the shim\n"
    "would with the node config (--config, default /etc/execaff/shim.json under\n"
    "--root-fs): its handler default, housekeeping CPUs and runtime, unless the\n"
    "options say otherwise.  PROGRAM, --env and --cwd are the exec's command line\n"
    "(runc exec ... ID PROGRAM); without PROGRAM, config.json's process.args.\n"
    "Node facts are read under --root-fs (default /); the caller's CPUs default to\n"
    "this process's affinity.  audit reports what on the node is off its CPUs\n"
    "(man execaff).\n";

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

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) return usage_error("missing command");
    const std::string_view command = argv[1];
    if (command == "cpus") return run_cpus(argc, argv);
    if (command == "explain") return execaff::cli::run_explain_command(argc, argv, kUsage);
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
