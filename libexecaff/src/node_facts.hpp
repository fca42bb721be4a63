// SPDX-License-Identifier: LGPL-2.1-or-later
// The node's CPU facts, read from sysfs, procfs and cgroupfs under a root
// directory so that tests run on fixture trees (procfs.hpp reads the files
// and resolves a process's cgroups).  Read on every call, never
// cached: the node can change between two execs (seed 000's lesson).  No
// syscall beyond reading files.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cpu_set.hpp"
#include "procfs.hpp"

namespace execaff {

// Where a set of isolated CPUs came from, for explanations.
struct IsolatedCpus {
  CpuSet cpus;          // union of every source below
  std::string sources;  // e.g. "isolated=2-3 nohz_full=2-3", "" when none
};

// A cpuset read from a cgroup, and the file it came from.
struct CgroupCpuset {
  CpuSet cpus;
  std::string file;  // e.g. "/sys/fs/cgroup/cpuset/kubepods/pod1/ctr/cpuset.effective_cpus"
};

class NodeFacts {
 public:
  explicit NodeFacts(std::string root = "/");

  // /sys/devices/system/cpu/online and .../possible.
  [[nodiscard]] CpuSet online_cpus() const;
  [[nodiscard]] CpuSet possible_cpus() const;

  // /sys/devices/system/cpu/isolated, /sys/devices/system/cpu/nohz_full
  // (absent or "(null)" counts as empty), and from /proc/cmdline the CPU
  // lists of isolcpus= (its flags such as "domain,managed_irq," skipped) and
  // nohz_full=.  The cmdline lists count only when the sysfs file is absent,
  // since sysfs reflects what the kernel really did.
  [[nodiscard]] IsolatedCpus isolated_cpus() const;

  // .../cpu<N>/topology/thread_siblings_list; {cpu} when the file is absent.
  [[nodiscard]] CpuSet thread_siblings(unsigned cpu) const;

  // The effective cpuset of the cgroup that pid is in, from /proc/<pid>/cgroup
  // and the cgroup mounts (the usual ones first, else those that
  // /proc/self/mountinfo lists): cgroup v1 (the cpuset
  // hierarchy's cpuset.effective_cpus, else cpuset.cpus) or v2
  // (cpuset.cpus.effective).  nullopt when no cpuset controller is mounted
  // or the pid has no cpuset cgroup; Error(ENOENT/ESRCH) when the pid is gone.
  [[nodiscard]] std::optional<CgroupCpuset> cgroup_cpuset_of_pid(pid_t pid) const;
  // The same through mountinfo alone: what the usual-mount shortcut of
  // cgroup_cpuset_of_pid must agree with (tests/unit/test_node_facts.cpp).
  [[nodiscard]] std::optional<CgroupCpuset> cgroup_cpuset_of_pid_by_mountinfo(pid_t pid) const;

  [[nodiscard]] const std::string& root() const noexcept { return root_; }

 private:
  // root_ + path, read whole, trailing whitespace removed; nullopt if absent.
  [[nodiscard]] std::optional<std::string> read_optional(const std::string& path) const;
  // A cgroup cpuset file (root_-relative); nullopt if absent.
  [[nodiscard]] std::optional<CgroupCpuset> read_cgroup_cpuset(const std::string& file) const;
  [[nodiscard]] std::optional<CgroupCpuset> find_cgroup_cpuset(pid_t pid, bool try_usual_mounts) const;
  [[nodiscard]] std::optional<std::optional<CgroupCpuset>> cgroup_cpuset_at_usual_mounts(
      const std::vector<CgroupLine>& lines, pid_t pid) const;
  std::string root_;
};

}  // namespace execaff
