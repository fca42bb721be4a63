// SPDX-License-Identifier: LGPL-2.1-or-later
// What the pre-flight costs the shim on an opted-in emulated exec: no
// seccomp profile, and a RuntimeDefault-sized one (default errno, one allow
// rule naming every system call libseccomp knows on this architecture but
// 40 that container profiles deny, one conditional rule) — built from
// libseccomp's own table, so no runtime's profile is copied here.
#include <benchmark/benchmark.h>
#include <seccomp.h>

#include <string>

#include "preflight.hpp"
#include "spec_json.hpp"

namespace {

const char* const kDenied[] = {"acct",
                               "add_key",
                               "bpf",
                               "clock_adjtime",
                               "clock_settime",
                               "create_module",
                               "delete_module",
                               "finit_module",
                               "get_kernel_syms",
                               "get_mempolicy",
                               "init_module",
                               "ioperm",
                               "iopl",
                               "kcmp",
                               "kexec_file_load",
                               "kexec_load",
                               "keyctl",
                               "lookup_dcookie",
                               "mbind",
                               "mount",
                               "move_pages",
                               "name_to_handle_at",
                               "nfsservctl",
                               "open_by_handle_at",
                               "perf_event_open",
                               "personality",
                               "pivot_root",
                               "process_vm_readv",
                               "process_vm_writev",
                               "ptrace",
                               "query_module",
                               "quotactl",
                               "reboot",
                               "request_key",
                               "set_mempolicy",
                               "setns",
                               "settimeofday",
                               "swapoff",
                               "swapon",
                               "umount2"};

std::string default_sized_config() {
  std::string names;
  for (int nr = 0; nr < 1024; ++nr) {
    char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (name == nullptr) continue;
    bool denied = false;
    for (const char* d : kDenied) denied = denied || std::string(d) == name;
    if (!denied) names += std::string(names.empty() ? "" : ",") + "\"" + name + "\"";
    free(name);
  }
  return R"({"process": {"args": ["sh"]}, "mounts": [{"destination": "/proc", "type": "proc"}],
    "linux": {"seccomp": {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 1,
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"], "syscalls": [
    {"names": [)" +
         names + R"(], "action": "SCMP_ACT_ALLOW"},
    {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
     "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}]}]}}})";
}

void run(benchmark::State& state, const std::string& text) {
  const execaff::ConfigDocument config = execaff::parse_config_document(text, "config");
  execaff::preflight::PreflightInput in;
  in.config = &config;
  for (auto _ : state) {
    auto report = execaff::preflight::run_preflight(in);
    if (report.blocked()) state.SkipWithError(report.reason().c_str());
    benchmark::DoNotOptimize(report);
  }
}

void BM_PreflightNoSeccompProfile(benchmark::State& state) {
  run(state,
      R"({"process": {"args": ["sh"]}, "mounts": [{"destination": "/proc", "type": "proc"}]})");
}
BENCHMARK(BM_PreflightNoSeccompProfile)->Unit(benchmark::kMicrosecond);

void BM_PreflightOneRuleProfile(benchmark::State& state) {
  run(state, R"({"process": {"args": ["sh"]}, "mounts": [{"destination": "/proc", "type": "proc"}],
    "linux": {"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
    {"names": ["reboot"], "action": "SCMP_ACT_ERRNO"}]}}})");
}
BENCHMARK(BM_PreflightOneRuleProfile)->Unit(benchmark::kMicrosecond);

void BM_PreflightDefaultSizedProfile(benchmark::State& state) {
  run(state, default_sized_config());
}
BENCHMARK(BM_PreflightDefaultSizedProfile)->Unit(benchmark::kMicrosecond);

// Reading such a config.json at all: what every exec through the shim pays
// for the pre-flight's view, opted in or not (the profile is read with the
// rest, in the one parse).
void BM_ParseDefaultSizedConfig(benchmark::State& state) {
  const std::string config = default_sized_config();
  for (auto _ : state) {
    benchmark::DoNotOptimize(execaff::parse_config_document(config, "config"));
  }
}
BENCHMARK(BM_ParseDefaultSizedConfig)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
