// SPDX-License-Identifier: LGPL-2.1-or-later
// What an OCI seccomp profile (config.json linux.seccomp) does to given
// system calls.  The profile is built into a filter with libseccomp, as
// runc and crun build it (defaultAction, defaultErrnoRet, architectures,
// syscalls[].names/action/errnoRet/args, flags), exported as the BPF
// program the kernel would run, and that program is run on each call
// (seccomp_bpf.hpp).  No name is matched as a string: libseccomp resolves
// names per architecture, and the verdict is the program's.
#pragma once

#include <linux/filter.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec_json.hpp"

namespace execaff::preflight {

// One system call as a process will make it.  Arguments that are pointers
// have no value known in advance: the call is evaluated with several values
// there, and a verdict that changes with them is reported as such.
struct SyscallProbe {
  std::string name;
  std::array<std::uint64_t, 6> args{};
  std::vector<unsigned> pointer_args;
};

enum class SeccompVerdict {
  allow,
  log,
  errno_return,
  kill_thread,
  kill_process,
  trap,
  trace,
  notify
};
[[nodiscard]] const char* to_string(SeccompVerdict verdict) noexcept;

struct SyscallOutcome {
  std::string name;
  SeccompVerdict verdict = SeccompVerdict::allow;
  int errno_value = 0;           // errno_return
  bool depends_on_args = false;  // differs with a pointer argument's value
  // allow and log run the call; notify leaves it to the agent at runtime.
  [[nodiscard]] bool runs() const noexcept {
    return verdict == SeccompVerdict::allow || verdict == SeccompVerdict::log;
  }
  [[nodiscard]] std::string describe() const;
};

struct SeccompEvaluation {
  std::string architecture;  // libseccomp's name, e.g. "x86_64"
  std::vector<SyscallOutcome> outcomes;
  std::vector<std::string> unknown_names;  // skipped, as the runtimes skip them
  std::vector<std::string> flags;
};

// The BPF program libseccomp builds from `profile` for `architecture`
// (and every architecture the profile lists), as the kernel would run it.
struct SeccompProgram {
  std::vector<sock_filter> instructions;
  std::uint32_t architecture = 0;  // AUDIT_ARCH_* of the target
  std::vector<std::string> unknown_names;
  std::vector<std::string> flags;
};
// With `only`, the rules for other system calls are left out: a seccomp
// program's verdict for one call depends on the default and bad-arch
// actions and on that call's own rules only (libseccomp compiles each
// system call into its own branch), so the program answers the same for
// the calls in `only` — and builds 500 times faster for a profile of 400
// names (tests/bench/bench_preflight.cpp).  The unit tests compare both.
[[nodiscard]] SeccompProgram build_seccomp_program(
    const SeccompProfile& profile, std::string_view source,
    const std::optional<std::string>& architecture = std::nullopt,
    const std::vector<std::string>* only = nullptr);

// `profile` is linux.seccomp as read (spec_json.hpp).  `architecture` is
// libseccomp's name ("x86_64", "aarch64", ...); nullopt is this host's.  The
// program is built for the probed calls only (build_seccomp_program's
// `only`).  Throws Error(EINVAL) naming `source` (the document) and the
// member for a profile the runtimes would refuse: the profile's problem (a
// wrong type), an unknown action, operator, flag or architecture.
[[nodiscard]] SeccompEvaluation evaluate_seccomp_profile(
    const SeccompProfile& profile, std::string_view source, const std::vector<SyscallProbe>& probes,
    const std::optional<std::string>& architecture = std::nullopt);

}  // namespace execaff::preflight
