// SPDX-License-Identifier: LGPL-2.1-or-later
#include "preflight.hpp"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cerrno>

#include "error.hpp"
#include "procfs.hpp"
#include "seccomp_profile.hpp"

namespace execaff::preflight {
namespace {

constexpr const char* kNativeFix =
    "a runtime that applies execCPUAffinity itself, so that no trampoline runs: runc >= 1.3 or "
    "crun >= 1.19 (found by \"native\": \"detect\"), youki >= 0.5.4 with \"native\": true, or "
    "the forked crun (contrib/crun)";

// The first line of a kernel file (a sysctl, a selinuxfs flag); nullopt when
// it cannot be read or is empty.
std::optional<std::string> first_line(const std::string& path) {
  const std::optional<std::string> text = read_file_if_readable(path);
  if (!text || text->empty()) return std::nullopt;
  return text->substr(0, text->find('\n'));
}

// The trampoline's calls (shim/final_trampoline.c): pin itself, read the
// mask back, close its own fd, exec the program.
std::vector<SyscallProbe> trampoline_calls() {
  constexpr std::uint64_t kMaskBytes = 1024 * 8;  // MASK_WORDS longs
  return {
      {"sched_setaffinity", {0, kMaskBytes, 0, 0, 0, 0}, {2}},
      {"sched_getaffinity", {0, kMaskBytes, 0, 0, 0, 0}, {2}},
      {"close", {3, 0, 0, 0, 0, 0}, {0}},  // its fd: 3 + --preserve-fds, any value
      {"execve", {0, 0, 0, 0, 0, 0}, {0, 1, 2}},
  };
}

PreflightCheck check_seccomp(const ConfigDocument& config) {
  PreflightCheck c{.name = "seccomp"};
  if (!config.seccomp) {
    c.detail = "no seccomp profile (linux.seccomp absent)";
    return c;
  }
  SeccompEvaluation e;
  try {
    e = evaluate_seccomp_profile(*config.seccomp, config.source, trampoline_calls());
  } catch (const Error& err) {
    c.ok = false;
    c.detail = std::string("cannot evaluate the profile: ") + err.what();
    c.fix = "check the profile; the runtime applies it as it is";
    return c;
  }
  std::string refused;
  std::string notes;
  for (const SyscallOutcome& o : e.outcomes) {
    if (o.verdict == SeccompVerdict::notify) {
      notes += (notes.empty() ? "" : "; ") + o.describe();
    } else if (!o.runs()) {
      refused += (refused.empty() ? "" : "; ") + o.describe();
    }
  }
  if (!refused.empty()) {
    c.ok = false;
    c.blocking = true;
    c.detail = "the container's seccomp profile stops the trampoline: " + refused;
    c.fix = "allow these calls in linux.seccomp (a SCMP_ACT_ALLOW rule), or use " +
            std::string(kNativeFix);
  } else {
    c.detail = "the profile lets sched_setaffinity, sched_getaffinity, close and execve through";
    if (!notes.empty()) {
      c.detail += " except where its agent decides: " + notes;
      c.ok = false;
      c.fix = "make the seccomp agent allow them";
    }
  }
  if (!e.unknown_names.empty()) {
    c.detail += " (names unknown to libseccomp, skipped as the runtimes skip them:";
    for (const std::string& n : e.unknown_names) c.detail += " " + n;
    c.detail += ")";
  }
  return c;
}

PreflightCheck check_proc(const PreflightInput& input) {
  PreflightCheck c{.name = "proc"};
  const bool in_config = input.config->mounts_proc;
  std::optional<bool> live;
  if (input.init_pid) {
    struct statfs fs {};
    const std::string path =
        under_root(input.root, "/proc/" + std::to_string(*input.init_pid) + "/root/proc");
    if (::statfs(path.c_str(), &fs) == 0) live = fs.f_type == PROC_SUPER_MAGIC;
  }
  const bool mounted = live.value_or(in_config);
  if (mounted) {
    c.detail = live ? "/proc is mounted in the container (seen through its init)"
                    : "config.json mounts proc at /proc";
    return c;
  }
  c.ok = false;
  c.blocking = true;
  c.detail = live ? "/proc is not a proc file system in the container (seen through its init)"
                  : "config.json mounts no proc at /proc";
  c.fix =
      "the runtime starts the trampoline as /proc/self/fd/N: mount proc at /proc (the "
      "runtimes' default spec does), or use " +
      std::string(kNativeFix);
  return c;
}

PreflightCheck check_memfd(const PreflightInput& input) {
  PreflightCheck c{.name = "memfd_exec"};
  // Linux 6.3+: 1 seals a memfd created without MFD_EXEC as not executable,
  // 2 refuses to create one; the trampoline is such a memfd.
  const auto value = first_line(under_root(input.root, "/proc/sys/vm/memfd_noexec"));
  if (!value || *value == "0") {
    c.detail = value ? "vm.memfd_noexec is 0" : "no vm.memfd_noexec (kernel before 6.3)";
    return c;
  }
  c.ok = false;
  c.blocking = true;
  c.detail = "vm.memfd_noexec is " + *value + ": the trampoline's memfd cannot be executed";
  c.fix = "sysctl vm.memfd_noexec=0, or use " + std::string(kNativeFix);
  return c;
}

PreflightCheck check_selinux(const PreflightInput& input) {
  PreflightCheck c{.name = "selinux"};
  const auto enforce = first_line(under_root(input.root, "/sys/fs/selinux/enforce"));
  if (!enforce || *enforce != "1") {
    c.detail = enforce ? "SELinux is permissive" : "no SELinux";
    return c;
  }
  c.ok = false;  // cannot be told from here: a warning, not a refusal
  c.detail =
      "SELinux is enforcing: the container's domain (container_t) must be allowed to "
      "execute a memfd (tmpfs) file";
  c.fix = "if execs fail with EACCES, use " + std::string(kNativeFix);
  return c;
}

}  // namespace

bool PreflightReport::blocked() const {
  for (const auto& c : checks) {
    if (c.blocking) return true;
  }
  return false;
}

std::string PreflightReport::reason() const {
  std::string out;
  for (const auto& c : checks) {
    if (!c.blocking) continue;
    out += (out.empty() ? "" : "; ") + std::string("pre-flight ") + c.name + ": " + c.detail +
           " (fix: " + c.fix + ")";
  }
  return out;
}

void PreflightReport::write_json(json::Writer& out) const {
  out.open_object();
  out.key("emulated_path_ok").boolean(!blocked());
  out.key("checks").open_array();
  for (const PreflightCheck& c : checks) {
    out.open_object();
    out.member("name", c.name);
    out.key("ok").boolean(c.ok);
    out.key("blocking").boolean(c.blocking);
    out.member("detail", c.detail);
    out.member_or_null("fix", c.fix.empty() ? std::nullopt : std::optional<std::string>(c.fix));
    out.close_object();
  }
  out.close_array();
  out.close_object();
}

std::string PreflightReport::to_json() const {
  json::Writer out;
  write_json(out);
  return out.take();
}

PreflightReport run_preflight(const PreflightInput& input) {
  if (input.config == nullptr) throw Error(EINVAL, "pre-flight: no config.json");
  PreflightReport report;
  report.checks.push_back(check_seccomp(*input.config));
  report.checks.push_back(check_proc(input));
  report.checks.push_back(check_memfd(input));
  report.checks.push_back(check_selinux(input));
  if (input.program_found) {
    PreflightCheck c{.name = "program"};
    if (*input.program_found) {
      c.detail = "program " + quoted(input.program.value_or("")) + " is in the container";
    } else {
      // Not the trampoline's problem: the exec is handed over untouched and
      // the runtime reports it, with its own message and exit code.
      c.ok = false;
      c.detail = "program " + quoted(input.program.value_or("")) +
                 " is not in the container: the runtime reports that (exit 255)";
      c.fix = "name a program the container has";
    }
    report.checks.push_back(c);
  }
  return report;
}

}  // namespace execaff::preflight
