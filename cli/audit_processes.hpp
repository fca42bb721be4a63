// SPDX-License-Identifier: LGPL-2.1-or-later
// Every process on the node as `execaff audit` sees it: its name, parent,
// cpuset cgroup and each thread's affinity and scheduling, read from
// /proc/<pid>/status, /proc/<pid>/task/<tid>/{status,stat} and, for the
// cgroup, NodeFacts (procfs.hpp's one reading of /proc/<pid>/cgroup and
// mountinfo).  Read under a root directory, so tests run on fixture trees.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cpu_set.hpp"
#include "node_facts.hpp"

namespace execaff::cli {

// The scheduling class of sched_setscheduler(2), as /proc/<pid>/stat's
// field 41 numbers it.
enum class SchedPolicy { other = 0, fifo = 1, rr = 2, batch = 3, idle = 5, deadline = 6 };
[[nodiscard]] const char* to_string(SchedPolicy policy) noexcept;

// What /proc/<pid>/task/<tid>/stat says of a thread's scheduling.
struct TaskStat {
  SchedPolicy policy = SchedPolicy::other;
  unsigned rt_priority = 0;        // field 40: 1-99 for fifo and rr
  unsigned processor = 0;          // field 39: the CPU it last ran on
  unsigned long long cpu_ticks = 0;  // utime + stime (fields 14, 15), clock ticks
  unsigned long long start_ticks = 0;  // field 22: since boot, clock ticks
  bool kernel_thread = false;      // PF_KTHREAD in field 9
};

// Reads one stat line; the comm (field 2) may hold spaces and parentheses,
// so fields are counted from its last ')'.  Error(EINVAL) naming `source`
// when the line is not one.
[[nodiscard]] TaskStat parse_task_stat(std::string_view line, std::string_view source);

struct Thread {
  pid_t tid = 0;
  CpuSet affinity;                // Cpus_allowed_list
  std::optional<TaskStat> stat;   // none when the stat file cannot be read
};

struct Process {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;        // Name: the kernel's 15-character comm
  std::string cgroup_dir;  // the directory of its cpuset cgroup file, "" when unknown
  std::vector<Thread> threads;
  // The CPUs any of its threads may run on.
  [[nodiscard]] CpuSet affinity() const;
};

// Every /proc/<pid> under the root, by pid.  A task that exits during the
// walk is left out; a Cpus_allowed_list that is not a CPU list is an Error
// naming the file.
[[nodiscard]] std::map<pid_t, Process> read_processes(const NodeFacts& node,
                                                      const std::string& root_fs);

// The directory part of a path ("" when it has none).
[[nodiscard]] std::string dir_of(const std::string& file);

// Whether cgroup directory `dir` is `container_dir` or below it.
[[nodiscard]] bool within(const std::string& dir, const std::string& container_dir);

}  // namespace execaff::cli
