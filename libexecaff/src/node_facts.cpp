// SPDX-License-Identifier: LGPL-2.1-or-later
#include "node_facts.hpp"

#include <linux/magic.h>
#include <sys/vfs.h>

#include <cerrno>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "error.hpp"
#include "procfs.hpp"

namespace execaff {
namespace {

constexpr std::string_view kCpuDir = "/sys/devices/system/cpu";

[[noreturn]] void throw_read_error(const std::string& path, int code) {
  throw Error(code, path + ": " + errno_text(code));
}

// A CPU list read from `path`; CpuSet's message gains the path in front.
CpuSet parse_list_of(const std::string& path, std::string_view text) {
  try {
    return CpuSet::parse(text);
  } catch (const Error& e) {
    throw e.wrap(path);
  }
}

// ---- /proc/cmdline -------------------------------------------------------

// Kernel parameter names treat '-' and '_' alike (parameqn() in
// kernel/params.c), so "nohz-full=" sets nohz_full.
bool same_param_name(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const char x = a[i] == '-' ? '_' : a[i];
    const char y = b[i] == '-' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}

// Every value of parameter `name` on a kernel command line, in order.  Words
// are split as next_arg() in lib/cmdline.c does: whitespace separates them
// unless inside double quotes, and quotes around a value or a whole word
// are dropped.  parse_args() stops at a bare "--": what follows is init's.
std::vector<std::string_view> boot_param_values(std::string_view cmdline, std::string_view name) {
  std::vector<std::string_view> values;
  std::size_t i = 0;
  while (true) {
    while (i < cmdline.size() && is_space(cmdline[i])) ++i;
    if (i == cmdline.size()) return values;

    bool quoted = false;
    if (cmdline[i] == '"') {
      quoted = true;
      ++i;
    }
    const std::size_t start = i;
    std::size_t equals = std::string_view::npos;
    bool in_quote = quoted;
    for (; i < cmdline.size(); ++i) {
      if (is_space(cmdline[i]) && !in_quote) break;
      if (equals == std::string_view::npos && cmdline[i] == '=') equals = i;
      if (cmdline[i] == '"') in_quote = !in_quote;
    }
    std::string_view word = cmdline.substr(start, i - start);

    if (equals == std::string_view::npos) {
      if (quoted && !word.empty() && word.back() == '"') word.remove_suffix(1);
      if (word == "--") return values;
      continue;
    }
    const std::string_view param = word.substr(0, equals - start);
    std::string_view value = word.substr(equals - start + 1);
    if (!value.empty() && value.front() == '"') {
      value.remove_prefix(1);
      if (!value.empty() && value.back() == '"') value.remove_suffix(1);
    } else if (quoted && !value.empty() && value.back() == '"') {
      value.remove_suffix(1);
    }
    if (same_param_name(param, name)) values.push_back(value);
  }
}

bool is_letter(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The CPU list of an isolcpus= value, after the flags ("nohz,", "domain,",
// "managed_irq,", and unknown words the kernel skips with a notice), the way
// housekeeping_isolcpus_setup() in kernel/sched/isolation.c reads it; the
// old form is the bare list.  nullopt when the kernel refuses the value (a
// flag with a character other than letters and '_', or no list after it).
std::optional<std::string_view> isolcpus_list(std::string_view value) {
  while (!value.empty() && is_letter(value.front())) {
    const std::size_t comma = value.find(',');
    if (comma == std::string_view::npos) return std::nullopt;
    for (std::size_t i = 0; i < comma; ++i) {
      if (!is_letter(value[i]) && value[i] != '_') return std::nullopt;
    }
    value.remove_prefix(comma + 1);
  }
  return value;
}

// The CPUs named by the first occurrence of `name` on the command line that
// the kernel acts on.  The first, not the last: housekeeping_setup() in
// kernel/sched/isolation.c (torvalds/linux, read at 03ff7351; the rule is
// the same since isolcpus= moved there in v4.15) installs the masks on its
// first successful call, and a later call whose list differs is dropped
// with "Housekeeping: nohz_full= must match isolcpus=".  An occurrence the
// kernel ignores (refused flags, an empty list) does not count.  A list we
// cannot parse is an error, not a skip: the kernel may have taken it ("N",
// "all" and "a-b:u/g" are its extensions), so skipping could hide isolated
// CPUs.
CpuSet first_boot_param_cpus(const std::string& cmdline_path, std::string_view cmdline,
                             std::string_view name, bool takes_flags) {
  for (const std::string_view value : boot_param_values(cmdline, name)) {
    const std::optional<std::string_view> list =
        takes_flags ? isolcpus_list(value) : std::optional<std::string_view>(value);
    if (!list) continue;
    CpuSet cpus;
    try {
      cpus = CpuSet::parse(*list);
    } catch (const Error& e) {
      throw e.wrap(cmdline_path + ": parameter " +
                   quoted(std::string(name) + "=" + std::string(value)));
    }
    if (!cpus.empty()) return cpus;
  }
  return CpuSet();
}

// A sysfs CPU mask that must exist and name at least one CPU.
CpuSet read_required_mask(const std::string& root, std::string_view name) {
  const std::string path = under_root(root, join_path(kCpuDir, name));
  std::string text;
  if (const int code = read_whole_file(path, text); code != 0) throw_read_error(path, code);
  CpuSet cpus = parse_list_of(path, trim_trailing_space(text));
  if (cpus.empty()) throw Error(EINVAL, path + ": names no CPU");
  return cpus;
}

// Whether `path` is the root of a mounted filesystem of type `magic`.
bool is_filesystem(const std::string& path, long magic) {
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == magic;
}

// Whether `procs` (a cgroup.procs file) lists `pid`.
bool lists_pid(std::string_view procs, pid_t pid) {
  const std::string wanted = std::to_string(pid);
  Parts lines(procs, '\n');
  while (const auto line = lines.next()) {
    if (*line == wanted) return true;
  }
  return false;
}

}  // namespace

NodeFacts::NodeFacts(std::string root) : root_(std::move(root)) {}

std::optional<std::string> NodeFacts::read_optional(const std::string& path) const {
  return read_optional_file(under_root(root_, path));
}

CpuSet NodeFacts::online_cpus() const {
  return read_required_mask(root_, "online");
}

CpuSet NodeFacts::possible_cpus() const {
  return read_required_mask(root_, "possible");
}

IsolatedCpus NodeFacts::isolated_cpus() const {
  IsolatedCpus result;
  const auto add_source = [&result](std::string_view label, const CpuSet& cpus) {
    if (cpus.empty()) return;
    result.cpus = result.cpus.united_with(cpus);
    if (!result.sources.empty()) result.sources.push_back(' ');
    result.sources += std::string(label) + "=" + cpus.format();
  };

  // "isolated" lists the CPUs out of the scheduler domains (isolcpus= with
  // the domain flag, or no flag); "nohz_full" exists with CONFIG_NO_HZ_FULL
  // and prints "(null)" when nohz_full= was not given.
  const std::string isolated_path = join_path(kCpuDir, "isolated");
  const std::string nohz_full_path = join_path(kCpuDir, "nohz_full");
  const std::optional<std::string> isolated = read_optional(isolated_path);
  std::optional<std::string> nohz_full = read_optional(nohz_full_path);
  if (nohz_full && *nohz_full == "(null)") nohz_full->clear();

  if (isolated) add_source("isolated", parse_list_of(under_root(root_, isolated_path), *isolated));
  if (nohz_full) {
    add_source("nohz_full", parse_list_of(under_root(root_, nohz_full_path), *nohz_full));
  }
  if (isolated && nohz_full) return result;

  const std::string cmdline_path = "/proc/cmdline";
  const std::optional<std::string> cmdline = read_optional(cmdline_path);
  if (!cmdline) return result;
  const std::string full_cmdline_path = under_root(root_, cmdline_path);
  if (!isolated) {
    add_source("cmdline:isolcpus",
               first_boot_param_cpus(full_cmdline_path, *cmdline, "isolcpus", true));
  }
  if (!nohz_full) {
    add_source("cmdline:nohz_full",
               first_boot_param_cpus(full_cmdline_path, *cmdline, "nohz_full", false));
  }
  return result;
}

CpuSet NodeFacts::thread_siblings(unsigned cpu) const {
  const std::string path =
      join_path(kCpuDir, "cpu" + std::to_string(cpu) + "/topology/thread_siblings_list");
  const std::optional<std::string> text = read_optional(path);
  // A CPU is always its own sibling; an absent or empty file (an offline
  // CPU, a container hiding sysfs) leaves exactly that.
  if (!text || text->empty()) return CpuSet::of({cpu});
  return parse_list_of(under_root(root_, path), *text);
}

std::optional<CgroupCpuset> NodeFacts::read_cgroup_cpuset(const std::string& file) const {
  const std::optional<std::string> text = read_optional(file);
  if (!text) return std::nullopt;
  const std::string full = under_root(root_, file);
  CpuSet cpus = parse_list_of(full, *text);
  // A cgroup holding a task never has an empty cpuset (the kernel moves
  // tasks out before emptying one), and callers rely on that.
  if (cpus.empty()) throw Error(EINVAL, full + ": the cgroup's cpuset is empty");
  return CgroupCpuset{std::move(cpus), full};
}

// The cgroup mounts almost every node has, tried before mountinfo: the
// kernel renders mountinfo whole on every read, which costs 50-100 us for
// the 22 mounts of the CI machine and grows with every pod's mounts on a
// node, on the path of every pinned exec.  Here: two statfs and two small
// reads.  A mount counts only when it is the cgroup filesystem the line
// needs and the directory it gives lists the pid in cgroup.procs, so a
// bind mount of a subtree, a tmpfs over it or a missing cgroup sends the
// caller to mountinfo.  The outer nullopt says "not decided here".
std::optional<std::optional<CgroupCpuset>> NodeFacts::cgroup_cpuset_at_usual_mounts(
    const std::vector<CgroupLine>& lines, pid_t pid) const {
  const auto cgroup_of_pid = [&](std::string_view mount, long magic,
                                 std::string_view cgroup_path) -> std::optional<std::string> {
    const std::string mount_point = under_root(root_, mount);
    if (!is_filesystem(mount_point, magic) || cgroup_path_goes_up(cgroup_path)) return std::nullopt;
    std::string dir = join_path(mount, cgroup_path);
    const std::optional<std::string> procs = read_optional(join_path(dir, "cgroup.procs"));
    if (!procs || !lists_pid(*procs, pid)) return std::nullopt;
    return dir;
  };

  for (const CgroupLine& line : lines) {
    if (line.hierarchy == "0" || !contains_item(line.controllers, "cpuset", ',')) continue;
    const auto dir = cgroup_of_pid("/sys/fs/cgroup/cpuset", CGROUP_SUPER_MAGIC, line.path);
    if (!dir) return std::nullopt;
    // The same files, in the same order, as through mountinfo below; a
    // mount without them ("noprefix", another controller) is left to it.
    if (auto found = read_cgroup_cpuset(join_path(*dir, "cpuset.effective_cpus"))) return found;
    if (auto found = read_cgroup_cpuset(join_path(*dir, "cpuset.cpus"))) return found;
    return std::nullopt;
  }
  for (const CgroupLine& line : lines) {
    if (line.hierarchy != "0" || !line.controllers.empty()) continue;
    const auto dir = cgroup_of_pid("/sys/fs/cgroup", CGROUP2_SUPER_MAGIC, line.path);
    if (!dir) return std::nullopt;
    const std::optional<std::string> controllers =
        read_optional(join_path(*dir, "cgroup.controllers"));
    if (!controllers) return std::nullopt;
    if (!contains_item(*controllers, "cpuset", ' ')) return std::optional<CgroupCpuset>();
    if (auto found = read_cgroup_cpuset(join_path(*dir, "cpuset.cpus.effective"))) return found;
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<CgroupCpuset> NodeFacts::cgroup_cpuset_of_pid(pid_t pid) const {
  return find_cgroup_cpuset(pid, true);
}

std::optional<CgroupCpuset> NodeFacts::cgroup_cpuset_of_pid_by_mountinfo(pid_t pid) const {
  return find_cgroup_cpuset(pid, false);
}

std::optional<CgroupCpuset> NodeFacts::find_cgroup_cpuset(pid_t pid, bool try_usual_mounts) const {
  const ProcessCgroups cgroups(root_, pid);
  if (try_usual_mounts) {
    if (auto found = cgroup_cpuset_at_usual_mounts(cgroups.lines(), pid)) return *found;
  }
  const std::optional<ControllerCgroup> cgroup = cgroups.controller_cgroup("cpuset");
  if (!cgroup) return std::nullopt;
  if (cgroup->v2) {
    const std::string effective = cgroup->file("cpus.effective");
    if (auto found = read_cgroup_cpuset(effective)) return found;
    throw Error(ENOENT, under_root(root_, effective) + ": " + errno_text(ENOENT));
  }
  // effective_cpus appeared in Linux 3.17 with the default hierarchy's
  // cpuset rework; before it, cpus was the only mask.
  const std::string effective = cgroup->file("effective_cpus");
  if (auto found = read_cgroup_cpuset(effective)) return found;
  if (auto found = read_cgroup_cpuset(cgroup->file("cpus"))) return found;
  throw Error(ENOENT, under_root(root_, effective) + ": " + errno_text(ENOENT) + ", nor is there " +
                          cgroup->file_prefix + "cpus (the cgroup of pid " + std::to_string(pid) +
                          " is gone or not visible here)");
}

}  // namespace execaff
