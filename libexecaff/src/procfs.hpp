// SPDX-License-Identifier: LGPL-2.1-or-later
// The kernel's text files — procfs, sysfs, cgroupfs — read under a root
// directory so that tests run on fixture trees, and a process's cgroups
// resolved the kernel's way: /proc/<pid>/cgroup names a path per hierarchy,
// /proc/self/mountinfo says where (and whether) each hierarchy is mounted,
// for cgroup v1 and v2 alike.  NodeFacts (the container's cpuset, on the
// exec path) and `execaff audit` (every task's cgroup, a container's CPU
// weight) both read the node through this file.  Only reads; no cache.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "file_reader.hpp"

namespace execaff {

[[nodiscard]] bool is_space(char c) noexcept;
[[nodiscard]] std::string_view trim_trailing_space(std::string_view text) noexcept;
[[nodiscard]] std::string_view trim_space(std::string_view text) noexcept;

// The parts of `text` between `separator`s, in order, one at a time and
// without allocating: mountinfo on a busy node has thousands of lines, and
// this runs on the exec path.  An empty text is one empty part, as is the
// text after a trailing separator.
class Parts {
 public:
  Parts(std::string_view text, char separator) noexcept : rest_(text), separator_(separator) {}

  // The next part, or nullopt after the last one.
  [[nodiscard]] std::optional<std::string_view> next() noexcept;

 private:
  std::string_view rest_;
  char separator_;
  bool done_ = false;
};

// Whether `list` ("cpu,cpuacct", "cpuset cpu io") holds `item` whole.
[[nodiscard]] bool contains_item(std::string_view list, std::string_view item, char separator);

// `a` and `b` joined by exactly one slash, so neither root "/" nor a mount
// point "/" ever yields "//".
[[nodiscard]] std::string join_path(std::string_view a, std::string_view b);

// `path` (absolute on the node) as seen under `root` ("/" or "": itself).
[[nodiscard]] std::string under_root(std::string_view root, std::string_view path);

// The whole of `path` in `out`; 0, or the errno of the open or read that
// failed (EFBIG past kMaxKernelFileBytes; file_reader.hpp, the one reader).
// `out` is written only on success.
[[nodiscard]] int read_whole_file(const std::string& path, std::string& out);

// The file, trailing whitespace removed; nullopt when it is absent (ENOENT,
// or ENOTDIR: a half-torn-down cgroup or a fixture can leave a file where a
// directory was).  Any other failure is an Error naming the path.
[[nodiscard]] std::optional<std::string> read_optional_file(const std::string& path);

// For walks over /proc, where any entry may vanish under the reader: the
// whole file, or nullopt when it cannot be read at all (gone, absent, denied).
[[nodiscard]] std::optional<std::string> read_file_if_readable(const std::string& path);

// The names in a directory that are decimal numbers (pids, tids, IRQs),
// sorted; empty when the directory cannot be read.
[[nodiscard]] std::vector<long> numeric_entries(const std::string& dir);

// "Key:\tvalue" of a /proc/<pid>/status text, the value trimmed.
[[nodiscard]] std::optional<std::string_view> status_field(std::string_view status,
                                                           std::string_view key);

// One line of /proc/<pid>/cgroup, "hierarchy-ID:controller-list:path", as
// views into the file's text.  cgroup v2's line is "0::path".
struct CgroupLine {
  std::string_view hierarchy;
  std::string_view controllers;
  std::string_view path;
};

// Whether a cgroup path names "..": it then lies above our cgroup
// namespace's root, outside every mount we can see.
[[nodiscard]] bool cgroup_path_goes_up(std::string_view cgroup_path);

// Where a process's cgroup of one controller is, and how its files are named.
struct ControllerCgroup {
  std::string dir;  // on the node (not under the root), e.g. "/sys/fs/cgroup/cpu,cpuacct/kubepods/x"
  bool v2 = false;
  // What the controller's file names start with: "cpuset." — or "" for a
  // v1 hierarchy mounted with "noprefix" (Android: "cpus", not "cpuset.cpus").
  std::string file_prefix;
  // The directory's file `name` of the controller: file("shares") is
  // ".../cpu.shares".
  [[nodiscard]] std::string file(std::string_view name) const;
};

// A process's /proc/<pid>/cgroup, read once.  Neither copied nor moved: the
// lines are views into the text it holds.
class ProcessCgroups {
 public:
  // Error(ESRCH) naming the file when the process is gone, Error(EINVAL)
  // for a pid <= 0 or a line that is not "hierarchy-ID:controller-list:path".
  ProcessCgroups(std::string root, pid_t pid);
  ProcessCgroups(const ProcessCgroups&) = delete;
  ProcessCgroups& operator=(const ProcessCgroups&) = delete;

  [[nodiscard]] const std::vector<CgroupLine>& lines() const noexcept { return lines_; }
  [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  // The cgroup of `controller` ("cpuset", "cpu"), found through
  // /proc/self/mountinfo: the v1 hierarchy that carries it, when one is
  // mounted and shows the process's cgroup (a container's view mounts only
  // its own subtree), else the v2 hierarchy, when the cgroup's
  // cgroup.controllers lists it.  nullopt when neither; Error(ENOENT) when
  // the v2 cgroup has no cgroup.controllers (it is gone or not visible
  // here); Error naming mountinfo when it cannot be read or parsed.
  [[nodiscard]] std::optional<ControllerCgroup> controller_cgroup(std::string_view controller) const;

 private:
  std::string root_;
  pid_t pid_;
  std::string text_;
  std::vector<CgroupLine> lines_;
};

}  // namespace execaff
