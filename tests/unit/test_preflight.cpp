// SPDX-License-Identifier: LGPL-2.1-or-later
// The pre-flight's seccomp evaluation (an OCI profile built with libseccomp,
// its BPF run by seccomp_bpf.cpp), checked against verdicts known by hand
// and, for a few profiles, against the kernel itself (the same program
// loaded in a forked child); its capability report (libcap) and its
// /proc and memfd checks.
#include <gtest/gtest.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>

#include "error.hpp"
#include "preflight.hpp"
#include "process_privileges.hpp"
#include "seccomp_bpf.hpp"
#include "seccomp_profile.hpp"
#include "spec_json.hpp"

namespace {

using namespace execaff::preflight;

const std::vector<SyscallProbe> kCalls = {
    {"sched_setaffinity", {0, 8192, 0, 0, 0, 0}, {2}},
    {"execve", {0, 0, 0, 0, 0, 0}, {0, 1, 2}},
};

// `program` run on each probe at the probe's own argument values.
std::vector<std::uint32_t> program_returns(const SeccompProgram& program) {
  std::vector<std::uint32_t> out;
  for (const SyscallProbe& probe : kCalls) {
    seccomp_data data{};
    data.nr = seccomp_syscall_resolve_name_arch(program.architecture, probe.name.c_str());
    data.arch = program.architecture;
    for (unsigned i = 0; i < 6; ++i) data.args[i] = probe.args[i];
    out.push_back(run_seccomp_bpf(program.instructions, data));
  }
  return out;
}

// The program of every rule: what evaluate_seccomp_profile's program,
// reduced to the probed calls, must agree with.
std::vector<std::uint32_t> full_program_returns(const execaff::SeccompProfile& profile,
                                                const std::optional<std::string>& arch) {
  return program_returns(build_seccomp_program(profile, "test", arch));
}

std::vector<std::uint32_t> reduced_program_returns(const execaff::SeccompProfile& profile,
                                                   const std::optional<std::string>& arch) {
  std::vector<std::string> names;
  for (const SyscallProbe& probe : kCalls) names.push_back(probe.name);
  return program_returns(build_seccomp_program(profile, "test", arch, &names));
}

SeccompEvaluation evaluate(const std::string& profile_json,
                           const std::optional<std::string>& arch = std::nullopt) {
  const execaff::SeccompProfile profile = execaff::parse_seccomp_profile(profile_json, "test");
  // Every profile of these tests: the reduced program answers as the full one.
  if (!profile.problem) {
    EXPECT_EQ(reduced_program_returns(profile, arch), full_program_returns(profile, arch))
        << profile_json;
  }
  return evaluate_seccomp_profile(profile, "test", kCalls, arch);
}

std::string verdicts(const SeccompEvaluation& e) {
  std::string out;
  for (const auto& o : e.outcomes) {
    out += (out.empty() ? "" : " ") + o.name + "=" + to_string(o.verdict);
    if (o.verdict == SeccompVerdict::errno_return) out += "(" + std::to_string(o.errno_value) + ")";
    if (o.depends_on_args) out += "?";
  }
  return out;
}

constexpr const char* kAllowBoth =
    R"({"names": ["execve", "sched_setaffinity"], "action": "SCMP_ACT_ALLOW"})";

TEST(SeccompProfile, AllowByDefault) {
  EXPECT_EQ(verdicts(evaluate(R"({"defaultAction": "SCMP_ACT_ALLOW"})")),
            "sched_setaffinity=allow execve=allow");
}

TEST(SeccompProfile, ErrnoRuleWithItsErrnoRet) {
  EXPECT_EQ(verdicts(evaluate(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
      {"names": ["sched_setaffinity"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]})")),
            "sched_setaffinity=errno(13) execve=allow");
  // No errnoRet: EPERM, as runc and crun do.
  EXPECT_EQ(verdicts(evaluate(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
      {"names": ["sched_setaffinity"], "action": "SCMP_ACT_ERRNO"}]})")),
            "sched_setaffinity=errno(1) execve=allow");
}

TEST(SeccompProfile, KillTrapTraceLogNotify) {
  const auto with = [](const char* action) {
    return verdicts(evaluate(std::string(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
        {"names": ["sched_setaffinity"], "action": ")") +
                             action + "\"}]}"));
  };
  EXPECT_EQ(with("SCMP_ACT_KILL"), "sched_setaffinity=kill-thread execve=allow");
  EXPECT_EQ(with("SCMP_ACT_KILL_THREAD"), "sched_setaffinity=kill-thread execve=allow");
  EXPECT_EQ(with("SCMP_ACT_KILL_PROCESS"), "sched_setaffinity=kill-process execve=allow");
  EXPECT_EQ(with("SCMP_ACT_TRAP"), "sched_setaffinity=trap execve=allow");
  EXPECT_EQ(with("SCMP_ACT_TRACE"), "sched_setaffinity=trace execve=allow");
  EXPECT_EQ(with("SCMP_ACT_LOG"), "sched_setaffinity=log execve=allow");
  EXPECT_EQ(with("SCMP_ACT_NOTIFY"), "sched_setaffinity=notify execve=allow");
}

TEST(SeccompProfile, DefaultDenyWithAnAllowList) {
  EXPECT_EQ(verdicts(evaluate(std::string(R"({"defaultAction": "SCMP_ACT_ERRNO",
      "defaultErrnoRet": 38, "syscalls": [)") +
                              kAllowBoth + "]}")),
            "sched_setaffinity=allow execve=allow");
  EXPECT_EQ(verdicts(evaluate(R"({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
      "syscalls": [{"names": ["execve", "read", "write"], "action": "SCMP_ACT_ALLOW"}]})")),
            "sched_setaffinity=errno(38) execve=allow");
  EXPECT_EQ(verdicts(evaluate(R"({"defaultAction": "SCMP_ACT_KILL_PROCESS",
      "syscalls": [{"names": ["execve"], "action": "SCMP_ACT_ALLOW"}]})")),
            "sched_setaffinity=kill-process execve=allow");
}

TEST(SeccompProfile, ConditionalArguments) {
  const auto with_args = [](const char* args) {
    return verdicts(evaluate(std::string(R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
        {"names": ["execve"], "action": "SCMP_ACT_ALLOW"},
        {"names": ["sched_setaffinity"], "action": "SCMP_ACT_ALLOW", "args": [)") +
                             args + "]}]}"));
  };
  // pid 0 (itself): allowed; only pid 1: not the trampoline's call.
  EXPECT_EQ(with_args(R"({"index": 0, "value": 0, "op": "SCMP_CMP_EQ"})"),
            "sched_setaffinity=allow execve=allow");
  EXPECT_EQ(with_args(R"({"index": 0, "value": 1, "op": "SCMP_CMP_EQ"})"),
            "sched_setaffinity=errno(1) execve=allow");
  // Both must hold: pid 0 and a mask of at least 8192 bytes.
  EXPECT_EQ(with_args(R"({"index": 0, "value": 0, "op": "SCMP_CMP_EQ"},
                         {"index": 1, "value": 8192, "op": "SCMP_CMP_GE"})"),
            "sched_setaffinity=allow execve=allow");
  EXPECT_EQ(with_args(R"({"index": 0, "value": 0, "op": "SCMP_CMP_EQ"},
                         {"index": 1, "value": 128, "op": "SCMP_CMP_LE"})"),
            "sched_setaffinity=errno(1) execve=allow");
  // The same argument twice: either matches (one rule each).
  EXPECT_EQ(with_args(R"({"index": 0, "value": 7, "op": "SCMP_CMP_EQ"},
                         {"index": 0, "value": 0, "op": "SCMP_CMP_EQ"})"),
            "sched_setaffinity=allow execve=allow");
  EXPECT_EQ(with_args(R"({"index": 1, "value": 4294967295, "valueTwo": 8192,
                          "op": "SCMP_CMP_MASKED_EQ"})"),
            "sched_setaffinity=allow execve=allow");
  // A condition on the mask's address: true for some pointers only.
  EXPECT_EQ(with_args(R"({"index": 2, "value": 0, "op": "SCMP_CMP_NE"})"),
            "sched_setaffinity=errno(1)? execve=allow");
}

TEST(SeccompProfile, UnknownNamesAreSkippedAsTheRuntimesSkipThem) {
  const auto e = evaluate(R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [
      {"names": ["no_such_syscall_1", "execve", "sched_setaffinity"], "action": "SCMP_ACT_ALLOW"},
      {"names": ["no_such_syscall_2"], "action": "SCMP_ACT_KILL"}]})");
  EXPECT_EQ(verdicts(e), "sched_setaffinity=allow execve=allow");
  EXPECT_EQ(e.unknown_names, (std::vector<std::string>{"no_such_syscall_1", "no_such_syscall_2"}));
}

TEST(SeccompProfile, OtherArchitectures) {
  const std::string profile = std::string(R"({"defaultAction": "SCMP_ACT_ERRNO",
      "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_AARCH64"], "syscalls": [
      {"names": ["execve"], "action": "SCMP_ACT_ALLOW"}]})");
  // Each arch with its own numbers: sched_setaffinity is 203, 241, 122.
  for (const char* arch : {"x86_64", "x86", "aarch64"}) {
    EXPECT_EQ(verdicts(evaluate(profile, arch)), "sched_setaffinity=errno(1) execve=allow") << arch;
  }
  // An architecture the profile does not list meets the bad-arch action.
  EXPECT_EQ(verdicts(evaluate(R"({"defaultAction": "SCMP_ACT_ALLOW"})", "SCMP_ARCH_AARCH64")),
            "sched_setaffinity=kill-thread execve=kill-thread");
  EXPECT_THROW((void)evaluate(R"({"defaultAction": "SCMP_ACT_ALLOW",
      "architectures": ["SCMP_ARCH_VAX"]})"),
               execaff::Error);
}

