// SPDX-License-Identifier: LGPL-2.1-or-later
// The real-time half of `execaff audit` (spec/audit.md, `exec_may_hang`):
// the SCHED_FIFO and SCHED_RR threads on each container's CPUs, whether RT
// throttling is off, and the containers whose next exec could land behind
// a busy one.  An exec that is not pinned joins the pod's cgroup on
// whatever CPU it was on and may be moved onto a CPU a busy-poll thread
// holds; with throttling off nothing else runs there, so the exec, or the
// cgroup attach that waits for it with every fork on the node, never ends.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "audit_processes.hpp"
#include "cpu_set.hpp"

namespace execaff::cli {

// kernel.sched_rt_runtime_us / sched_rt_period_us.  -1 runtime: real-time
// tasks may take a CPU forever (tuned's `realtime` profile sets it).
struct RtThrottling {
  bool known = false;  // both files read
  long long runtime_us = 0;
  long long period_us = 0;
  [[nodiscard]] bool off() const noexcept { return known && runtime_us < 0; }
};

// A busy-poll thread keeps its CPU: at least this share of one CPU since it
// started.
inline constexpr double kBusyShare = 0.5;

struct RealtimeThread {
  pid_t pid = 0;
  pid_t tid = 0;
  std::string comm;
  SchedPolicy policy = SchedPolicy::fifo;
  unsigned priority = 0;
  unsigned cpu = 0;  // the CPU it last ran on
  CpuSet affinity;
  double cpu_share = 0;  // of one CPU, over its life
  bool busy = false;
  bool in_container = false;  // in the container's own cgroup
};

[[nodiscard]] RtThrottling read_rt_throttling(const std::string& root_fs);

// Every user thread of SCHED_FIFO or SCHED_RR (kernel threads left out: the
// kernel's own FIFO threads sleep), with its share of a CPU.  `clock_ticks`
// is the kernel's USER_HZ; `uptime` the seconds since boot (/proc/uptime).
[[nodiscard]] std::vector<RealtimeThread> realtime_threads(
    const std::map<pid_t, Process>& processes, double uptime, long clock_ticks);

// /proc/uptime's first number under the root, 0 when it cannot be read.
[[nodiscard]] double read_uptime(const std::string& root_fs);

}  // namespace execaff::cli
