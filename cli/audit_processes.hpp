// SPDX-License-Identifier: LGPL-2.1-or-later
// Every process on the node as `execaff audit` sees it: its name, parent,
// cpuset cgroup and each thread's affinity, read from /proc/<pid>/status,
// /proc/<pid>/task/<tid>/status and, for the cgroup, NodeFacts (procfs.hpp's
// one reading of /proc/<pid>/cgroup and mountinfo).  Read under a root
// directory, so tests run on fixture trees.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "cpu_set.hpp"
#include "node_facts.hpp"

namespace execaff::cli {

struct Thread {
  pid_t tid = 0;
  CpuSet affinity;  // Cpus_allowed_list
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