TEST(SeccompProfile, WhatTheRuntimesRefuseIsRefused) {
  for (const char* bad : {
           R"({"defaultAction": "SCMP_ACT_FROB"})",
           R"({"defaultAction": "SCMP_ACT_ALLOW", "flags": ["SECCOMP_FILTER_FLAG_FROB"]})",
           R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"],
               "action": "SCMP_ACT_ERRNO", "args": [{"index": 6, "value": 0, "op": "SCMP_CMP_EQ"}]}]})",
           R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"],
               "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_IS"}]}]})",
           R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": [3],
               "action": "SCMP_ACT_ERRNO"}]})",
       }) {
    EXPECT_THROW((void)evaluate(bad), execaff::Error) << bad;
  }
  // Flags that do not change a verdict are accepted.
  EXPECT_EQ(verdicts(evaluate(R"({"defaultAction": "SCMP_ACT_ALLOW",
      "flags": ["SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG"]})")),
            "sched_setaffinity=allow execve=allow");
}

// What the kernel does with the same program in a child: the errno of
// sched_setaffinity(0, ...) on its own mask, or the signal that killed it.
std::string kernel_verdict(const std::string& profile_json) {
  SeccompProgram program =
      build_seccomp_program(execaff::parse_seccomp_profile(profile_json, "test"), "test");
  const pid_t child = ::fork();
  if (child == 0) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    (void)::sched_getaffinity(0, sizeof mask, &mask);
    sock_fprog prog{static_cast<unsigned short>(program.instructions.size()),
                    program.instructions.data()};
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
      ::_exit(200);
    }
    const int rc = ::sched_setaffinity(0, sizeof mask, &mask);
    ::_exit(rc == 0 ? 0 : errno);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return "exit " + std::to_string(WEXITSTATUS(status));
}

