// SPDX-License-Identifier: LGPL-2.1-or-later
// Can the emulated path work for this exec?  The trampoline runs as the
// exec's process, after the runtime has applied the container's seccomp
// filter, capabilities and no_new_privs, from /proc/self/fd/N: so it needs
// seccomp to let sched_setaffinity, sched_getaffinity, close and execve
// through, /proc mounted in the container, and a memfd the kernel lets it
// execute.  Each check that fails names its fix.  spec/preflight.md.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "json_writer.hpp"
#include "spec_json.hpp"

namespace execaff::preflight {

struct PreflightCheck {
  std::string name;  // "seccomp", "proc", "memfd_exec", "selinux", "program"; "capabilities"
  bool ok = true;
  bool blocking = false;  // the trampoline cannot work: pinning must not be tried
  std::string detail;
  std::string fix;  // "" when ok
};

struct PreflightInput {
  const ConfigDocument* config = nullptr;  // the bundle's config.json, parsed once
  std::optional<pid_t> init_pid;           // the container's init: live /proc check
  std::string root = "/";                  // the node's files (/proc/sys, /sys/fs/selinux)
  // The caller's look-up of the program in the container, when it made one.
  std::optional<std::string> program;
  std::optional<bool> program_found;
};

struct PreflightReport {
  std::vector<PreflightCheck> checks;

  [[nodiscard]] bool blocked() const;
  // The blocking checks' details and fixes, one sentence each.
  [[nodiscard]] std::string reason() const;
  // {"emulated_path_ok": ..., "checks": [{name, ok, blocking, detail, fix}]}
  void write_json(json::Writer& out) const;
  [[nodiscard]] std::string to_json() const;
};

// A profile that cannot be evaluated is a failed, non-blocking check
// saying why.  Error(EINVAL) when input.config is null.
[[nodiscard]] PreflightReport run_preflight(const PreflightInput& input);

}  // namespace execaff::preflight
