// SPDX-License-Identifier: LGPL-2.1-or-later
#include "seccomp_profile.hpp"

#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <memory>

#include "error.hpp"
#include "file_descriptor.hpp"
#include "file_reader.hpp"
#include "seccomp_bpf.hpp"

namespace execaff::preflight {
namespace {

struct FilterFree {
  void operator()(void* ctx) const noexcept { seccomp_release(ctx); }
};
using Filter = std::unique_ptr<void, FilterFree>;

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// runc and crun default errnoRet to EPERM.
std::uint32_t action_of(const std::string& name, std::optional<std::uint64_t> errno_ret,
                        const std::string& where) {
  const auto with_data = [&](std::uint32_t fallback) {
    const std::uint64_t v = errno_ret.value_or(fallback);
    if (v > 0xffff)
      throw Error(EINVAL, where + ": errnoRet " + std::to_string(v) + " is too large");
    return static_cast<std::uint32_t>(v);
  };
  if (name == "SCMP_ACT_ALLOW") return SCMP_ACT_ALLOW;
  if (name == "SCMP_ACT_ERRNO") return SCMP_ACT_ERRNO(with_data(EPERM));
  if (name == "SCMP_ACT_KILL" || name == "SCMP_ACT_KILL_THREAD") return SCMP_ACT_KILL_THREAD;
  if (name == "SCMP_ACT_KILL_PROCESS") return SCMP_ACT_KILL_PROCESS;
  if (name == "SCMP_ACT_TRAP") return SCMP_ACT_TRAP;
  if (name == "SCMP_ACT_TRACE") return SCMP_ACT_TRACE(with_data(EPERM));
  if (name == "SCMP_ACT_LOG") return SCMP_ACT_LOG;
  if (name == "SCMP_ACT_NOTIFY") return SCMP_ACT_NOTIFY;
  throw Error(EINVAL, where + ": unknown action " + quoted(name));
}

scmp_compare operator_of(const std::string& name, const std::string& where) {
  if (name == "SCMP_CMP_NE") return SCMP_CMP_NE;
  if (name == "SCMP_CMP_LT") return SCMP_CMP_LT;
  if (name == "SCMP_CMP_LE") return SCMP_CMP_LE;
  if (name == "SCMP_CMP_EQ") return SCMP_CMP_EQ;
  if (name == "SCMP_CMP_GE") return SCMP_CMP_GE;
  if (name == "SCMP_CMP_GT") return SCMP_CMP_GT;
  if (name == "SCMP_CMP_MASKED_EQ") return SCMP_CMP_MASKED_EQ;
  throw Error(EINVAL, where + ": unknown operator " + quoted(name));
}

// "SCMP_ARCH_X86_64" -> libseccomp's token.
std::uint32_t arch_token(const std::string& oci_name, const std::string& where) {
  const std::string prefix = "SCMP_ARCH_";
  const std::string name =
      oci_name.rfind(prefix, 0) == 0 ? lowered(oci_name.substr(prefix.size())) : lowered(oci_name);
  const std::uint32_t token = seccomp_arch_resolve_name(name.c_str());
  if (token == 0) throw Error(EINVAL, where + ": unknown architecture " + quoted(oci_name));
  return token;
}

void add_rules(scmp_filter_ctx ctx, const SeccompRule& rule, std::uint32_t default_action,
               const std::string& where, const std::vector<int>* keep, SeccompProgram& out) {
  const std::uint32_t action = action_of(rule.action, rule.errno_ret, where);
  std::vector<scmp_arg_cmp> conditions;
  for (std::size_t i = 0; i < rule.args.size(); ++i) {
    const SeccompArgument& arg = rule.args[i];
    const std::string at = where + ".args[" + std::to_string(i) + "]";
    if (!arg.index || *arg.index > 5) throw Error(EINVAL, at + ".index must be 0 to 5");
    conditions.push_back(scmp_arg_cmp{static_cast<unsigned>(*arg.index), operator_of(arg.op, at),
                                      arg.value.value_or(0), arg.value_two.value_or(0)});
  }
  // The runtimes skip a rule whose action is the default (libseccomp
  // refuses it, and it changes nothing).
  if (action == default_action) return;
  // libseccomp takes one condition per argument in a rule; runc, like
  // crun, adds one rule per condition when an argument repeats (any of them
  // matches), and one rule holding all of them otherwise (all must match).
  bool repeats = false;
  for (std::size_t i = 0; i < conditions.size(); ++i) {
    for (std::size_t j = i + 1; j < conditions.size(); ++j) {
      repeats = repeats || conditions[i].arg == conditions[j].arg;
    }
  }
  std::vector<std::string> all_names;
  if (rule.names_given) {
    all_names = rule.names;
  } else if (!rule.name.empty()) {
    all_names.push_back(rule.name);  // runtime-spec before 1.0.0-rc5
  } else {
    throw Error(EINVAL, where + " names no system call");
  }
  for (const std::string& name : all_names) {
    const int nr = seccomp_syscall_resolve_name(name.c_str());
    if (nr == __NR_SCMP_ERROR) {
      if (std::find(out.unknown_names.begin(), out.unknown_names.end(), name) ==
          out.unknown_names.end()) {
        out.unknown_names.push_back(name);
      }
      continue;
    }
    if (keep != nullptr && std::find(keep->begin(), keep->end(), nr) == keep->end()) continue;
    const auto add = [&](unsigned count, const scmp_arg_cmp* cmp) {
      const int rc = seccomp_rule_add_array(ctx, action, nr, count, cmp);
      if (rc < 0) {
        throw Error(-rc, where + ": libseccomp refuses the rule for " + quoted(name) + ": " +
                             errno_text(-rc));
      }
    };
    if (repeats) {
      for (const scmp_arg_cmp& c : conditions) add(1, &c);
    } else {
      add(static_cast<unsigned>(conditions.size()), conditions.data());
    }
  }
}

std::vector<sock_filter> exported_program(scmp_filter_ctx ctx) {
  const FileDescriptor fd(::memfd_create("execaff-seccomp-bpf", MFD_CLOEXEC));
  if (fd.get() < 0) {
    const int code = errno;
    throw Error(code, "memfd_create for the seccomp program: " + errno_text(code));
  }
  if (const int rc = seccomp_export_bpf(ctx, fd.get()); rc < 0) {
    throw Error(-rc, "libseccomp cannot export the filter: " + errno_text(-rc));
  }
  if (::lseek(fd.get(), 0, SEEK_SET) != 0) throw Error(errno, "seeking the seccomp program");
  const std::string bytes = read_opened_file(fd.get(), "the seccomp program", kMaxKernelFileBytes);
  if (bytes.size() % sizeof(sock_filter) != 0) throw Error(EIO, "reading the seccomp program");
  std::vector<sock_filter> program(bytes.size() / sizeof(sock_filter));
  std::memcpy(program.data(), bytes.data(), bytes.size());
  return program;
}

SyscallOutcome outcome_of(std::uint32_t ret) {
  SyscallOutcome o;
  switch (ret & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_ALLOW: o.verdict = SeccompVerdict::allow; break;
    case SECCOMP_RET_LOG: o.verdict = SeccompVerdict::log; break;
    case SECCOMP_RET_ERRNO:
      o.verdict = SeccompVerdict::errno_return;
      o.errno_value = static_cast<int>(ret & SECCOMP_RET_DATA);
      break;
    case SECCOMP_RET_TRAP: o.verdict = SeccompVerdict::trap; break;
    case SECCOMP_RET_TRACE: o.verdict = SeccompVerdict::trace; break;
    case SECCOMP_RET_USER_NOTIF: o.verdict = SeccompVerdict::notify; break;
    case SECCOMP_RET_KILL_PROCESS: o.verdict = SeccompVerdict::kill_process; break;
    default: o.verdict = SeccompVerdict::kill_thread; break;  // the kernel's rule, too
  }
  return o;
}

}  // namespace

const char* to_string(SeccompVerdict verdict) noexcept {
  switch (verdict) {
    case SeccompVerdict::allow: return "allow";
    case SeccompVerdict::log: return "log";
    case SeccompVerdict::errno_return: return "errno";
    case SeccompVerdict::kill_thread: return "kill-thread";
    case SeccompVerdict::kill_process: return "kill-process";
    case SeccompVerdict::trap: return "trap";
    case SeccompVerdict::trace: return "trace";
    case SeccompVerdict::notify: return "notify";
  }
  return "?";
}

std::string SyscallOutcome::describe() const {
  std::string text = name + ": ";
  switch (verdict) {
    case SeccompVerdict::allow: text += "allowed"; break;
    case SeccompVerdict::log: text += "allowed (logged)"; break;
    case SeccompVerdict::errno_return:
      text +=
          "fails with errno " + std::to_string(errno_value) + " (" + errno_text(errno_value) + ")";
      break;
    case SeccompVerdict::kill_thread: text += "kills the thread (SIGSYS)"; break;
    case SeccompVerdict::kill_process: text += "kills the process (SIGSYS)"; break;
    case SeccompVerdict::trap: text += "raises SIGSYS"; break;
    case SeccompVerdict::trace:
      text += "is handed to a ptrace tracer (none: fails with ENOSYS)";
      break;
    case SeccompVerdict::notify:
      text += "is decided at run time by the seccomp agent (listenerPath)";
      break;
  }
  if (depends_on_args) text += ", for some pointer values only";
  return text;
}

SeccompProgram build_seccomp_program(const SeccompProfile& profile, std::string_view source,
                                     const std::optional<std::string>& architecture,
                                     const std::vector<std::string>* only) {
  if (profile.problem) throw *profile.problem;
  const std::string where = std::string(source) + " linux.seccomp";
  SeccompProgram out;
  const std::uint32_t default_action =
      action_of(profile.default_action, profile.default_errno_ret, where + ".defaultAction");
  const Filter ctx(seccomp_init(default_action));
  if (!ctx) throw Error(EINVAL, where + ": libseccomp refuses defaultAction");
  const std::uint32_t target =
      architecture ? arch_token(*architecture, where) : seccomp_arch_native();
  for (const std::string& name : profile.architectures) {
    const int rc = seccomp_arch_add(ctx.get(), arch_token(name, where));
    if (rc < 0 && rc != -EEXIST) {
      throw Error(-rc, where + ": libseccomp cannot add " + quoted(name));
    }
  }
  for (const std::string& flag : profile.flags) {
    // None of them changes what a call gets; a flag the runtimes do not
    // know is refused by them, and here.
    if (flag != "SECCOMP_FILTER_FLAG_TSYNC" && flag != "SECCOMP_FILTER_FLAG_LOG" &&
        flag != "SECCOMP_FILTER_FLAG_SPEC_ALLOW" &&
        flag != "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV") {
      throw Error(EINVAL, where + ".flags: unknown flag " + quoted(flag));
    }
    out.flags.push_back(flag);
  }
  // Rules are added by native number; libseccomp maps them to each
  // architecture's own, so a call is kept by its native number.
  std::optional<std::vector<int>> keep;
  if (only != nullptr) {
    keep.emplace();
    for (const std::string& name : *only)
      keep->push_back(seccomp_syscall_resolve_name(name.c_str()));
  }
  for (std::size_t i = 0; i < profile.syscalls.size(); ++i) {
    add_rules(ctx.get(), profile.syscalls[i], default_action,
              where + ".syscalls[" + std::to_string(i) + "]", keep ? &*keep : nullptr, out);
  }
  // A target architecture the profile does not list meets the filter's
  // bad-architecture action (SCMP_ACT_KILL): the program says so, as the
  // kernel would.
  out.instructions = exported_program(ctx.get());
  out.architecture = target;
  return out;
}

SeccompEvaluation evaluate_seccomp_profile(const SeccompProfile& profile, std::string_view source,
                                           const std::vector<SyscallProbe>& probes,
                                           const std::optional<std::string>& architecture) {
  std::vector<std::string> names;
  for (const SyscallProbe& probe : probes) names.push_back(probe.name);
  SeccompProgram built = build_seccomp_program(profile, source, architecture, &names);
  const std::vector<sock_filter>& program = built.instructions;
  const std::uint32_t target = built.architecture;
  SeccompEvaluation out;
  out.unknown_names = std::move(built.unknown_names);
  out.flags = std::move(built.flags);
  out.architecture = architecture ? lowered(*architecture) : "native";
  for (const SyscallProbe& probe : probes) {
    const int nr = seccomp_syscall_resolve_name_arch(target, probe.name.c_str());
    if (nr == __NR_SCMP_ERROR) {
      throw Error(EINVAL,
                  "system call " + quoted(probe.name) + " does not exist on " + out.architecture);
    }
    seccomp_data data{};
    data.nr = nr;
    data.arch = target;
    for (unsigned i = 0; i < 6; ++i) data.args[i] = probe.args[i];
    SyscallOutcome first = outcome_of(run_seccomp_bpf(program, data));
    // Pointers: null, a typical user-space address, the top of the range.
    for (const std::uint64_t pointer :
         {std::uint64_t{0}, std::uint64_t{0x00007ffd12345000}, ~std::uint64_t{0}}) {
      for (const unsigned i : probe.pointer_args) data.args[i] = pointer;
      const SyscallOutcome other = outcome_of(run_seccomp_bpf(program, data));
      if (other.verdict != first.verdict || other.errno_value != first.errno_value) {
        if (first.runs() && !other.runs()) first = other;  // report the refusal
        first.depends_on_args = true;
      }
    }
    first.name = probe.name;
    out.outcomes.push_back(first);
  }
  return out;
}

}  // namespace execaff::preflight
