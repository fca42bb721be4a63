// SPDX-License-Identifier: LGPL-2.1-or-later
#include "node_facts.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "error.hpp"
#include "file_descriptor.hpp"

namespace execaff {
namespace {

constexpr std::string_view kCpuDir = "/sys/devices/system/cpu";

// /proc/self/mountinfo on a busy Kubernetes node runs to a few MiB; a file
// far past that is none we know, and reading it whole would only eat memory.
constexpr std::size_t kMaxFileSize = std::size_t{64} << 20;

bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view trim_trailing_space(std::string_view text) noexcept {
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

// The parts of `text` between `separator`s, in order, one at a time and
// without allocating: mountinfo on a busy node has thousands of lines, and
// this runs on the exec path.  An empty text is one empty part, as is the
// text after a trailing separator.
class Parts {
 public:
  Parts(std::string_view text, char separator) noexcept : rest_(text), separator_(separator) {}

  // The next part, or nullopt after the last one.
  [[nodiscard]] std::optional<std::string_view> next() noexcept {
    if (done_) return std::nullopt;
    const std::size_t end = rest_.find(separator_);
    if (end == std::string_view::npos) {
      done_ = true;
      return rest_;
    }
    const std::string_view part = rest_.substr(0, end);
    rest_.remove_prefix(end + 1);
    return part;
  }

 private:
  std::string_view rest_;
  char separator_;
  bool done_ = false;
};

bool contains_item(std::string_view list, std::string_view item, char separator) {
  Parts parts(list, separator);
  while (const auto part = parts.next()) {
    if (*part == item) return true;
  }
  return false;
}

// `a` and `b` joined by exactly one slash, so neither root "/" nor a mount
// point "/" ever yields "//".
std::string join_path(std::string_view a, std::string_view b) {
  while (!a.empty() && a.back() == '/') a.remove_suffix(1);
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  std::string out(a);
  out.push_back('/');
  out += b;
  return out;
}

// The whole of `path` in `out`; 0, or the errno of the open or read that
// failed.  Read to EOF in a loop: procfs and sysfs hand out a page at a time.
[[nodiscard]] int read_whole_file(const std::string& path, std::string& out) {
  const FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) return errno;
  std::string text;
  char buffer[16384];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) break;
    if (text.size() + static_cast<std::size_t>(n) > kMaxFileSize) return EFBIG;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  out = std::move(text);
  return 0;
}

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

// ---- /proc/self/mountinfo ------------------------------------------------

// mountinfo writes ' ', '\t', '\n' and '\\' in paths as "\ooo" (octal).
std::string unescape_mountinfo(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (std::size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && field.size() - i > 3) {
      const char a = field[i + 1];
      const char b = field[i + 2];
      const char c = field[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out.push_back(static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0')));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// One line of mountinfo, as views into its text; the two paths are still
// escaped ("\\040" for a space), which compares just as well.
struct Mount {
  std::string_view root;         // the part of the filesystem mounted (field 4)
  std::string_view mount_point;  // field 5
  std::string_view fstype;
  std::string_view super_options;
};

// The lines of mountinfo (proc(5)): "id parent major:minor root mount-point
// options [optional fields...] - fstype source super-options".
std::vector<Mount> parse_mountinfo(const std::string& path, std::string_view text) {
  std::vector<Mount> mounts;
  std::size_t line_number = 0;
  Parts lines(text, '\n');
  while (const auto line = lines.next()) {
    ++line_number;
    if (line->empty()) continue;
    // Fields 4 and 5, then the "-" that ends the optional fields (from the
    // seventh on), then fstype, source and super options.
    std::string_view fields[4];
    std::size_t index = 0;
    std::size_t after_separator = 0;  // fields seen after "-"
    Parts words(*line, ' ');
    while (const auto word = words.next()) {
      if (index == 3) fields[0] = *word;
      if (index == 4) fields[1] = *word;
      if (after_separator > 0) {
        if (after_separator == 1) fields[2] = *word;
        if (after_separator == 3) fields[3] = *word;
        ++after_separator;
      } else if (index >= 6 && *word == "-") {
        after_separator = 1;
      }
      ++index;
    }
    if (after_separator < 4) {
      throw Error(EINVAL, path + ": line " + std::to_string(line_number) + " " + quoted(*line) +
                              " is not \"id parent dev root mount-point options ... - fstype "
                              "source super-options\"");
    }
    mounts.push_back({fields[0], fields[1], fields[2], fields[3]});
  }
  return mounts;
}

// Whether a mount listed later sits on the same mount point and hides this
// one, as a tmpfs over a cgroup mount would.
bool is_covered(const std::vector<Mount>& mounts, std::size_t index) {
  for (std::size_t later = index + 1; later < mounts.size(); ++later) {
    if (mounts[later].mount_point == mounts[index].mount_point) return true;
  }
  return false;
}

// Whether a cgroup path names "..": it then lies above our cgroup
// namespace's root, outside every mount we can see.
bool goes_up(std::string_view cgroup_path) {
  Parts parts(cgroup_path, '/');
  while (const auto part = parts.next()) {
    if (*part == "..") return true;
  }
  return false;
}

// The directory of cgroup `cgroup_path` through `mount`, or nullopt when
// the mount shows another part of the hierarchy: a container's cgroup mount
// has the container's own cgroup as its root (field 4).  Both paths are
// relative to our cgroup namespace; a path going up ("/../x") lies outside
// it and so outside every mount we can see.
std::optional<std::string> cgroup_dir(const Mount& mount, std::string_view cgroup_path) {
  if (cgroup_path.empty() || cgroup_path.front() != '/' || goes_up(cgroup_path)) {
    return std::nullopt;
  }
  const std::string root = unescape_mountinfo(mount.root);
  std::string_view mount_root = root;
  while (!mount_root.empty() && mount_root.back() == '/') mount_root.remove_suffix(1);
  std::string_view relative = cgroup_path;
  if (!mount_root.empty()) {
    if (cgroup_path.substr(0, mount_root.size()) != mount_root) return std::nullopt;
    relative = cgroup_path.substr(mount_root.size());
    if (!relative.empty() && relative.front() != '/') return std::nullopt;
  }
  return join_path(unescape_mountinfo(mount.mount_point), relative);
}

std::vector<CgroupLine> parse_pid_cgroup(const std::string& path, std::string_view text) {
  std::vector<CgroupLine> lines;
  std::size_t line_number = 0;
  Parts text_lines(text, '\n');
  while (const auto next_line = text_lines.next()) {
    const std::string_view line = *next_line;
    ++line_number;
    if (line.empty()) continue;
    // The path is last and may itself hold ':'.
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) {
      throw Error(EINVAL, path + ": line " + std::to_string(line_number) + " " + quoted(line) +
                              " is not \"hierarchy-ID:controller-list:path\"");
    }
    lines.push_back({line.substr(0, first), line.substr(first + 1, second - first - 1),
                     line.substr(second + 1)});
  }
  return lines;
}

// `path` (absolute on the node) as seen under `root`.
std::string under_root(const std::string& root, std::string_view path) {
  std::string_view prefix = root;
  while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
  if (prefix.empty()) return std::string(path);
  return join_path(prefix, path);
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
  const std::string full = under_root(root_, path);
  std::string text;
  const int code = read_whole_file(full, text);
  // ENOTDIR too: a missing directory in a fixture or a half-torn-down cgroup
  // can leave a file where a directory was expected.
  if (code == ENOENT || code == ENOTDIR) return std::nullopt;
  if (code != 0) throw_read_error(full, code);
  text.resize(trim_trailing_space(text).size());
  return text;
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
    if (!is_filesystem(mount_point, magic) || goes_up(cgroup_path)) return std::nullopt;
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
  if (pid <= 0) throw Error(EINVAL, "invalid pid " + std::to_string(pid));

  const std::string pid_cgroup_path = under_root(root_, "/proc/" + std::to_string(pid) + "/cgroup");
  std::string pid_cgroup_text;
  if (const int code = read_whole_file(pid_cgroup_path, pid_cgroup_text); code != 0) {
    // ESRCH: the task died between open and read.
    if (code == ENOENT || code == ESRCH) {
      throw Error(ESRCH, "container process " + std::to_string(pid) +
                             " is gone: " + pid_cgroup_path + ": " + errno_text(code));
    }
    throw_read_error(pid_cgroup_path, code);
  }
  const std::vector<CgroupLine> lines = parse_pid_cgroup(pid_cgroup_path, pid_cgroup_text);
  if (try_usual_mounts) {
    if (auto found = cgroup_cpuset_at_usual_mounts(lines, pid)) return *found;
  }

  const std::string mountinfo_path = under_root(root_, "/proc/self/mountinfo");
  std::string mountinfo_text;
  if (const int code = read_whole_file(mountinfo_path, mountinfo_text); code != 0) {
    throw_read_error(mountinfo_path, code);
  }
  const std::vector<Mount> mounts = parse_mountinfo(mountinfo_path, mountinfo_text);

  // cgroup v1: the cpuset hierarchy, when mounted, is where the controller
  // lives; it cannot also be on the v2 hierarchy.
  for (const CgroupLine& line : lines) {
    if (line.hierarchy == "0" || !contains_item(line.controllers, "cpuset", ',')) continue;
    for (std::size_t i = 0; i < mounts.size(); ++i) {
      const Mount& mount = mounts[i];
      if (mount.fstype != "cgroup" || !contains_item(mount.super_options, "cpuset", ',') ||
          is_covered(mounts, i)) {
        continue;
      }
      const std::optional<std::string> dir = cgroup_dir(mount, line.path);
      if (!dir) continue;
      // Android mounts the hierarchy with "noprefix": "cpus", not "cpuset.cpus".
      const std::string prefix =
          contains_item(mount.super_options, "noprefix", ',') ? "" : "cpuset.";
      // effective_cpus appeared in Linux 3.17 with the default hierarchy's
      // cpuset rework; before it, cpus was the only mask.
      const std::string effective = join_path(*dir, prefix + "effective_cpus");
      if (auto found = read_cgroup_cpuset(effective)) return found;
      const std::string configured = join_path(*dir, prefix + "cpus");
      if (auto found = read_cgroup_cpuset(configured)) return found;
      throw Error(ENOENT, under_root(root_, effective) + ": " + errno_text(ENOENT) +
                              ", nor is there " + prefix + "cpus (the cgroup of pid " +
                              std::to_string(pid) + " is gone or not visible here)");
    }
  }

  // cgroup v2: "0::/path".  cpuset's files exist in a cgroup only when its
  // parent enables the controller for it, which cgroup.controllers lists.
  for (const CgroupLine& line : lines) {
    if (line.hierarchy != "0" || !line.controllers.empty()) continue;
    for (std::size_t i = 0; i < mounts.size(); ++i) {
      const Mount& mount = mounts[i];
      if (mount.fstype != "cgroup2" || is_covered(mounts, i)) continue;
      const std::optional<std::string> dir = cgroup_dir(mount, line.path);
      if (!dir) continue;
      const std::string controllers_file = join_path(*dir, "cgroup.controllers");
      const std::optional<std::string> controllers = read_optional(controllers_file);
      if (!controllers) {
        throw Error(ENOENT, under_root(root_, controllers_file) + ": " + errno_text(ENOENT) +
                                " (the cgroup of pid " + std::to_string(pid) +
                                " is gone or not visible here)");
      }
      if (!contains_item(*controllers, "cpuset", ' ')) return std::nullopt;
      const std::string effective = join_path(*dir, "cpuset.cpus.effective");
      if (auto found = read_cgroup_cpuset(effective)) return found;
      throw Error(ENOENT, under_root(root_, effective) + ": " + errno_text(ENOENT));
    }
  }
  return std::nullopt;
}

}  // namespace execaff