TEST(SeccompProfile, TheInterpreterAgreesWithTheKernel) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"defaultAction": "SCMP_ACT_ALLOW"})", "exit 0"},
      {R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["sched_setaffinity"],
          "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]})",
       "exit 13"},
      {R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["sched_setaffinity"],
          "action": "SCMP_ACT_KILL_PROCESS"}]})",
       "signal 31"},
      {R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["sched_setaffinity"],
          "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_EQ"}]}]})",
       "exit 1"},
      {R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["sched_setaffinity"],
          "action": "SCMP_ACT_ERRNO", "args": [{"index": 0, "value": 0, "op": "SCMP_CMP_NE"}]}]})",
       "exit 0"},
  };
  for (const auto& [profile, want] : cases) {
    EXPECT_EQ(kernel_verdict(profile), want) << profile;
    // And the interpreter, for the very call the child made (pid 0, a
    // cpu_set_t of 128 bytes).
    const auto e = evaluate_seccomp_profile(execaff::parse_seccomp_profile(profile, "test"), "test",
                                            {{"sched_setaffinity", {0, 128, 0, 0, 0, 0}, {2}}});
    const auto& o = e.outcomes.at(0);
    const std::string got = o.runs() ? "exit 0"
                            : o.verdict == SeccompVerdict::errno_return
                                ? "exit " + std::to_string(o.errno_value)
                                : "signal 31";
    EXPECT_EQ(got, want) << profile;
  }
}

TEST(SeccompBpf, RefusesWhatTheKernelRefuses) {
  const seccomp_data data{};
  EXPECT_THROW((void)run_seccomp_bpf({}, data), execaff::Error);
  // A load past struct seccomp_data.
  EXPECT_THROW((void)run_seccomp_bpf({BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 64),
                                      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)},
                                     data),
               execaff::Error);
  // A jump out of the program.
  EXPECT_THROW((void)run_seccomp_bpf({BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 5, 5),
                                      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)},
                                     data),
               execaff::Error);
  // No return at the end.
  EXPECT_THROW((void)run_seccomp_bpf({BPF_STMT(BPF_LD | BPF_IMM, 1)}, data), execaff::Error);
  EXPECT_EQ(run_seccomp_bpf({BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0),
                             BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
                             BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 5),
                             BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)},
                            data),
            SECCOMP_RET_ERRNO | 5u);
}

std::string with_config(const std::string& linux_json, const std::string& process_extra = "") {
  return R"({"process": {"args": ["sh"], "noNewPrivileges": true, "capabilities": {
      "bounding": ["CAP_CHOWN", "CAP_KILL"], "effective": ["CAP_CHOWN", "CAP_KILL"],
      "permitted": ["CAP_CHOWN", "CAP_KILL"]})" +
         process_extra +
         R"(}, "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"}],
      "linux": )" +
         linux_json + "}";
}

const PreflightCheck& named(const PreflightReport& r, const std::string& name) {
  for (const auto& c : r.checks) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no check " + name);
}

TEST(Preflight, ProfileForbiddingSchedSetaffinityBlocksAndNamesTheFix) {
  const auto config = execaff::parse_config_document(
      with_config(R"({"seccomp": {"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
      {"names": ["sched_setaffinity"], "action": "SCMP_ACT_ERRNO"}]}})"),
      "config");
  PreflightInput in;
  in.config = &config;
  const PreflightReport r = run_preflight(in);
  EXPECT_TRUE(r.blocked());
  EXPECT_NE(r.reason().find("sched_setaffinity: fails with errno 1"), std::string::npos)
      << r.reason();
  EXPECT_NE(r.reason().find("forked crun"), std::string::npos);
  EXPECT_NE(r.reason().find("linux.seccomp"), std::string::npos);
  EXPECT_NE(r.to_json().find("\"emulated_path_ok\":false"), std::string::npos);
}

TEST(Preflight, CleanContainerPassesWithItsCapabilitiesPrinted) {
  const auto config = execaff::parse_config_document(with_config("{}"), "config");
  PreflightInput in;
  in.config = &config;
  const PreflightReport r = run_preflight(in);
  EXPECT_FALSE(r.blocked()) << r.reason();
  const PreflightCheck caps = check_process_privileges(config.process.capabilities);
  EXPECT_TRUE(caps.ok);
  EXPECT_NE(caps.detail.find("cap_chown,cap_kill=ep"), std::string::npos) << caps.detail;
  EXPECT_NE(caps.detail.find("no_new_privs true"), std::string::npos);
  EXPECT_NE(caps.detail.find("needs no capability"), std::string::npos);
}

TEST(Preflight, NoProcNoTrampoline) {
  const auto config =
      execaff::parse_config_document(R"({"process": {"args": ["sh"]}, "mounts": []})", "config");
  PreflightInput in;
  in.config = &config;
  const PreflightReport r = run_preflight(in);
  EXPECT_TRUE(r.blocked());
  EXPECT_TRUE(named(r, "proc").blocking);
}

TEST(Preflight, MemfdNoexecSysctl) {
  char dir[] = "/tmp/execaff-preflight-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string root = dir;
  ASSERT_EQ(std::system(("mkdir -p " + root + "/proc/sys/vm").c_str()), 0);
  std::ofstream(root + "/proc/sys/vm/memfd_noexec") << "2\n";
  const auto config = execaff::parse_config_document(with_config("{}"), "config");
  PreflightInput in;
  in.config = &config;
  in.root = root;
  const PreflightReport r = run_preflight(in);
  EXPECT_TRUE(named(r, "memfd_exec").blocking);
  EXPECT_NE(r.reason().find("vm.memfd_noexec is 2"), std::string::npos);
  ASSERT_EQ(std::system(("rm -rf " + root).c_str()), 0);
}

TEST(Preflight, UnknownCapabilityIsReportedNotBlocking) {
  const auto process = execaff::parse_process_document(
      R"({"args": ["sh"], "capabilities": {"bounding": ["CAP_FROB", "CAP_KILL"]}})", "process");
  const PreflightCheck caps = check_process_privileges(process.capabilities);
  EXPECT_FALSE(caps.blocking);
  EXPECT_FALSE(caps.ok);
  EXPECT_NE(caps.detail.find("CAP_FROB"), std::string::npos);
  EXPECT_NE(caps.detail.find("bounding cap_kill"), std::string::npos) << caps.detail;
}

TEST(Preflight, WrongTypesInTheCapabilitiesAreTheirOwnError) {
  const auto process = execaff::parse_process_document(
      R"({"args": ["sh"], "capabilities": {"bounding": "CAP_KILL"}})", R"(process file "p")");
  try {
    (void)check_process_privileges(process.capabilities);
    ADD_FAILURE() << "no error";
  } catch (const execaff::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              R"(process file "p": process.capabilities.bounding: expected an array, got a )"
              R"(string "CAP_KILL")");
  }
}

}  // namespace
